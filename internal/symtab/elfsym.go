package symtab

import (
	"debug/elf"
	"fmt"
	"math"
	"slices"
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

// symTable is one symbol table section, read and ready to decode.
type symTable struct {
	data    []byte // the section's contents
	off     uint64 // file offset of data
	entsize uint64 // sh_entsize; 0 means "not given" and is accepted
	strtab  string // the linked string table
	src     Source
	vers    *versions // .dynsym only; nil if none
}

// appendSyms decodes the entries of t that Read lists and appends them to
// out: every entry but the null one, those with st_shndx SHN_UNDEF, and
// those without a name (section symbols). For a table with versions it also
// returns, per appended entry, whether its version is hidden (VERSYM_HIDDEN,
// "foo@V" rather than the default "foo@@V"). Names and versions are
// substrings of the string table, so a table costs one string allocation.
//
// A bad table is an error; a bad entry (name outside the string table,
// undefined version) is skipped with a warning added to r. Every error and
// warning is a *FormatError whose offset points into the file.
func (r *tableReader) appendSyms(out []Symbol, t *symTable) ([]Symbol, []bool, error) {
	class, order := r.f.Class, r.f.ByteOrder
	size := symEntSize(class)
	if size == 0 {
		return nil, nil, newFormatError(t.off, "unknown ELF class", class)
	}
	if t.entsize != 0 && t.entsize != uint64(size) {
		return nil, nil, newFormatError(t.off, "symbol table entry size mismatch", t.entsize)
	}
	if len(t.data)%size != 0 {
		return nil, nil, newFormatError(t.off, "symbol table size is not a multiple of the entry size", len(t.data))
	}
	n := len(t.data) / size
	if n == 0 {
		return out, nil, nil
	}
	// Entry 0 is the reserved null symbol. n is bounded by the section
	// size, which elfnotes checks against the file size.
	out = slices.Grow(out, n-1)
	var hidden []bool
	if t.vers != nil {
		hidden = make([]bool, 0, n-1)
	}
	for i := 1; i < n; i++ {
		e := t.data[i*size : (i+1)*size]
		var (
			nameOff uint32
			info    uint8
			s       Symbol
		)
		if class == elf.ELFCLASS64 {
			nameOff = order.Uint32(e[0:4])
			info = e[4]
			s.Section = order.Uint16(e[6:8])
			s.Value = order.Uint64(e[8:16])
			s.Size = order.Uint64(e[16:24])
		} else {
			nameOff = order.Uint32(e[0:4])
			s.Value = uint64(order.Uint32(e[4:8]))
			s.Size = uint64(order.Uint32(e[8:12]))
			info = e[12]
			s.Section = order.Uint16(e[14:16])
		}
		if elf.SectionIndex(s.Section) == elf.SHN_UNDEF || nameOff == 0 {
			continue
		}
		entOff := t.off + uint64(i*size)
		name, msg := cstring(t.strtab, nameOff)
		if msg != "" {
			r.warnings = append(r.warnings, newFormatError(entOff, fmt.Sprintf("%s symbol %d: name %s", t.src, i, msg), nameOff))
			continue
		}
		if name == "" {
			continue
		}
		s.Name = name
		s.Type = elf.ST_TYPE(info)
		s.Bind = elf.ST_BIND(info)
		s.Dynamic = t.src == SourceDynsym
		s.Source = t.src
		if t.vers != nil {
			ver, h, err := t.vers.version(i)
			if err != nil {
				r.warnings = append(r.warnings, fmt.Errorf("symbol %s: %w", name, err))
				continue
			}
			s.Version = ver
			hidden = append(hidden, h)
		}
		out = append(out, s)
	}
	return out, hidden, nil
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

// tableReader reads the tables of one File for one call of Read. It
// reads each string table once: .dynsym and the version sections share
// .dynstr.
type tableReader struct {
	f        *elfnotes.File
	strs     map[*elfnotes.Section]string
	warnings []error
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

// table reads the symbol table section s (and, for .dynsym, its versions).
func (r *tableReader) table(s *elfnotes.Section, src Source) (*symTable, error) {
	strtab, err := r.strtab(s)
	if err != nil {
		return nil, err
	}
	data, err := s.Data()
	if err != nil {
		return nil, err
	}
	t := &symTable{data: data, off: s.Offset, entsize: s.Entsize, strtab: strtab, src: src}
	if src == SourceDynsym {
		n := 0
		if size := symEntSize(r.f.Class); size > 0 {
			n = len(data) / size
		}
		if t.vers, err = r.versions(s, n); err != nil {
			return nil, err
		}
	}
	return t, nil
}

// newFormatError returns an *elfnotes.FormatError at file offset off.
func newFormatError(off uint64, msg string, val any) error {
	if off > math.MaxInt64 {
		off = math.MaxInt64
	}
	return &elfnotes.FormatError{Off: int64(off), Msg: msg, Val: val}
}
