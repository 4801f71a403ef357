package uprobe

import (
	"cmp"
	"debug/elf"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/ianlancetaylor/demangle"

	"github.com/usdtkit/usdtkit/elfnotes"
)

// ErrNoSymbols is returned by [Symbols] for a file with neither a .symtab
// nor a .dynsym section (nor, for a Go binary, a .gopclntab).
var ErrNoSymbols = errors.New("no symbol table")

// SymbolKind is the ELF symbol type of a function symbol.
type SymbolKind uint8

const (
	// SymFunc is an ordinary function (STT_FUNC).
	SymFunc SymbolKind = iota + 1
	// SymIFunc is a GNU indirect function (STT_GNU_IFUNC). Its address is
	// the resolver's, which runs once at load time and returns the
	// implementation the program calls (e.g. __memcpy_avx_unaligned_erms
	// for memcpy); a uprobe on it fires at relocation, not on each call.
	SymIFunc
)

func (k SymbolKind) String() string {
	switch k {
	case SymFunc:
		return "func"
	case SymIFunc:
		return "ifunc"
	}
	return fmt.Sprintf("SymbolKind(%d)", uint8(k))
}

// SymbolSource names the table a [Symbol] was read from.
type SymbolSource uint8

const (
	// SourceSymtab is the static symbol table, .symtab (SHT_SYMTAB).
	SourceSymtab SymbolSource = iota + 1
	// SourceDynsym is the dynamic symbol table, .dynsym (SHT_DYNSYM).
	SourceDynsym
	// SourceGopclntab is the Go runtime's function table, .gopclntab,
	// used for Go binaries stripped of .symtab.
	SourceGopclntab
)

func (s SymbolSource) String() string {
	switch s {
	case SourceSymtab:
		return "symtab"
	case SourceDynsym:
		return "dynsym"
	case SourceGopclntab:
		return "gopclntab"
	}
	return fmt.Sprintf("SymbolSource(%d)", uint8(s))
}

// Symbol is a function symbol of an ELF file. It is plain data.
type Symbol struct {
	// Name is the symbol's name as stored: mangled for C++, Go names such
	// as "main.(*Server).handle" as they are. A versioned .symtab name
	// ("foo@VERS") that is also in .dynsym is listed by its plain name.
	Name string
	// Demangled is Name demangled (C++ Itanium ABI, Rust), or "" if Name
	// is not mangled.
	Demangled string
	// Value is st_value, the function's virtual address (its offset in
	// its section for a relocatable object).
	Value uint64
	// Size is st_size; 0 when the table does not record it.
	Size uint64
	// Offset is the file offset of Value: the place a uprobe is attached.
	// It is 0 when Value lies in no PT_LOAD segment with file data (for
	// example in a separate debug file); no function starts at file
	// offset 0, which holds the ELF header.
	Offset uint64
	Kind   SymbolKind
	// Bind is the symbol binding. Symbols from .gopclntab, which records
	// none, are STB_GLOBAL.
	Bind elf.SymBind
	// Dynamic reports that the symbol is in .dynsym, whether or not it is
	// also in .symtab.
	Dynamic bool
	// Version is the GNU symbol version ("GLIBC_2.2.5") of a .dynsym
	// symbol, or "". Where .dynsym has several versions of the name at
	// the address, it is the default ("@@") one.
	Version string
	// Source is the table the symbol was taken from; .symtab wins over
	// .dynsym for a symbol in both.
	Source SymbolSource
}

// DisplayName returns Demangled if set, else Name.
func (s Symbol) DisplayName() string {
	if s.Demangled != "" {
		return s.Demangled
	}
	return s.Name
}

// Symbols returns the defined function symbols (STT_FUNC and STT_GNU_IFUNC,
// including those of size 0) of f, sorted by Value then Name. Undefined
// symbols (imports) are skipped. A symbol in both .symtab and .dynsym (same
// name and value) is listed once. Ties of Value and Name are ordered by
// Version. A Go binary without .symtab is read from
// its .gopclntab instead, together with its .dynsym, if any.
//
// Symbols returns an error wrapping [ErrNoSymbols] if f has no table, and a
// *[elfnotes.FormatError] for a malformed one. It does not retain f.
func Symbols(f *elfnotes.File) ([]Symbol, error) {
	symtab := sectionOfType(f, elf.SHT_SYMTAB)
	dynsym := sectionOfType(f, elf.SHT_DYNSYM)

	r := &tableReader{f: f}
	var out []Symbol
	switch {
	case symtab != nil:
		raw, err := r.symbols(symtab)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", symtab.Name, err)
		}
		out = make([]Symbol, 0, len(raw))
		for _, e := range raw {
			s, err := newSymbol(f, e, SourceSymtab)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", symtab.Name, err)
			}
			out = append(out, s)
		}
	case IsGo(f) && gopclntabSection(f) != nil:
		var err error
		if out, err = goSymbols(f); err != nil {
			return nil, err
		}
	case dynsym == nil:
		return nil, ErrNoSymbols
	}

	if dynsym != nil {
		var err error
		if out, err = mergeDynsym(r, dynsym, out); err != nil {
			return nil, fmt.Errorf("%s: %w", dynsym.Name, err)
		}
	}

	if out == nil {
		out = []Symbol{} // success is never nil, even with no functions
	}
	for i := range out {
		out[i].Demangled = demangleName(out[i].Name)
	}
	return sortSymbols(out), nil
}

// sortSymbols returns syms sorted by Value, Name and Version. Symbols are
// large; sorting indices and moving each once is several times faster than
// sorting them in place.
func sortSymbols(syms []Symbol) []Symbol {
	idx := make([]int32, len(syms))
	for i := range idx {
		idx[i] = int32(i)
	}
	slices.SortFunc(idx, func(i, j int32) int {
		a, b := &syms[i], &syms[j]
		return cmp.Or(cmp.Compare(a.Value, b.Value), strings.Compare(a.Name, b.Name), strings.Compare(a.Version, b.Version))
	})
	out := make([]Symbol, len(syms))
	for i, j := range idx {
		out[i] = syms[j]
	}
	return out
}

// newSymbol turns a table entry into a Symbol, resolving its file offset.
func newSymbol(f *elfnotes.File, r rawSym, src SymbolSource) (Symbol, error) {
	s := Symbol{
		Name:    r.name,
		Value:   r.value,
		Size:    r.size,
		Kind:    SymFunc,
		Bind:    r.bind(),
		Dynamic: src == SourceDynsym,
		Source:  src,
	}
	if r.typ() == elf.STT_GNU_IFUNC {
		s.Kind = SymIFunc
	}
	off, err := fileOffset(f, r.value, r.shndx)
	if err != nil {
		return Symbol{}, fmt.Errorf("symbol %s: %w", r.name, err)
	}
	s.Offset = off
	return s, nil
}

// fileOffset returns the file offset of the address value, or 0 if the file
// holds no bytes for it. In a relocatable object (ET_REL) value is relative
// to section shndx, and there are no segments.
func fileOffset(f *elfnotes.File, value uint64, shndx uint16) (uint64, error) {
	if f.Type == elf.ET_REL {
		if int(shndx) >= len(f.Sections) || elf.SectionIndex(shndx) >= elf.SHN_LORESERVE {
			return 0, nil
		}
		sec := f.Sections[shndx]
		if sec.Type == elf.SHT_NOBITS || value >= sec.Size {
			return 0, nil
		}
		return sec.Offset + value, nil
	}
	off, err := f.AddrToOffset(value)
	if errors.Is(err, elfnotes.ErrNoSegment) {
		return 0, nil
	}
	return off, err
}

// mergeDynsym adds the functions of the .dynsym section dyn to out. An
// entry already in out (from .symtab) with the same name and value is marked
// Dynamic and given its version instead of being added again.
func mergeDynsym(r *tableReader, dyn *elfnotes.Section, out []Symbol) ([]Symbol, error) {
	raw, err := r.symbols(dyn)
	if err != nil {
		return nil, err
	}
	vers, err := r.versions(dyn)
	if err != nil {
		return nil, err
	}
	type key struct {
		name  string
		value uint64
	}
	seen := make(map[key]int, len(out))
	for i, s := range out {
		// ld writes versioned names into .symtab when the source used
		// .symver ("foo@V1", "foo@@V2"); .dynsym has the plain name.
		name := s.Name
		if j := strings.IndexByte(name, '@'); j > 0 {
			name = name[:j]
		}
		seen[key{name, s.Value}] = i
	}
	out = slices.Grow(out, len(raw))
	// glibc 2.34 moved libpthread's functions into libc, where each has
	// its old version and GLIBC_2.34 at one address: one function, one
	// attach point, listed once with its default ("@@") version.
	defaultVer := make(map[int]bool)
	for _, e := range raw {
		ver, hidden, err := vers.version(e.index)
		if err != nil {
			return nil, err
		}
		k := key{e.name, e.value}
		if i, ok := seen[k]; ok {
			if !out[i].Dynamic || (!hidden && !defaultVer[i]) {
				out[i].Name = e.name
				out[i].Dynamic = true
				out[i].Version = ver
				defaultVer[i] = !hidden
			}
			continue
		}
		s, err := newSymbol(r.f, e, SourceDynsym)
		if err != nil {
			return nil, err
		}
		s.Version = ver
		seen[k] = len(out)
		defaultVer[len(out)] = !hidden
		out = append(out, s)
	}
	return out, nil
}

// maxDemangle bounds the names handed to the demangler, whose cost grows
// with the input; real mangled names stay well below it.
const maxDemangle = 1 << 14

// demangleName returns the demangled form of a C++ (Itanium ABI, "_Z") or
// Rust ("_R") name, or "" for other names and those that fail to demangle.
func demangleName(name string) string {
	if len(name) > maxDemangle || !(strings.HasPrefix(name, "_Z") || strings.HasPrefix(name, "_R")) {
		return ""
	}
	d, err := demangle.ToString(name)
	if err != nil || d == name {
		return ""
	}
	return d
}
