package unwind

import (
	"errors"

	"github.com/go-delve/delve/pkg/dwarf/frame"
)

// delve's interpreter, which Unwind uses, reads two things of arm64 CFI
// otherwise than the table compiler and the ABI:
//
//   - DW_CFA_AARCH64_negate_ra_state (code built with pointer
//     authentication, -mbranch-protection, signs its return address
//     before saving it) is an error to it. Both walks keep only the
//     address bits of a return address (ARM64AddressBits), so the
//     operation changes no rule: it is dropped.
//   - DW_CFA_restore of a register the CIE gives no rule makes it
//     undefined; the ABI means "the caller's value", and for x30, the
//     return address column, "in the link register" (an epilogue after
//     reloading x30). It becomes DW_CFA_same_value.
//
// fixARM64Programs rewrites the programs of fdes so, in copies.

var errUnknownCFAOp = errors.New("unknown CFA operation")

// fixARM64Programs rewrites the CFA programs of fdes and of their CIEs.
// A program it cannot decode (an unknown operation, DW_CFA_set_loc,
// truncated operands) is kept as it is from there on.
func fixARM64Programs(fdes []*frame.FrameDescriptionEntry) {
	ruled := map[*frame.CommonInformationEntry]map[uint64]frame.DWRule{}
	for _, fde := range fdes {
		cie := fde.CIE
		if cie == nil {
			continue
		}
		rules, ok := ruled[cie]
		if !ok {
			cie.InitialInstructions = fixARM64Program(cie.InitialInstructions, nil)
			rules = cieRules(cie)
			ruled[cie] = rules
		}
		fde.Instructions = fixARM64Program(fde.Instructions, rules)
	}
}

// cieRules returns the registers the CIE's initial instructions give a
// rule (none when delve cannot run them).
func cieRules(cie *frame.CommonInformationEntry) (rules map[uint64]frame.DWRule) {
	defer func() {
		if recover() != nil {
			rules = nil
		}
	}()
	init, err := (&frame.FrameDescriptionEntry{CIE: cie}).EstablishFrame(0)
	if err != nil {
		return nil
	}
	return init.Regs
}

// fixARM64Program returns code without DW_CFA_AARCH64_negate_ra_state and
// with a restore of a register not in rules as DW_CFA_same_value (rules
// nil: a CIE's program, whose restores are errors anyway): code itself
// when nothing changes.
func fixARM64Program(code []byte, rules map[uint64]frame.DWRule) []byte {
	var out []byte // nil until something changes
	copied := 0    // code[:copied] is in out
	in := &operands{b: code}
	for !in.done() {
		at := in.pos
		op, _ := in.byte()
		var repl []byte
		switch {
		case op == cfaAArch64NegateRAState:
			repl = []byte{}
		case rules != nil && (op&cfaHighMask == cfaRestore || op == cfaRestoreExtended):
			reg := uint64(op & cfaLowMask)
			if op == cfaRestoreExtended {
				var err error
				if reg, err = in.uleb(); err != nil {
					return join(out, code, copied)
				}
			}
			if _, ok := rules[reg]; !ok {
				repl = appendULEB([]byte{cfaSameValue}, reg)
			}
		default:
			if skipOperands(in, op) != nil {
				return join(out, code, copied)
			}
		}
		if repl != nil {
			if out == nil {
				out = make([]byte, 0, len(code)+8)
			}
			out = append(append(out, code[copied:at]...), repl...)
			copied = in.pos
		}
	}
	return join(out, code, copied)
}

// join returns out with the rest of code from copied, or code when out is
// nil.
func join(out, code []byte, copied int) []byte {
	if out == nil {
		return code
	}
	return append(out, code[copied:]...)
}

func appendULEB(b []byte, v uint64) []byte {
	for v >= 0x80 {
		b = append(b, byte(v)|0x80)
		v >>= 7
	}
	return append(b, byte(v))
}

// skipOperands moves in past the operands of CFA operation op; an
// operation it does not know is an error.
func skipOperands(in *operands, op byte) error {
	var err error
	ulebs := func(n int) {
		for range n {
			if err == nil {
				_, err = in.uleb()
			}
		}
	}
	switch op & cfaHighMask {
	case cfaAdvanceLoc, cfaRestore:
		return nil
	case cfaOffset:
		ulebs(1)
		return err
	}
	switch op {
	case cfaNop, cfaRememberState, cfaRestoreState:
	case cfaAdvanceLoc1, cfaAdvanceLoc2, cfaAdvanceLoc4:
		_, err = in.fixed(1<<(op-cfaAdvanceLoc1), false)
	case cfaRestoreExtended, cfaUndefined, cfaSameValue, cfaDefCFARegister, cfaDefCFAOffset, cfaGNUArgsSize:
		ulebs(1)
	case cfaOffsetExtended, cfaRegister, cfaDefCFA, cfaValOffset, cfaGNUNegOffsetExt:
		ulebs(2)
	case cfaOffsetExtendedSf, cfaDefCFASf, cfaValOffsetSf:
		if ulebs(1); err == nil {
			_, err = in.sleb()
		}
	case cfaDefCFAOffsetSf:
		_, err = in.sleb()
	case cfaDefCFAExpression:
		_, err = in.block()
	case cfaExpression, cfaValExpression:
		if ulebs(1); err == nil {
			_, err = in.block()
		}
	default:
		return errUnknownCFAOp
	}
	return err
}
