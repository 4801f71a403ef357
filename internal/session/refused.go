package session

import (
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"

	"golang.org/x/arch/x86/x86asm"

	"github.com/usdtkit/usdtkit/internal/insn"
)

// InsnError is a site whose first instruction the kernel refuses to
// probe, found before the kernel is asked: a process that maps the file
// only later would otherwise lose the site without a word (the kernel
// installs the probe then and ignores its refusal).
type InsnError struct {
	// Insn is the instruction as Intel syntax prints it.
	Insn string
	// Reason says what the kernel refuses in it.
	Reason string
}

func (e *InsnError) Error() string { return fmt.Sprintf("%s (%s)", e.Reason, e.Insn) }

// precheck returns the sites of obj whose instruction the kernel is
// known to refuse, in the order of obj.Offsets. Only x86-64 objects are
// checked, for the one rule that holds on every kernel since uprobes came
// (arch/x86/kernel/uprobes.c, is_prefix_bad): no lock prefix, which
// single-stepping a copy of the instruction out of line would break. A
// site whose bytes cannot be read or decoded is left to the kernel.
func precheck(obj *Object) ([]Refusal, error) {
	f, err := os.Open(obj.Path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var hdr [20]byte
	if _, err := f.ReadAt(hdr[:], 0); err != nil {
		return nil, nil
	}
	if string(hdr[:4]) != elf.ELFMAG || elf.Class(hdr[elf.EI_CLASS]) != elf.ELFCLASS64 ||
		elf.Data(hdr[elf.EI_DATA]) != elf.ELFDATA2LSB ||
		elf.Machine(binary.LittleEndian.Uint16(hdr[18:])) != elf.EM_X86_64 {
		return nil, nil
	}
	var refused []Refusal
	var code [insn.MaxX86Len]byte
	for i, off := range obj.Offsets {
		if int64(off) < 0 {
			continue
		}
		n, err := f.ReadAt(code[:], int64(off))
		if err != nil && !errors.Is(err, io.EOF) {
			continue
		}
		if e := refusedX86(code[:n]); e != nil {
			refused = append(refused, Refusal{Index: i, Offset: off, Err: e})
		}
	}
	return refused, nil
}

// refusedX86 returns why the kernel refuses to probe the x86-64
// instruction at the start of code, or nil when it may accept it.
func refusedX86(code []byte) *InsnError {
	inst, err := insn.DecodeX86(code)
	if err != nil {
		return nil
	}
	// The legacy prefixes come first, in any order.
	for _, b := range code[:inst.Len] {
		switch b {
		case 0xf0:
			return &InsnError{Insn: x86asm.IntelSyntax(inst, 0, nil), Reason: "a lock-prefixed instruction, which uprobes cannot single-step"}
		case 0xf2, 0xf3, 0x2e, 0x36, 0x3e, 0x26, 0x64, 0x65, 0x66, 0x67:
		default:
			return nil
		}
	}
	return nil
}
