package uprobe

import (
	"debug/elf"
	"errors"
	"fmt"
	"strconv"

	"github.com/usdtkit/usdtkit/internal/proc/target"
)

// ErrUnsupportedArch is wrapped by CRegisters' error for a machine whose
// calling convention it does not know.
var ErrUnsupportedArch = errors.New("unsupported architecture")

// Function is one site to trace: a function's entry, a place inside it
// (FUNC+OFFSET, 0xADDR) or its return. It is plain data.
type Function struct {
	// Path, OpenPath, Dev, Inode, PID, Machine and Go are those of the
	// Object the symbol is in.
	Path       string
	OpenPath   string
	Dev, Inode uint64
	PID        int
	Machine    elf.Machine
	Go         bool
	Symbol     Symbol
	// Delta is the distance of the site from the symbol's start, in bytes.
	Delta uint64
	// Return selects the function's return (a uretprobe); Delta is 0.
	Return bool
}

// Name is the probe name of the site: "uprobe:FUNC", "uprobe:FUNC+DELTA"
// or "uretprobe:FUNC", FUNC demangled.
func (f *Function) Name() string {
	kind := "uprobe:"
	if f.Return {
		kind = "uretprobe:"
	}
	s := kind + f.Symbol.DisplayName()
	if f.Delta != 0 {
		s += "+" + strconv.FormatUint(f.Delta, 10)
	}
	return s
}

// FileOffset returns the file offset a probe is attached at.
func (f *Function) FileOffset() (uint64, error) {
	if f.Symbol.Offset == 0 {
		return 0, fmt.Errorf("%s in %s: address %#x has no bytes in the file", f.Name(), f.Path, f.Symbol.Value)
	}
	if f.Symbol.Size != 0 && f.Delta >= f.Symbol.Size {
		return 0, fmt.Errorf("%s in %s: offset %d is beyond the function's %d bytes", f.Name(), f.Path, f.Delta, f.Symbol.Size)
	}
	return f.Symbol.Offset + f.Delta, nil
}

// Functions returns the sites that opts's selectors name: one per address
// (with Return) in an object, in the order of the objects and their
// symbols. Where several symbols name one site (aliases such as malloc and
// __libc_malloc, or selectors naming one function twice), one is kept,
// chosen as preferName says, since two probes at one address would report
// each hit twice. It
// looks where List looks, and returns List's errors; selectors are
// required. No match is not an error: the result is empty.
func Functions(opts *ListOptions) ([]Function, error) {
	if opts == nil || len(opts.Selectors) == 0 {
		return nil, fmt.Errorf("functions: no selectors")
	}
	var fns []Function
	err := eachObject(opts, func(scope *target.Scope, t target.Object, obj *Object) {
		for i, sel := range opts.Selectors {
			if scope.Applies(i, t) {
				fns = appendFunctions(fns, obj, sel)
			}
		}
	})
	if err != nil {
		return nil, err
	}
	return dedupeSites(fns), nil
}

// FunctionsOf returns the sites sels name in objs, objects that List
// returned, as Functions does; the selectors' Path parts are not looked
// at: objs are where to look. A caller that looks up several selectors in
// the same objects lists them once (List with a selector of a Path only
// keeps every symbol) and calls FunctionsOf for each.
func FunctionsOf(objs []Object, sels []Selector) []Function {
	var fns []Function
	for i := range objs {
		for _, sel := range sels {
			fns = appendFunctions(fns, &objs[i], sel)
		}
	}
	return dedupeSites(fns)
}

// appendFunctions appends the sites of obj that sel names.
func appendFunctions(fns []Function, obj *Object, sel Selector) []Function {
	for _, sym := range obj.Symbols {
		if !sel.MatchSymbol(&sym) {
			continue
		}
		fn := Function{Path: obj.Path, OpenPath: obj.OpenPath, Dev: obj.Dev, Inode: obj.Inode, PID: obj.PID, Machine: obj.Machine,
			Go: obj.Go, Symbol: sym, Delta: sel.Offset, Return: sel.Return}
		if sel.Address != 0 {
			fn.Delta = sel.Address - sym.Value
		}
		fns = append(fns, fn)
	}
	return fns
}

// CRegisters returns the names (as pt_regs names them) of the
// integer argument registers of machine m's C ABI that function tracing
// reads as arg0..arg5, and of its integer return register: System V AMD64
// ABI §3.2.3 (rdi, rsi, rdx, rcx, r8, r9; rax), AAPCS64 §6.8 (x0..x5 of
// x0..x7; x0). Other machines are an error.
func CRegisters(m elf.Machine) (args []string, ret string, err error) {
	switch m {
	case elf.EM_X86_64:
		return []string{"rdi", "rsi", "rdx", "rcx", "r8", "r9"}, "rax", nil
	case elf.EM_AARCH64:
		return []string{"x0", "x1", "x2", "x3", "x4", "x5"}, "x0", nil
	}
	return nil, "", fmt.Errorf("machine %v: %w", m, ErrUnsupportedArch)
}
