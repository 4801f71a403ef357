package uprobe

import (
	"debug/elf"
	"encoding/binary"
	"math"
	"strings"

	"github.com/usdtkit/usdtkit/elfnotes"
)

// Sizes of one symbol table entry (sh_entsize), from the System V gABI:
// Elf32_Sym is {name u32, value u32, size u32, info u8, other u8, shndx u16}
// and Elf64_Sym is {name u32, info u8, other u8, shndx u16, value u64, size u64}.
const (
	sym32Size = 16
	sym64Size = 24
)

// rawSym is one function entry of a symbol table, before its offset, kind
// and version are resolved.
type rawSym struct {
	index int // index in its table; .gnu.version is indexed by it
	name  string
	info  uint8
	shndx uint16
	value uint64
	size  uint64
}

func (r rawSym) typ() elf.SymType  { return elf.ST_TYPE(r.info) }
func (r rawSym) bind() elf.SymBind { return elf.ST_BIND(r.info) }

// symEntSize returns the entry size of a symbol table of class c, or 0.
func symEntSize(c elf.Class) int {
	switch c {
	case elf.ELFCLASS32:
		return sym32Size
	case elf.ELFCLASS64:
		return sym64Size
	}
	return 0
}

// parseSyms decodes the defined function entries (STT_FUNC, STT_GNU_IFUNC,
// st_shndx != SHN_UNDEF) of a symbol table. data is the table's contents,
// read from file offset off; entsize is its sh_entsize (0 means "not given"
// and is accepted); strtab is the linked string table.
// Names are substrings of strtab, so a table costs one string allocation.
//
// Every error is a *FormatError whose offset points into the file.
func parseSyms(data []byte, off, entsize uint64, strtab string, class elf.Class, order binary.ByteOrder) ([]rawSym, error) {
	size := symEntSize(class)
	if size == 0 {
		return nil, newFormatError(off, "unknown ELF class", class)
	}
	if entsize != 0 && entsize != uint64(size) {
		return nil, newFormatError(off, "symbol table entry size mismatch", entsize)
	}
	if len(data)%size != 0 {
		return nil, newFormatError(off, "symbol table size is not a multiple of the entry size", len(data))
	}
	n := len(data) / size
	// Entry 0 is the reserved null symbol. The count of functions is not
	// known before the loop; growing from an estimate keeps one
	// allocation for typical tables without trusting the file beyond its
	// size.
	out := make([]rawSym, 0, n/2)
	for i := 1; i < n; i++ {
		e := data[i*size : (i+1)*size]
		var r rawSym
		var nameOff uint32
		if class == elf.ELFCLASS64 {
			nameOff = order.Uint32(e[0:4])
			r.info = e[4]
			r.shndx = order.Uint16(e[6:8])
			r.value = order.Uint64(e[8:16])
			r.size = order.Uint64(e[16:24])
		} else {
			nameOff = order.Uint32(e[0:4])
			r.value = uint64(order.Uint32(e[4:8]))
			r.size = uint64(order.Uint32(e[8:12]))
			r.info = e[12]
			r.shndx = order.Uint16(e[14:16])
		}
		if t := r.typ(); t != elf.STT_FUNC && t != elf.STT_GNU_IFUNC {
			continue
		}
		if elf.SectionIndex(r.shndx) == elf.SHN_UNDEF {
			continue
		}
		entOff := off + uint64(i*size)
		name, msg := cstring(strtab, nameOff)
		if msg != "" {
			return nil, newFormatError(entOff, "symbol name "+msg, nameOff)
		}
		r.index = i
		r.name = name
		out = append(out, r)
	}
	return out, nil
}

// cstring returns the NUL-terminated string at off in tab, or a reason
// why there is none.
func cstring(tab string, off uint32) (s, msg string) {
	if uint64(off) >= uint64(len(tab)) {
		return "", "offset out of range of the string table"
	}
	s = tab[off:]
	if i := strings.IndexByte(s, 0); i >= 0 {
		return s[:i], ""
	}
	return "", "not NUL-terminated"
}

// sectionOfType returns the first section of type t, or nil. The gABI
// allows at most one SHT_SYMTAB and one SHT_DYNSYM; the type, not the name,
// identifies them.
func sectionOfType(f *elfnotes.File, t elf.SectionType) *elfnotes.Section {
	for _, s := range f.Sections {
		if s.Type == t {
			return s
		}
	}
	return nil
}

// linked returns the section named by s's sh_link.
func linked(f *elfnotes.File, s *elfnotes.Section) (*elfnotes.Section, error) {
	if s.Link == 0 || uint64(s.Link) >= uint64(len(f.Sections)) {
		return nil, newFormatError(s.Offset, "section link out of range", s.Link)
	}
	return f.Sections[s.Link], nil
}

// tableReader reads the tables of one File for one call of Symbols. It
// reads each string table once: .dynsym and the version sections share
// .dynstr.
type tableReader struct {
	f    *elfnotes.File
	strs map[*elfnotes.Section]string
}

// strtab returns the contents of the string table linked from s.
func (r *tableReader) strtab(s *elfnotes.Section) (string, error) {
	str, err := linked(r.f, s)
	if err != nil {
		return "", err
	}
	if str.Type != elf.SHT_STRTAB {
		return "", newFormatError(str.Offset, "linked section is not a string table", str.Type)
	}
	if t, ok := r.strs[str]; ok {
		return t, nil
	}
	b, err := str.Data()
	if err != nil {
		return "", err
	}
	if r.strs == nil {
		r.strs = make(map[*elfnotes.Section]string, 2)
	}
	r.strs[str] = string(b)
	return r.strs[str], nil
}

// symbols reads the function symbols of the symbol table section s.
func (r *tableReader) symbols(s *elfnotes.Section) ([]rawSym, error) {
	strtab, err := r.strtab(s)
	if err != nil {
		return nil, err
	}
	data, err := s.Data()
	if err != nil {
		return nil, err
	}
	return parseSyms(data, s.Offset, s.Entsize, strtab, r.f.Class, r.f.ByteOrder)
}

// newFormatError returns an *elfnotes.FormatError at file offset off.
func newFormatError(off uint64, msg string, val any) error {
	if off > math.MaxInt64 {
		off = math.MaxInt64
	}
	return &elfnotes.FormatError{Off: int64(off), Msg: msg, Val: val}
}
