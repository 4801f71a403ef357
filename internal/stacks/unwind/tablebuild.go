package unwind

import (
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"

	"github.com/go-delve/delve/pkg/dwarf/frame"
)

// NewTable compiles the CFI of the ELF object r (.eh_frame and
// .debug_frame, not a separate debug file's) into a Table. It fails for a file that is not ELF (an
// *elfnotes.FormatError), a machine other than x86-64 and little-endian
// arm64, a malformed CFI section, addresses beyond 4 GiB, and more than
// MaxTableRows rows (ErrTableTooLarge). CFI it cannot express gives
// KindUnsupported rows, not an error.
func NewTable(r io.ReaderAt) (*Table, error) {
	c := loadCFI(r, nil)
	if c.err != nil {
		return nil, c.err
	}
	return c.table()
}

// table compiles c into a Table once.
func (c *cfi) table() (*Table, error) {
	c.tableOnce.Do(func() {
		if c.err != nil && len(c.fdes) == 0 {
			c.tableErr = c.err
			return
		}
		if c.bigEndian {
			c.tableErr = errors.New("big-endian CFI is not supported")
			return
		}
		c.tab, c.tableErr = compileTable(c.fdes, c.machine)
		if c.tab != nil {
			c.tab.loads = c.loads
		}
	})
	return c.tab, c.tableErr
}

// maxRememberDepth bounds DW_CFA_remember_state nesting; compilers nest
// one or two.
const maxRememberDepth = 64

// CFA program operations (DWARF 5 section 7.24) the compiler decodes.
const (
	cfaAdvanceLoc       = 0x40 // high two bits; delta in the low six
	cfaOffset           = 0x80 // high two bits; register in the low six
	cfaRestore          = 0xc0 // high two bits; register in the low six
	cfaNop              = 0x00
	cfaSetLoc           = 0x01
	cfaAdvanceLoc1      = 0x02
	cfaAdvanceLoc2      = 0x03
	cfaAdvanceLoc4      = 0x04
	cfaOffsetExtended   = 0x05
	cfaRestoreExtended  = 0x06
	cfaUndefined        = 0x07
	cfaSameValue        = 0x08
	cfaRegister         = 0x09
	cfaRememberState    = 0x0a
	cfaRestoreState     = 0x0b
	cfaDefCFA           = 0x0c
	cfaDefCFARegister   = 0x0d
	cfaDefCFAOffset     = 0x0e
	cfaDefCFAExpression = 0x0f
	cfaExpression       = 0x10
	cfaOffsetExtendedSf = 0x11
	cfaDefCFASf         = 0x12
	cfaDefCFAOffsetSf   = 0x13
	cfaValOffset        = 0x14
	cfaValOffsetSf      = 0x15
	cfaValExpression    = 0x16
	cfaGNUArgsSize      = 0x2e
	cfaGNUNegOffsetExt  = 0x2f

	cfaAArch64NegateRAState = 0x2d // DW_CFA_GNU_window_save elsewhere
	cfaHighMask             = 0xc0
	cfaLowMask              = 0x3f
)

// Kinds of colRule.
const (
	cfaRuleNone uint8 = iota // no rule: the initial one, or same value
	cfaRuleUndefined
	cfaRuleSame
	cfaRuleOffset
	cfaRuleRegister
	cfaRuleOther // val_offset, expression, val_expression
)

// colRule is the rule of one tracked register column.
type colRule struct {
	kind uint8
	off  int64
	reg  uint64
}

// cfaState is the row a CFA program has built so far, for the columns a
// Table keeps: the CFA, the frame pointer and the return address.
type cfaState struct {
	cfaExpr []byte // nil: CFA = cfaReg + cfaOff
	cfaReg  uint64
	cfaOff  int64
	fp, ra  colRule
	bad     bool // an operation a Table cannot follow: the rest is KindUnsupported
}

// tableBuilder compiles FDEs into rows.
type tableBuilder struct {
	a    arch
	rows []Row
	err  error
}

func compileTable(fdes frame.FrameDescriptionEntries, m elf.Machine) (*Table, error) {
	a, err := archOf(m)
	if err != nil {
		return nil, err
	}
	b := &tableBuilder{a: a, rows: make([]Row, 0, min(4*len(fdes), MaxTableRows))}
	initial := map[*frame.CommonInformationEntry]cfaState{}
	var end uint64 // of the FDEs so far: an FDE overlapping an earlier one starts there
	for _, fde := range fdes {
		lo, hi := max(fde.Begin(), end), fde.End()
		if lo >= hi {
			continue
		}
		init, ok := initial[fde.CIE]
		if !ok {
			init = b.run(cfaState{}, cfaState{}, fde.CIE, fde.CIE.InitialInstructions, 0, 0, 0)
			initial[fde.CIE] = init
		}
		b.run(init, init, fde.CIE, fde.Instructions, fde.Begin(), lo, hi)
		b.add(hi, Row{Kind: KindNone})
		end = hi
		if b.err != nil {
			return nil, b.err
		}
	}
	return &Table{Rows: b.rows}, nil
}

// run executes a CFA program from state st, adding a row for each range
// of [lo, hi) it describes (none when hi is 0: a CIE's initial
// instructions), and returns the final state.
func (b *tableBuilder) run(st, initial cfaState, cie *frame.CommonInformationEntry, code []byte, loc, lo, hi uint64) cfaState {
	in := &operands{b: code}
	var remembered []cfaState
	col := func(reg uint64) *colRule {
		switch reg {
		case b.a.fp:
			return &st.fp
		case cie.ReturnAddressRegister:
			return &st.ra
		}
		return nil
	}
	restore := func(reg uint64) {
		switch reg {
		case b.a.fp:
			st.fp = initial.fp
		case cie.ReturnAddressRegister:
			st.ra = initial.ra
		}
	}
	emit := func(to uint64) {
		if from := max(loc, lo); from < min(to, hi) {
			b.add(from, b.row(&st))
		}
	}
	for !in.done() && !st.bad {
		op, _ := in.byte()
		var err error
		var reg, u uint64
		var s int64
		adv := uint64(0)
		advance := false
		switch op & cfaHighMask {
		case cfaAdvanceLoc:
			adv, advance = uint64(op&cfaLowMask), true
		case cfaOffset:
			if u, err = in.uleb(); err == nil {
				setRule(col(uint64(op&cfaLowMask)), colRule{kind: cfaRuleOffset, off: int64(u) * cie.DataAlignmentFactor})
			}
		case cfaRestore:
			restore(uint64(op & cfaLowMask))
		default:
			switch op {
			case cfaNop:
			case cfaAdvanceLoc1, cfaAdvanceLoc2, cfaAdvanceLoc4:
				adv, err = in.fixed(1<<(op-cfaAdvanceLoc1), false)
				advance = true
			case cfaOffsetExtended, cfaValOffset:
				if reg, err = in.uleb(); err == nil {
					if u, err = in.uleb(); err == nil {
						setRule(col(reg), offsetRule(op == cfaValOffset, int64(u)*cie.DataAlignmentFactor))
					}
				}
			case cfaOffsetExtendedSf, cfaValOffsetSf:
				if reg, err = in.uleb(); err == nil {
					if s, err = in.sleb(); err == nil {
						setRule(col(reg), offsetRule(op == cfaValOffsetSf, s*cie.DataAlignmentFactor))
					}
				}
			case cfaGNUNegOffsetExt:
				if reg, err = in.uleb(); err == nil {
					if u, err = in.uleb(); err == nil {
						setRule(col(reg), colRule{kind: cfaRuleOffset, off: -int64(u) * cie.DataAlignmentFactor})
					}
				}
			case cfaRestoreExtended:
				if reg, err = in.uleb(); err == nil {
					restore(reg)
				}
			case cfaUndefined, cfaSameValue:
				if reg, err = in.uleb(); err == nil {
					k := uint8(cfaRuleUndefined)
					if op == cfaSameValue {
						k = cfaRuleSame
					}
					setRule(col(reg), colRule{kind: k})
				}
			case cfaRegister:
				if reg, err = in.uleb(); err == nil {
					if u, err = in.uleb(); err == nil {
						setRule(col(reg), colRule{kind: cfaRuleRegister, reg: u})
					}
				}
			case cfaExpression, cfaValExpression:
				if reg, err = in.uleb(); err == nil {
					if _, err = in.block(); err == nil {
						setRule(col(reg), colRule{kind: cfaRuleOther})
					}
				}
			case cfaRememberState:
				if len(remembered) == maxRememberDepth {
					st.bad = true
					break
				}
				remembered = append(remembered, st)
			case cfaRestoreState:
				if len(remembered) == 0 {
					st.bad = true
					break
				}
				st = remembered[len(remembered)-1]
				remembered = remembered[:len(remembered)-1]
			case cfaDefCFA:
				if reg, err = in.uleb(); err == nil {
					if u, err = in.uleb(); err == nil {
						st.cfaExpr, st.cfaReg, st.cfaOff = nil, reg, int64(u)
					}
				}
			case cfaDefCFASf:
				if reg, err = in.uleb(); err == nil {
					if s, err = in.sleb(); err == nil {
						st.cfaExpr, st.cfaReg, st.cfaOff = nil, reg, s*cie.DataAlignmentFactor
					}
				}
			case cfaDefCFARegister:
				// Valid only on a register rule (DWARF 5 6.4.2.2);
				// an expression stays, as delve's interpreter keeps it.
				if reg, err = in.uleb(); err == nil && st.cfaExpr == nil {
					st.cfaReg = reg
				}
			case cfaDefCFAOffset:
				if u, err = in.uleb(); err == nil && st.cfaExpr == nil {
					st.cfaOff = int64(u)
				}
			case cfaDefCFAOffsetSf:
				if s, err = in.sleb(); err == nil && st.cfaExpr == nil {
					st.cfaOff = s * cie.DataAlignmentFactor
				}
			case cfaDefCFAExpression:
				var e []byte
				if e, err = in.block(); err == nil {
					st.cfaExpr = e
					if len(e) == 0 {
						st.bad = true
					}
				}
			case cfaGNUArgsSize:
				_, err = in.uleb()
			case cfaAArch64NegateRAState:
				// arm64: the return address saved from here on is
				// signed (pointer authentication). The walks keep
				// its address bits (ARM64AddressBits), so the row is
				// the same. Elsewhere it is SPARC's window save.
				if b.a.m != elf.EM_AARCH64 {
					st.bad = true
				}
			default:
				// DW_CFA_set_loc (its operand's encoding is the
				// FDE's, which the parser does not give) and vendor
				// operations.
				st.bad = true
			}
		}
		if err != nil {
			st.bad = true
		}
		if advance && !st.bad {
			next := loc + adv*cie.CodeAlignmentFactor
			if next < loc {
				next = math.MaxUint64
			}
			emit(next)
			loc = next
		}
	}
	if hi != 0 {
		emit(hi)
	}
	return st
}

// setRule sets c, when it is a tracked column, to r.
func setRule(c *colRule, r colRule) {
	if c != nil {
		*c = r
	}
}

func offsetRule(val bool, off int64) colRule {
	if val {
		return colRule{kind: cfaRuleOther, off: off}
	}
	return colRule{kind: cfaRuleOffset, off: off}
}

// pltExpr is the CFA expression binutils writes for x86-64 PLT entries
// of 16 bytes: rsp + off + ((rip & 15) >= K) << 3, the 8 bytes the
// entry's push adds after its K-th byte. pltExpr is the part after
// DW_OP_breg7's offset; pltArg indexes K's DW_OP_lit.
var pltExpr = []byte{0x80, 0x00, 0x3f, 0x1a, 0x30, 0x2a, 0x33, 0x24, 0x22} // breg16 0; lit15; and; litK; ge; lit3; shl; plus

const pltArg = 4

// plt reports whether e is the PLT expression and returns its offset and K.
func plt(e []byte) (off int64, k uint8, ok bool) {
	if len(e) < 2 || e[0] != opBreg0+7 {
		return 0, 0, false
	}
	in := &operands{b: e[1:]}
	off, err := in.sleb()
	rest := e[1+in.pos:]
	if err != nil || len(rest) != len(pltExpr) {
		return 0, 0, false
	}
	for i, b := range pltExpr {
		if i == pltArg {
			if rest[i] < opLit0 || rest[i] > opLit31 {
				return 0, 0, false
			}
			continue
		}
		if rest[i] != b {
			return 0, 0, false
		}
	}
	return off, rest[pltArg] - opLit0, true
}

// row turns a state into a Row (without PC).
func (b *tableBuilder) row(st *cfaState) Row {
	unsupported := Row{Kind: KindUnsupported}
	if st.bad {
		return unsupported
	}
	var r Row
	switch st.ra.kind {
	case cfaRuleUndefined:
		return Row{Kind: KindEnd}
	case cfaRuleNone, cfaRuleSame:
		if b.a.lr == ^uint64(0) {
			// x86-64 has no link register: nothing gives the
			// return address.
			return Row{Kind: KindEnd}
		}
		r.RA = RAInLR
	case cfaRuleRegister:
		if st.ra.reg != b.a.lr {
			return unsupported
		}
		r.RA = RAInLR
	case cfaRuleOffset:
		if st.ra.off != int64(int16(st.ra.off)) {
			return unsupported
		}
		r.RA, r.RAOffset = RAAtCFA, int16(st.ra.off)
	default:
		return unsupported
	}
	switch {
	case st.cfaExpr != nil:
		off, k, ok := plt(st.cfaExpr)
		if !ok || b.a.lr != ^uint64(0) || off != int64(int32(off)) {
			return unsupported
		}
		r.Kind, r.CFAOffset, r.Arg = KindPLT, int32(off), k
	case st.cfaReg == b.a.sp:
		r.Kind = KindSP
	case st.cfaReg == b.a.fp:
		r.Kind = KindFP
	default:
		return unsupported
	}
	if st.cfaExpr == nil {
		if st.cfaOff != int64(int32(st.cfaOff)) {
			return unsupported
		}
		r.CFAOffset = int32(st.cfaOff)
	}
	switch st.fp.kind {
	case cfaRuleNone, cfaRuleSame:
		r.FP = FPSame
	case cfaRuleOffset:
		if st.fp.off == int64(int16(st.fp.off)) {
			r.FP, r.FPOffset = FPAtCFA, int16(st.fp.off)
		} else {
			r.FP = FPUndefined
		}
	default:
		// Undefined, or a rule rows do not keep (register,
		// val_offset, expression): the caller's frame pointer is
		// unknown, which only a KindFP row needs.
		r.FP = FPUndefined
	}
	return r
}

// add appends a row starting at pc, replacing one that starts there too
// and dropping it when it repeats the row before.
func (b *tableBuilder) add(pc uint64, r Row) {
	if b.err != nil {
		return
	}
	if pc > math.MaxUint32 {
		b.err = fmt.Errorf("CFI for address %#x: tables hold 32-bit addresses", pc)
		return
	}
	r.PC = uint32(pc)
	n := len(b.rows)
	if n > 0 && b.rows[n-1].PC == r.PC {
		n--
		b.rows = b.rows[:n]
	}
	if n > 0 && sameRule(b.rows[n-1], r) {
		return
	}
	if n == MaxTableRows {
		b.err = fmt.Errorf("more than %d rows: %w", MaxTableRows, ErrTableTooLarge)
		return
	}
	b.rows = append(b.rows, r)
}

// sameRule reports whether a and b unwind alike.
func sameRule(a, b Row) bool {
	a.PC = b.PC
	return a == b
}

// compileCFI parses a CFI section as parseCFI does and compiles it: the
// fuzz target's way in.
func compileCFI(data []byte, ehFrameAddr uint64, m elf.Machine) (*Table, error) {
	fdes, err := parseCFI(data, binary.LittleEndian, ehFrameAddr)
	if err != nil {
		return nil, err
	}
	return compileTable(frame.FrameDescriptionEntries(nil).Append(fdes), m)
}
