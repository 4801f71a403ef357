package uprobe

import (
	"debug/elf"
	"errors"
	"fmt"
	"path"
	"strings"

	"github.com/usdtkit/usdtkit/elfnotes"
	"github.com/usdtkit/usdtkit/internal/target"
)

// Selector picks functions, in bpftrace's syntax:
//
//	uprobe:PATH:FUNC      (or u:PATH:FUNC)
//	uretprobe:PATH:FUNC   (or ur:PATH:FUNC)
//
// FUNC is a glob (path.Match syntax) matched against the symbol's name and
// its demangled name; it may contain colons (C++ "ns::f"). PATH is a file,
// a glob, or a library short name, as for sdt.Selector.
type Selector struct {
	Path string
	Func string
	// Return selects the function's return (uretprobe).
	Return bool
}

// ParseSelector parses a uprobe or uretprobe selector.
func ParseSelector(s string) (Selector, error) {
	kind, rest, ok := strings.Cut(s, ":")
	if !ok {
		return Selector{}, fmt.Errorf("selector %q: want uprobe:PATH:FUNC", s)
	}
	var sel Selector
	switch kind {
	case "uprobe", "u":
	case "uretprobe", "ur":
		sel.Return = true
	default:
		return Selector{}, fmt.Errorf("selector %q: probe type %q is not uprobe or uretprobe", s, kind)
	}
	sel.Path, sel.Func, ok = strings.Cut(rest, ":")
	if !ok || sel.Func == "" {
		return Selector{}, fmt.Errorf("selector %q: want %s:PATH:FUNC", s, kind)
	}
	if _, err := path.Match(sel.Func, ""); err != nil {
		return Selector{}, fmt.Errorf("selector %q: glob %q: %w", s, sel.Func, err)
	}
	return sel, nil
}

// String returns the selector in its long form.
func (s Selector) String() string {
	kind := "uprobe"
	if s.Return {
		kind = "uretprobe"
	}
	return kind + ":" + s.Path + ":" + s.Func
}

// MatchSymbol reports whether the symbol's name or demangled name matches
// the selector's FUNC glob.
func (s Selector) MatchSymbol(sym *Symbol) bool {
	if s.Func == "" || s.Func == "*" {
		return true
	}
	if ok, _ := path.Match(s.Func, sym.Name); ok {
		return true
	}
	ok, _ := path.Match(s.Func, sym.Demangled)
	return ok && sym.Demangled != ""
}

// Object is the function symbols of one object file.
type Object struct {
	// Path is the file as users know it; PID the process it was found in
	// (0 for files).
	Path    string
	PID     int
	Machine elf.Machine
	// Go reports a Go binary (see IsGo).
	Go      bool
	Symbols []Symbol
}

// ListOptions says where List looks and what it keeps; the fields mean what
// they mean in sdt.ListOptions.
type ListOptions struct {
	Paths     []string
	PID       int
	Selectors []Selector
}

// Errors of List that callers branch on, the same values as package sdt's.
var (
	ErrNoTarget = target.ErrNoTarget
	ErrNotFound = target.ErrNotFound
)

// List returns the function symbols of the objects named by opts that match
// a selector (all, without selectors), object by object. Objects of a process
// that are not ELF files are passed over, and so are, in a process, objects
// without a symbol table; a named file without one is an error wrapping
// ErrNoSymbols.
func List(opts *ListOptions) ([]Object, error) {
	if opts == nil {
		opts = &ListOptions{}
	}
	selPaths := make([]string, len(opts.Selectors))
	for i, s := range opts.Selectors {
		selPaths[i] = s.Path
	}
	scope, err := target.NewScope(opts.Paths, opts.PID, selPaths)
	if err != nil {
		return nil, err
	}
	var objs []Object
	for _, t := range scope.Objects {
		obj, err := readObject(t)
		if t.PID != 0 && (errors.Is(err, elfnotes.ErrNotELF) || errors.Is(err, ErrNoSymbols)) {
			continue
		}
		if err != nil {
			return nil, err
		}
		if len(opts.Selectors) > 0 {
			kept := obj.Symbols[:0]
			for _, sym := range obj.Symbols {
				if matchAny(opts.Selectors, scope, t, &sym) {
					kept = append(kept, sym)
				}
			}
			obj.Symbols = kept
		}
		if len(obj.Symbols) > 0 || len(opts.Selectors) == 0 {
			objs = append(objs, obj)
		}
	}
	return objs, nil
}

func matchAny(sels []Selector, scope *target.Scope, t target.Object, sym *Symbol) bool {
	for i, s := range sels {
		if scope.Applies(i, t) && s.MatchSymbol(sym) {
			return true
		}
	}
	return false
}

func readObject(t target.Object) (Object, error) {
	f, err := elfnotes.Open(t.OpenPath)
	if err != nil {
		return Object{}, err
	}
	defer f.Close()
	syms, err := Symbols(f)
	if err != nil {
		return Object{}, fmt.Errorf("%s: %w", t.Path, err)
	}
	return Object{Path: t.Path, PID: t.PID, Machine: f.Machine, Go: IsGo(f), Symbols: syms}, nil
}
