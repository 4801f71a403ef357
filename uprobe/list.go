package uprobe

import (
	"debug/elf"
	"errors"
	"fmt"
	"path"
	"strconv"
	"strings"

	"github.com/usdtkit/usdtkit/elfnotes"
	"github.com/usdtkit/usdtkit/internal/elf/symtab"
	"github.com/usdtkit/usdtkit/internal/escape"
	"github.com/usdtkit/usdtkit/internal/proc/procfs"
	"github.com/usdtkit/usdtkit/internal/proc/target"
)

// Selector picks functions, in bpftrace's syntax:
//
//	uprobe:PATH:FUNC      (or u:PATH:FUNC)
//	uretprobe:PATH:FUNC   (or ur:PATH:FUNC)
//
// A \xNN in PATH or FUNC is byte NN, as listings print bytes that are not
// printable UTF-8. FUNC is a glob (path.Match syntax) matched against the symbol's name and
// its demangled name; it may contain colons (C++ "ns::f"). PATH is a file,
// a glob, or a library short name, as for sdt.Selector.
//
// As in bpftrace, FUNC may also be FUNC+OFFSET (a probe OFFSET bytes into
// the function, decimal or 0x hex) or 0xADDR, a virtual address of the
// binary (st_value units, not a file offset), which selects the function
// that contains it.
type Selector struct {
	Path string
	// Func is the glob, without "+OFFSET"; for the 0xADDR form it is the
	// address as written.
	Func string
	// Offset is the OFFSET of FUNC+OFFSET, 0 without one.
	Offset uint64
	// Address is the ADDR of the 0xADDR form, 0 for a name.
	Address uint64
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
	if hex, ok := strings.CutPrefix(sel.Func, "0x"); ok {
		a, err := strconv.ParseUint(hex, 16, 64)
		if err != nil || a == 0 {
			return Selector{}, fmt.Errorf("selector %q: address %q: want 0x and a non-zero hex number", s, sel.Func)
		}
		sel.Address = a
		if sel.Return {
			return Selector{}, fmt.Errorf("selector %q: a uretprobe takes a function name, not an address", s)
		}
		return sel, nil
	}
	// A last "+" followed by a number is an offset; any other "+" belongs
	// to the name (C++ "operator+").
	if i := strings.LastIndexByte(sel.Func, '+'); i > 0 && i < len(sel.Func)-1 {
		off, err := strconv.ParseUint(sel.Func[i+1:], 0, 64)
		if err == nil {
			if sel.Return {
				return Selector{}, fmt.Errorf("selector %q: a uretprobe takes no offset", s)
			}
			sel.Func, sel.Offset = sel.Func[:i], off
		}
	}
	// Names print escaped (package escape): read the escapes back.
	sel.Path, sel.Func = escape.Literal(sel.Path), escape.Glob(sel.Func)
	if _, err := path.Match(sel.Func, ""); err != nil {
		return Selector{}, fmt.Errorf("selector %q: glob %q: %w", s, sel.Func, err)
	}
	return sel, nil
}

// Literal reports whether FUNC names functions by one name: it is not
// empty, not an address and has no glob metacharacter (*, ?, [ or \), so
// it matches a symbol whose name is FUNC, a Go generic function's
// instances (FUNC[...]) and a mangled name that demangles to FUNC. A
// listing whose selectors are all literal reads only the symbols they
// can match, without sorting every symbol of the object.
func (s Selector) Literal() bool {
	return s.Address == 0 && s.Func != "" && !strings.ContainsAny(s.Func, `*?[\`)
}

// keepNames returns a filter on the plain names of symbols (symtab's
// ReadOptions.Keep) that accepts every symbol one of sels can match (see
// MatchSymbol), or nil, which keeps every symbol, when one of them is not
// [Selector.Literal] or there are none.
func keepNames(sels []Selector) func(plain string) bool {
	if len(sels) == 0 {
		return nil
	}
	names := make(map[string]bool, len(sels))
	generic := make([]string, 0, len(sels))
	for _, s := range sels {
		if !s.Literal() {
			return nil
		}
		// A symbol named s.Func has the plain name of s.Func; one named
		// s.Func[...] (a Go generic's instance) has it too when s.Func
		// has an '@', else one that starts with s.Func and "[".
		names[symtab.PlainName(s.Func)] = true
		generic = append(generic, s.Func+"[")
	}
	return func(plain string) bool {
		// A mangled name may demangle to s.Func.
		if names[plain] || strings.HasPrefix(plain, "_Z") || strings.HasPrefix(plain, "_R") {
			return true
		}
		for _, g := range generic {
			if strings.HasPrefix(plain, g) {
				return true
			}
		}
		return false
	}
}

// String returns the selector in its long form.
func (s Selector) String() string {
	kind := "uprobe"
	if s.Return {
		kind = "uretprobe"
	}
	fn := s.Func
	if s.Address != 0 {
		fn = "0x" + strconv.FormatUint(s.Address, 16)
	} else if s.Offset != 0 {
		fn += "+" + strconv.FormatUint(s.Offset, 10)
	}
	return kind + ":" + s.Path + ":" + fn
}

// MatchSymbol reports whether the symbol's name or demangled name matches
// the selector's FUNC glob; for the 0xADDR form, whether the symbol's
// function contains the address (a symbol of size 0 only its first byte).
func (s Selector) MatchSymbol(sym *Symbol) bool {
	if s.Address != 0 {
		return s.Address == sym.Value || (s.Address > sym.Value && s.Address-sym.Value < sym.Size)
	}
	if s.Func == "" || s.Func == "*" {
		return true
	}
	if ok, _ := path.Match(s.Func, sym.Name); ok || s.Func == sym.Name {
		return true
	}
	// A Go generic function's instances are "main.Map[go.shape.int]";
	// "main.Map" selects them all ('[' would start a glob class).
	if i := strings.IndexByte(sym.Name, '['); i > 0 && strings.HasSuffix(sym.Name, "]") {
		if ok, _ := path.Match(s.Func, sym.Name[:i]); ok {
			return true
		}
	}
	ok, _ := path.Match(s.Func, sym.Demangled)
	return ok && sym.Demangled != ""
}

// Object is the function symbols of one object file.
type Object struct {
	// Path is the file as users know it; PID the process it was found in
	// (0 for files).
	Path string
	PID  int
	// OpenPath says where the file was read from: Path, or for a
	// process's objects /proc/PID/root/... or /proc/PID/map_files/...
	// It is for messages; tracers and package gosig do not open it.
	OpenPath string
	// Dev and Inode identify the file the symbols were read from (stat's
	// st_dev and st_ino). A tracer opens the file again as List did and
	// refuses a file whose identity differs; 0 and 0 are not checked.
	Dev, Inode uint64
	Machine    elf.Machine
	// Go reports a Go binary (see IsGo).
	Go      bool
	Symbols []Symbol

	warnings []error // for ListOptions.Warn
}

// ListOptions says where List looks and what it keeps; the fields mean what
// they mean in sdt.ListOptions.
type ListOptions struct {
	Paths     []string
	PID       int
	Selectors []Selector
	// Warn, when not nil, is called once for each object of the process
	// that is skipped because it cannot be opened or read, and for each
	// damaged symbol table, symbol or version of an object whose other
	// symbols are listed (see sdt.ListOptions.Warn); without it these pass
	// silently.
	Warn func(error)
}

// Errors of List that callers branch on, the same values as package sdt's.
var (
	ErrNoTarget = target.ErrNoTarget
	ErrNotFound = target.ErrNotFound
)

// List returns the function symbols of the objects named by opts that match
// a selector (all, without selectors), object by object. Each object is
// opened once and read through that file; with selectors, only the objects
// their PATH parts name are read. Objects of a process that are
// not ELF files are passed over, and so are, in a process, objects without
// a symbol table; objects of a process that cannot be opened or read are
// skipped and reported to opts.Warn. A named file without a symbol table
// is an error wrapping ErrNoSymbols.
func List(opts *ListOptions) ([]Object, error) {
	if opts == nil {
		opts = &ListOptions{}
	}
	var objs []Object
	err := eachObject(opts, func(scope *target.Scope, t target.Object, obj *Object) {
		for _, w := range obj.warnings {
			if opts.Warn != nil {
				opts.Warn(w)
			}
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
			objs = append(objs, *obj)
		}
	})
	if err != nil {
		return nil, err
	}
	return objs, nil
}

// eachObject reads each object opts selects, in order, keeping the
// symbols its selectors name, and calls fn with those that have symbols.
func eachObject(opts *ListOptions, fn func(scope *target.Scope, t target.Object, obj *Object)) error {
	scope, err := target.NewScopeOf(opts.Paths, opts.PID, opts.Selectors, selectorPath)
	if err != nil {
		return err
	}
	for _, t := range scope.Objects {
		if !scope.Wanted(t) {
			continue
		}
		obj, ok, err := readObject(t, opts.Warn, keepNames(applying(opts.Selectors, scope, t)))
		if err != nil {
			return err
		}
		if ok {
			fn(scope, t, &obj)
		}
	}
	return nil
}

func selectorPath(s Selector) string { return s.Path }

// applying returns the selectors of sels that apply to t.
func applying(sels []Selector, scope *target.Scope, t target.Object) []Selector {
	var out []Selector
	for i, s := range sels {
		if scope.Applies(i, t) {
			out = append(out, s)
		}
	}
	return out
}

func matchAny(sels []Selector, scope *target.Scope, t target.Object, sym *Symbol) bool {
	for i, s := range sels {
		if scope.Applies(i, t) && s.MatchSymbol(sym) {
			return true
		}
	}
	return false
}

// readObject reads t's function symbols. ok is false, without an error,
// for an object of a process that is not an ELF file or has no symbol
// table: listings pass those over; and for one that cannot be opened or
// read, which goes to warn. A named file gets the error. keep, when not
// nil, selects the symbols read by plain name (see keepNames).
func readObject(t target.Object, warn func(error), keep func(plain string) bool) (obj Object, ok bool, err error) {
	obj, err = readSymbols(t, keep)
	if t.PID != 0 && (errors.Is(err, elfnotes.ErrNotELF) || errors.Is(err, ErrNoSymbols)) {
		return Object{}, false, nil
	}
	if err != nil && target.Skip(t, err) {
		if warn != nil {
			warn(fmt.Errorf("pid %d: skipped %s: %w", t.PID, t.Path, err))
		}
		return Object{}, false, nil
	}
	return obj, err == nil, err
}

func readSymbols(t target.Object, keep func(plain string) bool) (Object, error) {
	fd, err := t.Open()
	if err != nil {
		return Object{}, err
	}
	defer fd.Close()
	id, err := procfs.IDOf(fd)
	if err != nil {
		return Object{}, err
	}
	f, err := elfnotes.NewFile(fd)
	if err != nil {
		return Object{}, named(t, err)
	}
	debug, debugErr := openDebugFile(f, t)
	var syms []Symbol
	var warnings []error
	if debug != nil {
		defer debug.Close()
		syms, warnings, err = symbolsPartial(f, debug.File, keep)
	} else {
		syms, warnings, err = symbolsPartial(f, nil, keep)
	}
	if err != nil {
		return Object{}, named(t, err)
	}
	if debugErr != nil {
		warnings = append(warnings, fmt.Errorf("separate debug file: %w", debugErr))
	}
	for i, w := range warnings {
		if t.PID != 0 {
			warnings[i] = fmt.Errorf("pid %d: %s: %w", t.PID, t.Path, w)
		} else {
			warnings[i] = fmt.Errorf("%s: %w", t.Path, w)
		}
	}
	return Object{Path: t.Path, PID: t.PID, OpenPath: fd.Name(), Dev: id.Dev, Inode: id.Inode,
		Machine: f.Machine, Go: IsGo(f), Symbols: syms, warnings: warnings}, nil
}

// named adds a named file's path to err; a process's object gets it in
// the warning that skips it (see readObject).
func named(t target.Object, err error) error {
	if t.PID != 0 {
		return err
	}
	return fmt.Errorf("%s: %w", t.Path, err)
}

// openDebugFile opens the separate debug file of an object stripped of its
// .symtab, looked up inside the root of t's process (see
// symtab.OpenDebugFile), or returns nil when the object has its own
// .symtab or no debug file is found. A malformed .gnu_debuglink, or a
// root that cannot be opened, is an error that leaves the object's own
// symbols to be listed with a warning.
func openDebugFile(f *elfnotes.File, t target.Object) (*symtab.DebugFile, error) {
	for _, s := range f.Sections {
		if s.Type == elf.SHT_SYMTAB {
			return nil, nil
		}
	}
	root, err := procfs.OpenRoot(t.PID)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	d, err := symtab.OpenDebugFile(f, t.Path, &symtab.DebugOptions{Root: root})
	if errors.Is(err, symtab.ErrNoDebugFile) {
		return nil, nil
	}
	return d, err
}
