// Package usdtargs turns a USDT argument parsed by sdt into the read a BPF
// program does (argread.Fetch). It is apart from sdt, so listing probes
// links no code generator.
package usdtargs

import (
	"debug/elf"
	"fmt"

	"github.com/usdtkit/usdtkit/internal/bpf/argread"
	"github.com/usdtkit/usdtkit/sdt"
)

// Fetch converts a parsed argument a at a probe location into what the BPF
// program reads. site is the location's virtual address (Location.Address),
// used for symbol operands; symbol resolves a symbol name to its virtual
// address in the same object. symbol may be nil: then a symbol operand gives
// an error wrapping argread.ErrUnsupported.
//
// Symbol operands become instruction-pointer-relative reads: when the
// program runs, the context's instruction pointer holds the probe site's
// run-time address (the kernel's handle_swbp sets it to the breakpoint
// address before the handlers run, and the x86 uprobe syscall path sets it
// to the call's return address - 5, the site), so symbol + displacement -
// site, added to it, is the symbol's run-time address in any process, at
// any load address. This holds for %rip-relative operands ("gs+8(%rip)",
// where GAS means the address of gs+8) and for absolute ones ("garr(,%rdi,4)"
// in a non-PIE executable, where run-time and link-time addresses agree).
//
// Errors are *ArgError values: the argument's own parse error, or one
// wrapping argread.ErrUnsupported for what BPF cannot read (registers outside
// pt_regs such as %xmm0 or v0, sizes other than 1, 2, 4 and 8, a symbol
// without a resolver, a numeric %rip displacement), or one wrapping the
// resolver's error.
func Fetch(a sdt.Arg, site uint64, symbol func(string) (uint64, error)) (argread.Fetch, error) {
	if a.Err != nil {
		return argread.Fetch{}, a.Err
	}
	fail := func(format string, args ...any) (argread.Fetch, error) {
		return argread.Fetch{}, &sdt.ArgError{Index: -1, Spec: a.Spec, Reason: fmt.Sprintf(format, args...), Err: argread.ErrUnsupported}
	}
	f := argread.Fetch{Signed: a.Signed}
	switch a.Size {
	case 0, 1, 2, 4, 8:
		f.Size = uint8(a.Size)
	default:
		return fail("%d-byte value", a.Size)
	}
	reg := func(name string) (argread.Reg, bool, error) {
		r, ok := sdt.LookupRegister(a.Machine, name)
		if !ok {
			return argread.Reg{}, false, fmt.Errorf("unknown register %q", name)
		}
		if a.Machine == elf.EM_AARCH64 && r.Name == "xzr" {
			return argread.Reg{}, true, nil
		}
		off, err := argread.PtRegs(a.Machine, r.Name)
		if err != nil {
			return argread.Reg{}, false, err
		}
		return argread.Reg{Off: off, Width: uint8(r.Width), Shift: uint8(r.Shift)}, false, nil
	}

	switch a.Kind {
	case sdt.ArgConst:
		f.Kind, f.Value = argread.FetchConst, a.Value
	case sdt.ArgReg:
		r, zero, err := reg(a.Reg)
		if err != nil {
			return fail("register %s: %v", a.Reg, err)
		}
		if zero {
			// xzr reads as zero.
			f.Kind = argread.FetchConst
			break
		}
		f.Kind, f.Reg = argread.FetchReg, r
	case sdt.ArgMem:
		f.Kind, f.Offset = argread.FetchMem, a.Offset
		if a.Index != "" {
			r, _, err := reg(a.Index)
			if err != nil {
				return fail("index register %s: %v", a.Index, err)
			}
			f.HasIndex, f.Index, f.Scale = true, r, uint8(a.Scale)
		}
		isIP := false
		if a.Reg != "" {
			if r, ok := sdt.LookupRegister(a.Machine, a.Reg); ok && r.Name == "rip" {
				isIP = true
			}
		}
		switch {
		case a.Symbol != "":
			if a.Reg != "" && !isIP {
				return fail("symbol %s with base register %s", a.Symbol, a.Reg)
			}
			if symbol == nil {
				return fail("symbol %s needs a symbol table", a.Symbol)
			}
			addr, err := symbol(a.Symbol)
			if err != nil {
				return argread.Fetch{}, &sdt.ArgError{Index: -1, Spec: a.Spec, Reason: "symbol " + a.Symbol, Err: err}
			}
			f.IPRel = true
			f.Offset = int64(addr + uint64(a.Offset) - site)
		case isIP:
			return fail("%%rip displacement without a symbol")
		case a.Reg != "":
			r, _, err := reg(a.Reg)
			if err != nil {
				return fail("base register %s: %v", a.Reg, err)
			}
			f.HasBase, f.Reg = true, r
		}
	default:
		return fail("argument kind %v", a.Kind)
	}
	return f, nil
}
