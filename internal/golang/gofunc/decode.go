package gofunc

import (
	"debug/elf"
	"encoding/binary"
	"fmt"

	"golang.org/x/arch/arm64/arm64asm"
	"golang.org/x/arch/x86/x86asm"

	"github.com/usdtkit/usdtkit/internal/elf/insn"
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

// decodeAMD64: the stack check compares a stack pointer with
// g.stackguard0 (16 bytes into runtime.g, g in R14; ABI0 assembly loads g
// into another register first) and branches to morestack when it is below
// or equal (cmd/internal/obj/x86 stacksplit):
//
//	CMPQ SP, 16(R14)                               small frames
//	LEAQ -N(SP), R12; CMPQ R12, 16(R14)            frames up to StackBig
//	MOVQ SP, R12; SUBQ $N, R12; JCS morestack;
//	CMPQ R12, 16(R14)                              larger frames
//	JLS  morestack                                 (JBE)
//
// within the first few instructions; the probe goes after the JBE that
// follows the comparison with the guard, never after the JCS of the
// underflow test, and a leaf function's own early JBE is no stack check.
func decodeAMD64(code []byte, entry uint64) (decoded, error) {
	d := decoded{afterCheck: entry}
	guardCmp := false // the previous instruction compared with the guard
	for pc := 0; pc < len(code); {
		inst, err := insn.DecodeX86(code[pc:])
		if err != nil {
			if code[pc] == 0xcc {
				break
			}
			return d, fmt.Errorf("decode at %#x: %v", entry+uint64(pc), err)
		}
		prevGuard := guardCmp
		guardCmp = false
		switch inst.Op {
		case x86asm.RET:
			d.returns = append(d.returns, entry+uint64(pc))
		case x86asm.CMP:
			guardCmp = pc < stackCheckWindow && isStackGuard(inst.Args[1])
		case x86asm.JBE:
			// A stack check comes before any return.
			if prevGuard && d.afterCheck == entry && len(d.returns) == 0 {
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

// stackCheckWindow bounds where the stack check's instructions start: the
// longest amd64 form (MOVQ, SUBQ imm32, JCS rel32, CMPQ) is 20 bytes, the
// longest arm64 one (MOVD, up to four MOVZ/MOVK of the frame size, SUBS,
// BLO, CMP) 8 instructions.
const stackCheckWindow = 32

// isStackGuard reports whether a is g.stackguard0: 16(reg), g.stack.lo
// and g.stack.hi being the two words before it.
func isStackGuard(a x86asm.Arg) bool {
	m, ok := a.(x86asm.Mem)
	return ok && m.Disp == 16 && m.Base != 0 && m.Index == 0 && m.Segment == 0
}

// decodeARM64: the stack check loads g.stackguard0 (16 bytes into
// runtime.g, g in R28) and branches when SP, less the frame, is lower or
// the same (cmd/internal/obj/arm64 stacksplit):
//
//	MOVD 16(g), R16; [SUB(S) $N, RSP, R17; [BLO morestack;]] CMP; BLS morestack
//
// The probe goes after the BLS that follows the load of the guard; a leaf
// function's own early BLS is no stack check.
func decodeARM64(code []byte, entry uint64) (decoded, error) {
	d := decoded{afterCheck: entry}
	guardLoad := false
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
		case arm64asm.LDR:
			if pc < stackCheckWindow && inst.Args[1] != nil && inst.Args[1].String() == "[X28,#16]" {
				guardLoad = true
			}
		case arm64asm.B:
			if c, ok := inst.Args[0].(arm64asm.Cond); ok && c.String() == "LS" && guardLoad && d.afterCheck == entry && len(d.returns) == 0 && pc < 2*stackCheckWindow {
				d.afterCheck = entry + uint64(pc+4)
			}
		}
	}
	return d, nil
}
