package usdtlink

import (
	"fmt"
	"strconv"

	"github.com/cilium/ebpf/asm"

	"github.com/usdtkit/usdtkit/internal/bpf/argread"
	"github.com/usdtkit/usdtkit/internal/bpf/usdtargs"
	"github.com/usdtkit/usdtkit/internal/elf/symtab"
	"github.com/usdtkit/usdtkit/internal/proc/procfs"
	"github.com/usdtkit/usdtkit/internal/proc/target"
	"github.com/usdtkit/usdtkit/sdt"
)

// Register conventions of the code EmitArg and EmitArgSwitch return.
const (
	// CtxReg must hold the program's context (its R1 at entry, struct
	// pt_regs *) when the code runs; the code does not change it.
	CtxReg = asm.R6
	// ScratchSize is the number of stack bytes the code uses, from
	// R10+Stack to R10+Stack+ScratchSize-1.
	ScratchSize = 8
)

// AsmOptions are the optional parameters of EmitArg and EmitArgSwitch. A
// nil *AsmOptions is the zero value.
type AsmOptions struct {
	// Stack is the offset from R10 of the ScratchSize bytes of stack the
	// code may use; 0 means -ScratchSize. It must be a multiple of 8,
	// with Stack+ScratchSize <= 0.
	Stack int16
	// Symbol resolves the data symbols of %rip-relative and absolute
	// operands in the probe's object; nil refuses such operands.
	// Symbols returns one for a probe.
	Symbol func(string) (uint64, error)
}

func (o *AsmOptions) stack() (int16, error) {
	s := int16(-ScratchSize)
	if o != nil && o.Stack != 0 {
		s = o.Stack
	}
	if s%8 != 0 || int(s)+ScratchSize > 0 || int(s) < -512 {
		return 0, fmt.Errorf("stack offset %d: want a multiple of 8 in [-512, %d]", s, -ScratchSize)
	}
	return s, nil
}

// EmitArg returns the instructions that load argument a of the probe
// location at virtual address site (sdt.Location.Address) into dst, sign-
// or zero-extended to 64 bits, as usdtkit's own tracer reads it: every
// operand kind sdt parses and BPF can read (registers, %ah-style high
// bytes, base+offset, SIB, %rip+symbol, constants).
//
// CtxReg must hold the context. The code clobbers R0-R5, R7 and R9 (other
// than dst) and ScratchSize bytes of stack at opts.Stack; it preserves R6
// and R8 (other than dst). A memory read that faults gives 0. label makes the code's
// labels unique in the caller's program; it must differ between calls.
// dst may be any of R0-R9 except CtxReg.
//
// Errors: the argument's own parse error, or an *sdt.ArgError wrapping
// ErrUnsupported for what BPF cannot read (a %xmm register, a 16-byte
// value, a symbol without opts.Symbol).
func EmitArg(a sdt.Arg, site uint64, dst asm.Register, label string, opts *AsmOptions) (asm.Instructions, error) {
	if dst == CtxReg || dst > asm.R9 {
		return nil, fmt.Errorf("destination register %v: want R0-R9 other than %v", dst, CtxReg)
	}
	stack, err := opts.stack()
	if err != nil {
		return nil, err
	}
	var symbol func(string) (uint64, error)
	if opts != nil {
		symbol = opts.Symbol
	}
	f, err := usdtargs.Fetch(a, site, symbol)
	if err != nil {
		if ae, ok := err.(*sdt.ArgError); ok && ae.Err == argread.ErrUnsupported {
			c := *ae
			c.Err = ErrUnsupported
			err = &c
		}
		return nil, err
	}
	fetch, err := argread.EmitFetch(a.Machine, &f, stack, 0, label)
	if err != nil {
		return nil, &sdt.ArgError{Index: -1, Spec: a.Spec, Reason: err.Error(), Err: ErrUnsupported}
	}
	// argread's code reads the context from R6 and stores the value at
	// R7+slot, setting a bit of R9 on a fault: R7 is the frame pointer.
	insns := asm.Instructions{
		asm.Mov.Reg(argread.FetchBase, asm.R10),
		asm.Mov.Imm(argread.FetchFaults, 0),
	}
	insns = append(insns, fetch...)
	return append(insns, asm.LoadMem(dst, asm.R10, stack, asm.DWord)), nil
}

// EmitArgSwitch returns the instructions that load argument n of whichever
// location of probes fired into dst: they read the BPF cookie
// (bpf_get_attach_cookie) and dispatch on it to the code EmitArg gives for
// each location, in the cookie order AttachProbes uses for the same
// probes. A location without argument n, or an unknown cookie, gives 0.
// Conventions and errors are EmitArg's; symbols, when not nil, returns the
// symbol resolver of each probe (Symbols) and overrides opts.Symbol.
func EmitArgSwitch(probes []sdt.Probe, n int, dst asm.Register, label string, symbols func(*sdt.Probe) func(string) (uint64, error), opts *AsmOptions) (asm.Instructions, error) {
	var o AsmOptions
	if opts != nil {
		o = *opts
	}
	done := label + "_done"
	var sw, blocks asm.Instructions
	sw = asm.Instructions{
		asm.Mov.Reg(asm.R1, CtxReg),
		asm.FnGetAttachCookie.Call(),
	}
	cookie := 0
	for i := range probes {
		p := &probes[i]
		if symbols != nil {
			o.Symbol = symbols(p)
		}
		for j := range p.Locations {
			loc := &p.Locations[j]
			block := label + "_site" + strconv.Itoa(cookie)
			var code asm.Instructions
			if n < len(loc.Args) {
				var err error
				code, err = EmitArg(loc.Args[n], loc.Address, dst, block, &o)
				if err != nil {
					return nil, fmt.Errorf("%s in %s at %#x: arg%d: %w", p, p.Path, loc.Address, n, err)
				}
			} else {
				code = asm.Instructions{asm.Mov.Imm(dst, 0)}
			}
			code[0] = code[0].WithSymbol(block)
			sw = append(sw, asm.JEq.Imm(asm.R0, int32(cookie), block))
			blocks = append(blocks, code...)
			blocks = append(blocks, asm.Ja.Label(done))
			cookie++
		}
	}
	sw = append(sw, asm.Mov.Imm(dst, 0), asm.Ja.Label(done))
	out := append(sw, blocks...)
	return append(out, asm.Mov.Reg(dst, dst).WithSymbol(done)), nil
}

// Symbols returns a resolver of the data symbols of p's object, for
// AsmOptions.Symbol. It opens the object as sdt.List read it (refusing a
// different file) on first use, reads its symbol table once, and closes
// it; resolving is not safe for concurrent use.
func Symbols(p *sdt.Probe) func(string) (uint64, error) {
	var (
		opened  bool
		openErr error
		resolve func(string) (uint64, error)
	)
	return func(name string) (uint64, error) {
		if !opened {
			opened = true
			f, err := target.Reopen(p.Path, p.PID, procfs.FileID{Dev: p.Dev, Inode: p.Inode})
			if err != nil {
				openErr = fmt.Errorf("symbols of %s: %w", p.Path, err)
			} else {
				var rs symtab.Resolvers
				resolve = rs.For(procfs.FDPath(f))
				resolve("") // reads the table while the file is open
				f.Close()
			}
		}
		if openErr != nil {
			return 0, openErr
		}
		return resolve(name)
	}
}
