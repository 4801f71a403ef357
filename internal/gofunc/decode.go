package gofunc

import (
	"debug/elf"
	"encoding/binary"
	"fmt"

	"golang.org/x/arch/arm64/arm64asm"
	"golang.org/x/arch/x86/x86asm"
)

// decoded is what decode finds in a function's code.
type decoded struct {
	// returns are the addresses of RET instructions.
	returns []uint64
	// afterCheck is the address after the stack check's conditional
	// branch when the function starts with one, else the entry.
	afterCheck uint64
}

// decode walks a Go function's instructions from its entry. Go puts no
// data in functions' code, so a linear sweep sees every instruction; the
// INT3 (amd64) or zero (arm64) padding after the last one ends the sweep.
func decode(m elf.Machine, code []byte, entry uint64) (decoded, error) {
	switch m {
	case elf.EM_X86_64:
		return decodeAMD64(code, entry)
	case elf.EM_AARCH64:
		return decodeARM64(code, entry)
	}
	return decoded{}, fmt.Errorf("decode: %w (%v)", ErrUnsupportedArch, m)
}

// decodeAMD64: the stack check is
//
//	CMPQ SP, 16(R14)          (or LEAQ -N(SP), R12; CMPQ R12, 16(R14))
//	JLS  morestack            (JBE)
//
// within the first few instructions; the probe goes after the JBE.
func decodeAMD64(code []byte, entry uint64) (decoded, error) {
	d := decoded{afterCheck: entry}
	for pc := 0; pc < len(code); {
		inst, err := x86asm.Decode(code[pc:], 64)
		if err != nil || inst.Len == 0 {
			if code[pc] == 0xcc {
				break
			}
			return d, fmt.Errorf("decode at %#x: %v", entry+uint64(pc), err)
		}
		switch inst.Op {
		case x86asm.RET:
			d.returns = append(d.returns, entry+uint64(pc))
		case x86asm.JBE, x86asm.JB:
			if d.afterCheck == entry && pc < 32 {
				d.afterCheck = entry + uint64(pc+inst.Len)
			}
		case x86asm.INT:
			if inst.Len == 1 && len(d.returns) > 0 {
				// Padding after the last RET: the sweep is done.
				return d, nil
			}
		}
		pc += inst.Len
	}
	return d, nil
}

// decodeARM64: the stack check is
//
//	MOVD 16(g), R16; CMP R16, RSP; BLS morestack
//
// (or with an extra SUB for large frames).
func decodeARM64(code []byte, entry uint64) (decoded, error) {
	d := decoded{afterCheck: entry}
	for pc := 0; pc+4 <= len(code); pc += 4 {
		word := binary.LittleEndian.Uint32(code[pc:])
		if word == 0 {
			continue
		}
		inst, err := arm64asm.Decode(code[pc:])
		if err != nil {
			continue
		}
		switch inst.Op {
		case arm64asm.RET:
			d.returns = append(d.returns, entry+uint64(pc))
		case arm64asm.B:
			if c, ok := inst.Args[0].(arm64asm.Cond); ok && c.String() == "LS" && d.afterCheck == entry && pc < 32 {
				d.afterCheck = entry + uint64(pc+4)
			}
		}
	}
	return d, nil
}
