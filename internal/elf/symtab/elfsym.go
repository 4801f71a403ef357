package symtab

import (
	"debug/elf"
	"fmt"
	"io"
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

// Limits on what reading one table examines, whatever sizes the file
// claims. Real tables stay far below them.
const (
	// maxSymbols bounds the entries read from one symbol table.
	maxSymbols = 1 << 23
	// maxStringTable bounds the bytes read from one string table: a name
	// must start below it.
	maxStringTable = 256 << 20
	// maxVersionSection bounds the size of a .gnu.version_d or
	// .gnu.version_r section.
	maxVersionSection = 1 << 20
	// symChunk is the number of entries read at a time.
	symChunk = 1024
)

// symTable is one symbol table section, ready to decode.
type symTable struct {
	sec     *elfnotes.Section
	off     uint64 // file offset of the section
	entsize uint64 // sh_entsize; 0 means "not given" and is accepted
	strtab  *strTab
	src     Source
	vers    *versions // .dynsym only; nil if none
}

// entries returns the number of entries of t to read, after checking the
// entry size, and adds a warning to r when the table has more than
// maxSymbols.
func (r *tableReader) entries(t *symTable) (int, error) {
	size := symEntSize(r.f.Class)
	if size == 0 {
		return 0, newFormatError(t.off, "unknown ELF class", r.f.Class)
	}
	if t.entsize != 0 && t.entsize != uint64(size) {
		return 0, newFormatError(t.off, "symbol table entry size mismatch", t.entsize)
	}
	if t.sec.Size%uint64(size) != 0 {
		return 0, newFormatError(t.off, "symbol table size is not a multiple of the entry size", t.sec.Size)
	}
	n := t.sec.Size / uint64(size)
	if n > maxSymbols {
		r.warnings = append(r.warnings, newFormatError(t.off+maxSymbols*uint64(size), fmt.Sprintf("%s: more than %d symbols; the rest are not read", t.sec.Name, maxSymbols), n))
		n = maxSymbols
	}
	return int(n), nil
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
	n, err := r.entries(t)
	if err != nil || n == 0 {
		return out, nil, err
	}
	// Entries are read a chunk at a time, twice: first to count the
	// defined ones, then to keep them. What is kept is bounded by the
	// defined symbols, not by the size the section claims.
	buf := make([]byte, min(n, symChunk)*size)
	shndx := 14 // st_shndx in Elf32_Sym
	if class == elf.ELFCLASS64 {
		shndx = 6
	}
	defined := 0
	if r.keep == nil {
		// Keeping a few symbols by name, counting would cost a second
		// pass for nothing.
		if err := t.chunks(n, size, buf, func(_ int, chunk []byte) {
			for e := chunk; len(e) >= size; e = e[size:] {
				if order.Uint16(e[shndx:]) != uint16(elf.SHN_UNDEF) && order.Uint32(e) != 0 {
					defined++
				}
			}
		}); err != nil {
			return nil, nil, err
		}
		out = slices.Grow(out, defined+r.reserve)
	}
	var strErr error // reading the string table failed
	var hidden []bool
	if t.vers != nil {
		hidden = make([]bool, 0, defined)
	}
	err = t.chunks(n, size, buf, func(first int, chunk []byte) {
		for j := range len(chunk) / size {
			i := first + j
			if i == 0 {
				continue // the reserved null symbol
			}
			e := chunk[j*size : (j+1)*size]
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
			if strErr != nil {
				return
			}
			name, msg, err := t.strtab.cstring(nameOff)
			if err != nil {
				strErr = err
				return
			}
			if msg != "" {
				r.warnings = append(r.warnings, newFormatError(entOff, fmt.Sprintf("%s symbol %d: name %s", t.src, i, msg), nameOff))
				continue
			}
			if name == "" || (r.keep != nil && !r.keep(PlainName(name))) {
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
	})
	if err == nil {
		err = strErr
	}
	if err != nil {
		return nil, nil, err
	}
	return out, hidden, nil
}

// chunks reads the first n entries of t, of size bytes each, into buf a
// chunk at a time and calls fn with the index of each chunk's first entry.
func (t *symTable) chunks(n, size int, buf []byte, fn func(first int, chunk []byte)) error {
	sr := t.sec.Open()
	for first := 0; first < n; first += symChunk {
		chunk := buf[:min(n-first, symChunk)*size]
		if _, err := io.ReadFull(sr, chunk); err != nil {
			if err == io.EOF || err == io.ErrUnexpectedEOF {
				err = newFormatError(t.off+uint64(first*size), "symbol table truncated", nil)
			}
			return err
		}
		fn(first, chunk)
	}
	return nil
}

// strTab is a string table read lazily: as far as the names looked up
// need, and never past maxStringTable bytes, whatever size it claims.
type strTab struct {
	sec  *elfnotes.Section
	data string // the first len(data) bytes of the table
}

// cstring returns the NUL-terminated string at off, or a reason why there
// is none. The error is one of reading the table.
func (t *strTab) cstring(off uint32) (s, msg string, err error) {
	size := t.sec.Size
	if t.sec.Type == elf.SHT_NOBITS {
		size = 0
	}
	if uint64(off) >= size {
		return "", "offset out of range of the string table", nil
	}
	if uint64(off) >= maxStringTable {
		return "", "offset past the limit on string tables", nil
	}
	limit := min(size, maxStringTable)
	for {
		if uint64(off) < uint64(len(t.data)) {
			if i := strings.IndexByte(t.data[off:], 0); i >= 0 {
				return t.data[off : int(off)+i], "", nil
			}
		}
		if uint64(len(t.data)) >= limit {
			return "", "not NUL-terminated", nil
		}
		// Grow at least twofold, so that the table is read O(1) times.
		n := min(limit, max(uint64(off)+4096, 2*uint64(len(t.data)), 64<<10))
		buf := make([]byte, n)
		if _, err := io.ReadFull(t.sec.Open(), buf); err != nil {
			if err == io.EOF || err == io.ErrUnexpectedEOF {
				err = newFormatError(t.sec.Offset, "string table truncated", nil)
			}
			return "", "", err
		}
		t.data = string(buf)
	}
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
	f *elfnotes.File
	// keep selects symbols by plain name (ReadOptions.Keep); nil keeps all.
	keep func(plain string) bool
	// reserve is room appendSyms makes in its result for symbols that
	// will be appended to it, beyond the defined entries of its table.
	reserve  int
	strs     map[*elfnotes.Section]*strTab
	warnings []error
}

// strtab returns the string table linked from s.
func (r *tableReader) strtab(s *elfnotes.Section) (*strTab, error) {
	str, err := linked(r.f, s)
	if err != nil {
		return nil, err
	}
	if str.Type != elf.SHT_STRTAB {
		return nil, newFormatError(str.Offset, "linked section is not a string table", str.Type)
	}
	if t, ok := r.strs[str]; ok {
		return t, nil
	}
	if r.strs == nil {
		r.strs = make(map[*elfnotes.Section]*strTab, 2)
	}
	t := &strTab{sec: str}
	r.strs[str] = t
	return t, nil
}

// table prepares the symbol table section s (and, for .dynsym, reads its
// versions).
func (r *tableReader) table(s *elfnotes.Section, src Source) (*symTable, error) {
	strtab, err := r.strtab(s)
	if err != nil {
		return nil, err
	}
	t := &symTable{sec: s, off: s.Offset, entsize: s.Entsize, strtab: strtab, src: src}
	if s.Type == elf.SHT_NOBITS {
		return nil, newFormatError(s.Offset, "symbol table has no contents (SHT_NOBITS)", nil)
	}
	if src == SourceDynsym {
		n := 0
		if size := symEntSize(r.f.Class); size > 0 {
			n = int(min(s.Size/uint64(size), maxSymbols))
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
