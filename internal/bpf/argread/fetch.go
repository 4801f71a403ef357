package argread

import (
	"debug/elf"
	"fmt"

	"github.com/cilium/ebpf/asm"
)

// Registers of the code EmitFetch returns: the context in R6, the base of
// the argument slots in R7, the fault bits in R9.
const (
	FetchCtx    = rCtx
	FetchBase   = rRec
	FetchFaults = rFaults
)

// EmitFetch returns the instructions that store argument f, extended to 64
// bits, at FetchBase+slot: R6 must hold the
// context (pt_regs) and R7 a pointer to at least slot+8 writable bytes; a
// failed read stores 0 and sets bit in R9, which the caller clears first.
// prefix makes the labels of the code unique within the caller's program.
// R0..R5 are clobbered. Generators of programs (btgen, usdtlink) read
// every argument with it.
func EmitFetch(m elf.Machine, f *Fetch, slot int16, bit int, prefix string) (asm.Instructions, error) {
	s := &settings{}
	if PtRegsSize(m) == 0 {
		return nil, &ConfigError{Field: "Machine", Reason: m.String(), Err: ErrUnsupported}
	}
	s.regsSize = PtRegsSize(m)
	s.ipOff, _ = ipReg(m)
	if err := s.checkFetch("Fetch", f); err != nil {
		return nil, err
	}
	if bit < 0 || bit > 30 {
		return nil, fmt.Errorf("fault bit %d out of range", bit)
	}
	g := &gen{s: s, alias: map[string]string{}}
	g.fetchAt(prefix, slot, bit, f)
	if f.Kind == FetchMem && f.Derefs > 0 {
		// A pointer chain ends at its label "done", which needs an
		// instruction: the caller's code continues after this one.
		g.emit(asm.Instruction{OpCode: asm.OpCode(asm.JumpClass).SetJumpOp(asm.Ja)})
	}
	return g.resolve(g.insns)
}
