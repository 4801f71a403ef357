package insn

import (
	"debug/elf"
	"errors"
	"fmt"

	"golang.org/x/arch/x86/x86asm"
)

// ErrUnsupportedMachine is wrapped by Boundary for a machine whose
// instructions it cannot decode.
var ErrUnsupportedMachine = errors.New("instruction decoding not supported for this machine")

// MaxX86Len is the longest x86-64 instruction, in bytes.
const MaxX86Len = 15

// DecodeX86 decodes the x86-64 instruction at the start of code. An
// instruction longer than code (cut off by the end of the function or of
// what was read) is an error, never a read past code.
func DecodeX86(code []byte) (x86asm.Inst, error) {
	// x86asm reads past the end of its input on a truncated VEX or EVEX
	// instruction (x/arch v0.28.0 decodeAVX: index out of range), so it
	// gets a copy of the next bytes padded with INT3, longer than any
	// instruction; an instruction reaching into the padding is truncated.
	var win [2 * MaxX86Len]byte
	n := copy(win[:], code)
	for i := n; i < len(win); i++ {
		win[i] = 0xcc
	}
	inst, err := x86asm.Decode(win[:], 64)
	if err != nil {
		return inst, err
	}
	if inst.Len == 0 || inst.Len > n {
		return inst, fmt.Errorf("truncated instruction")
	}
	return inst, nil
}

// Boundary reports whether off is the start of an instruction of the
// function whose code starts at code[0]. When it is not, prev and next are
// the boundaries around off (prev < off < next). For x86-64, code must
// hold the function's bytes up to at least off plus MaxX86Len (fewer at
// the function's end); an instruction before off that does not decode is
// an error.
func Boundary(m elf.Machine, code []byte, off uint64) (ok bool, prev, next uint64, err error) {
	switch m {
	case elf.EM_X86_64:
		pc := uint64(0)
		for pc < off {
			if pc >= uint64(len(code)) {
				return false, 0, 0, fmt.Errorf("offset %d is past the %d bytes of code read", off, len(code))
			}
			inst, err := DecodeX86(code[pc:])
			if err != nil {
				return false, 0, 0, fmt.Errorf("decode at offset %d: %w", pc, err)
			}
			prev = pc
			pc += uint64(inst.Len)
		}
		if pc == off {
			return true, 0, 0, nil
		}
		return false, prev, pc, nil
	case elf.EM_AARCH64:
		if off%4 == 0 {
			return true, 0, 0, nil
		}
		return false, off &^ 3, off&^3 + 4, nil
	}
	return false, 0, 0, fmt.Errorf("%v: %w", m, ErrUnsupportedMachine)
}
