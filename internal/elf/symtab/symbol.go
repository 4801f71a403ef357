package symtab

import (
	"debug/elf"
	"errors"
	"fmt"
)

// Errors that callers branch on with errors.Is.
var (
	// ErrNoSymbols is returned by [Read] for a file with neither a .symtab
	// nor a .dynsym section (nor, for a Go binary, a .gopclntab).
	ErrNoSymbols = errors.New("no symbol table")
	// ErrNotFound is returned by [Table.Lookup] for a name no symbol has.
	ErrNotFound = errors.New("symbol not found")
	// ErrAmbiguous is returned by [Table.Lookup] for a name that symbols
	// at several different addresses have.
	ErrAmbiguous = errors.New("ambiguous symbol")
)

// Source names the table a [Symbol] was read from.
type Source uint8

const (
	// SourceSymtab is the static symbol table, .symtab (SHT_SYMTAB).
	SourceSymtab Source = iota + 1
	// SourceDynsym is the dynamic symbol table, .dynsym (SHT_DYNSYM).
	SourceDynsym
	// SourceGopclntab is the Go runtime's function table, .gopclntab,
	// used for Go binaries stripped of .symtab.
	SourceGopclntab
	// SourceDebug is the .symtab of a separate debug file.
	SourceDebug
)

func (s Source) String() string {
	switch s {
	case SourceSymtab:
		return "symtab"
	case SourceDynsym:
		return "dynsym"
	case SourceGopclntab:
		return "gopclntab"
	case SourceDebug:
		return "debug"
	}
	return fmt.Sprintf("Source(%d)", uint8(s))
}

// Symbol is a defined symbol of an ELF file. It is plain data.
type Symbol struct {
	// Name is the symbol's name as stored: mangled for C++, Go names such
	// as "main.(*Server).handle" as they are. A versioned .symtab name
	// ("foo@VERS") that is also in .dynsym is given by its plain name.
	Name string
	// Value is st_value: the symbol's virtual address (its offset in its
	// section for a relocatable object; its alignment for SHN_COMMON).
	Value uint64
	// Size is st_size; 0 when the table does not record it.
	Size uint64
	// Type is the symbol type (STT_FUNC, STT_OBJECT, STT_TLS, ...). For
	// STT_TLS, Value is an offset in the TLS segment, not an address.
	Type elf.SymType
	// Bind is the symbol binding. Symbols from .gopclntab, which records
	// none, are STB_GLOBAL.
	Bind elf.SymBind
	// Section is st_shndx: the index of the section the symbol is defined
	// in, or a reserved index such as SHN_ABS (0xfff1) or SHN_COMMON. For
	// .gopclntab symbols it is the index of .text.
	Section uint16
	// Dynamic reports that the symbol is in .dynsym, whether or not it is
	// also in .symtab.
	Dynamic bool
	// Version is the GNU symbol version ("GLIBC_2.2.5") of a .dynsym
	// symbol, or "". Where .dynsym has several versions of the name at
	// the address, it is the default ("@@") one.
	Version string
	// Source is the table the symbol was taken from; .symtab wins over
	// .dynsym for a symbol in both.
	Source Source
}
