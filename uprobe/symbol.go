package uprobe

import (
	"debug/elf"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/ianlancetaylor/demangle"

	"github.com/usdtkit/usdtkit/elfnotes"
	"github.com/usdtkit/usdtkit/internal/elf/symtab"
)

// ErrNoSymbols is returned by [Symbols] for a file with neither a .symtab
// nor a .dynsym section (nor, for a Go binary, a .gopclntab). It is
// internal/elf/symtab's value, which package sdt also wraps.
var ErrNoSymbols = symtab.ErrNoSymbols

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
	// SourceDebug is the .symtab of the object's separate debug file,
	// found by build ID or .gnu_debuglink.
	SourceDebug
)

// sources pairs each SymbolSource with the table symtab reads.
var sources = [...]struct {
	s   SymbolSource
	tab symtab.Source
}{
	{SourceSymtab, symtab.SourceSymtab},
	{SourceDynsym, symtab.SourceDynsym},
	{SourceGopclntab, symtab.SourceGopclntab},
	{SourceDebug, symtab.SourceDebug},
}

// String returns "symtab", "dynsym", "gopclntab" or "debug".
func (s SymbolSource) String() string {
	for _, x := range sources {
		if x.s == s {
			return x.tab.String()
		}
	}
	return fmt.Sprintf("SymbolSource(%d)", uint8(s))
}

// sourceOf returns the SymbolSource of a table symtab read.
func sourceOf(tab symtab.Source) SymbolSource {
	for _, x := range sources {
		if x.tab == tab {
			return x.s
		}
	}
	return 0
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

// Symbols returns the function symbols of f as [SymbolsPartial] does, but
// fails on the first problem SymbolsPartial would report as a warning.
func Symbols(f *elfnotes.File) ([]Symbol, error) {
	syms, warnings, err := SymbolsPartial(f)
	if err == nil && len(warnings) > 0 {
		err = warnings[0]
	}
	if err != nil {
		return nil, err
	}
	return syms, nil
}

// SymbolsPartial returns the defined function symbols (STT_FUNC and
// STT_GNU_IFUNC, including those of size 0) of f, sorted by Value then
// Name. Undefined symbols (imports) are skipped. A symbol in both .symtab
// and .dynsym (same name and value) is listed once. Ties of Value and Name
// are ordered by Version. A Go binary without .symtab is read from its
// .gopclntab instead, together with its .dynsym, if any.
//
// Damage stays local: a damaged table, symbol or version, or a symbol whose
// segment lies past the end of the file, is skipped with one warning each,
// an error wrapping an *[elfnotes.FormatError] with its file offset; the
// damage elfnotes.NewFile passed over in the headers (File.Warnings) comes
// first. err wraps [ErrNoSymbols] if f has no table, or is an I/O error;
// then syms is nil. It does not retain f.
func SymbolsPartial(f *elfnotes.File) (syms []Symbol, warnings []error, err error) {
	return symbolsPartial(f, nil, nil)
}

// symbolsPartial is SymbolsPartial with the object's separate debug file,
// or nil (see symtab.ReadPartialDebug), and a filter on plain names (see
// symtab.ReadOptions.Keep), or nil; offsets are always f's.
func symbolsPartial(f, debug *elfnotes.File, keep func(plain string) bool) (syms []Symbol, warnings []error, err error) {
	all, warnings, err := symtab.ReadPartialWith(f, &symtab.ReadOptions{Debug: debug, Keep: keep})
	if err != nil {
		return nil, nil, err
	}
	warnings = append(slices.Clone(f.Warnings()), warnings...)
	n := 0
	for i := range all {
		if isFunc(all[i].Type) {
			n++
		}
	}
	out := make([]Symbol, 0, n)
	for i := range all {
		s := &all[i]
		if !isFunc(s.Type) {
			continue
		}
		off, err := fileOffset(f, s.Value, s.Section)
		if err != nil {
			warnings = append(warnings, fmt.Errorf("%s symbol %s: %w", s.Source, s.Name, err))
			continue
		}
		kind := SymFunc
		if s.Type == elf.STT_GNU_IFUNC {
			kind = SymIFunc
		}
		// symtab.Read sorts by Value, Name and Version, and filtering
		// keeps that order.
		out = append(out, Symbol{
			Name:      s.Name,
			Demangled: demangleName(s.Name),
			Value:     s.Value,
			Size:      s.Size,
			Offset:    off,
			Kind:      kind,
			Bind:      s.Bind,
			Dynamic:   s.Dynamic,
			Version:   s.Version,
			Source:    sourceOf(s.Source),
		})
	}
	return out, warnings, nil
}

func isFunc(t elf.SymType) bool { return t == elf.STT_FUNC || t == elf.STT_GNU_IFUNC }

// IsGo reports whether f was built by the Go toolchain: it has a
// .go.buildinfo or .gopclntab section, or the Go build-ID note.
func IsGo(f *elfnotes.File) bool { return symtab.IsGo(f) }

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
