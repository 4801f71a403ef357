package elfnotes

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
)

// Sizes of the fixed ELF structures, from the gABI "ELF Header", "Sections"
// and "Program Header" chapters.
const (
	identSize = 16 // e_ident
	ehdr32    = 52
	ehdr64    = 64
	shdr32    = 40
	shdr64    = 64
	phdr32    = 32
	phdr64    = 56

	// Extended numbering (gABI): when a count does not fit its 16-bit field,
	// the real value lives in section header 0.
	shnXIndex = 0xffff // e_shstrndx escape; real index in sh_link of section 0
	pnXNum    = 0xffff // e_phnum escape; real count in sh_info of section 0

	// readChunk bounds a single allocation when the size of the underlying
	// reader is unknown: buffers grow only as data actually arrives.
	readChunk = 1 << 20

	// maxSectionName bounds the length of a section name; real ones are
	// at most a few dozen bytes.
	maxSectionName = 4 << 10

	// maxProgs and maxSections bound the header tables, whose counts may
	// come from the 32- and 64-bit fields of section header 0. Linked
	// files have a few dozen of each; objects built with
	// -ffunction-sections may have tens of thousands of sections.
	maxProgs    = 1 << 16
	maxSections = 1 << 18
)

// A File is an ELF file whose headers have been parsed. Section and segment
// contents are read on demand through the io.ReaderAt it was built from.
//
// All fields are set by [NewFile] or [Open] and must not be modified
// afterwards. Methods of a File are safe for concurrent use as long as the
// underlying io.ReaderAt is (an *os.File is); Close must not race with them.
type File struct {
	Class     elf.Class
	Data      elf.Data
	ByteOrder binary.ByteOrder
	OSABI     elf.OSABI
	Machine   elf.Machine
	Type      elf.Type
	Entry     uint64
	Sections  []*Section // in header order; Sections[0] is the SHT_NULL entry when present
	Progs     []*Prog

	r        io.ReaderAt
	size     int64 // size of r in bytes, or -1 when it cannot be determined
	closer   io.Closer
	warnings []error
}

// A Section is one entry of the section header table. Its contents are not
// read until Data or Open is called.
type Section struct {
	Name    string
	Type    elf.SectionType
	Flags   elf.SectionFlag
	Addr    uint64
	Offset  uint64
	Size    uint64
	Align   uint64 // sh_addralign
	Link    uint32
	Info    uint32
	Entsize uint64

	f *File
}

// A Prog is one entry of the program header table.
type Prog struct {
	Type   elf.ProgType
	Flags  elf.ProgFlag
	Off    uint64
	Vaddr  uint64
	Paddr  uint64
	Filesz uint64
	Memsz  uint64
	Align  uint64

	f *File
}

// Open opens the named file and parses its ELF headers. The returned File
// keeps the file descriptor open; the caller must call [File.Close].
func Open(path string) (*File, error) {
	fd, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	f, err := NewFile(fd)
	if err != nil {
		fd.Close()
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	f.closer = fd
	return f, nil
}

// NewFile parses the ELF header, section headers, section name table and
// program headers read from r. Nothing else is read until asked for.
//
// When r has a Size() int64 method or is an *os.File, every offset and count
// is checked against that size before anything is allocated; otherwise
// buffers grow only as data is actually read. Malformed input gives a
// *[FormatError]. The File does not take ownership of r.
func NewFile(r io.ReaderAt) (*File, error) {
	f := &File{r: r, size: readerSize(r)}
	if err := f.parse(); err != nil {
		return nil, err
	}
	return f, nil
}

// Close closes the file opened by [Open]. It is a no-op for a File from
// [NewFile], and calling it again returns nil.
func (f *File) Close() error {
	c := f.closer
	if c == nil {
		return nil
	}
	f.closer = nil
	return c.Close()
}

// Warnings returns the damage [NewFile] passed over in the headers, one
// *[FormatError] with its file offset each: a section whose name cannot be
// read (outside the section name table, not NUL-terminated) gets the name
// "", and so does every section when the section name table itself cannot
// be read. A File with damaged headers is still usable: its sections are
// found by type, and [File.Section] does not find the unnamed ones. The
// slice is shared; callers must not modify it.
func (f *File) Warnings() []error { return f.warnings }

// Section returns the first section with the given name, or nil.
func (f *File) Section(name string) *Section {
	for _, s := range f.Sections {
		if s.Name == name {
			return s
		}
	}
	return nil
}

// Data reads and returns the contents of the section. A SHT_NOBITS section
// has no contents in the file and returns nil, nil. A section reaching past
// the end of the file gives a *[FormatError].
func (s *Section) Data() ([]byte, error) {
	if s.Type == elf.SHT_NOBITS {
		return nil, nil
	}
	return s.f.read(s.Offset, s.Size, "section "+s.Name)
}

// Open returns a new reader over the section's contents. It is empty for a
// SHT_NOBITS section; when the section reaches past the end of the file (or
// its offset does not fit an int64), every Read and Seek returns a
// *[FormatError].
func (s *Section) Open() io.ReadSeeker {
	if s.Type == elf.SHT_NOBITS {
		return bytes.NewReader(nil)
	}
	return s.f.open(s.Offset, s.Size, "section "+s.Name)
}

// Open returns a new reader over the segment's file contents (Filesz bytes
// at Off), with the same error behaviour as [Section.Open].
func (p *Prog) Open() io.ReadSeeker {
	return p.f.open(p.Off, p.Filesz, "segment "+p.Type.String())
}

func (f *File) open(off, n uint64, what string) io.ReadSeeker {
	if err := f.checkRange(off, n, what); err != nil {
		return errReader{err}
	}
	if n == 0 {
		return bytes.NewReader(nil)
	}
	return io.NewSectionReader(f.r, int64(off), int64(n))
}

// errReader is the reader [Section.Open] returns for a section whose bytes
// cannot be in the file.
type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error)       { return 0, e.err }
func (e errReader) Seek(int64, int) (int64, error) { return 0, e.err }

// readerSize reports the size of r, or -1 when unknown.
func readerSize(r io.ReaderAt) int64 {
	switch r := r.(type) {
	case interface{ Size() int64 }:
		return r.Size()
	case *os.File:
		if fi, err := r.Stat(); err == nil && fi.Mode().IsRegular() {
			return fi.Size()
		}
	}
	return -1
}

// checkRange verifies that n bytes at off lie inside the file, as far as its
// size is known, and fit the int64 offsets of io.ReaderAt.
func (f *File) checkRange(off, n uint64, what string) error {
	if n == 0 {
		// An empty section or segment may have any offset (linkers leave
		// them at the end of the file or at 0); there is nothing to read.
		return nil
	}
	end := off + n
	if end < off || end > math.MaxInt64 {
		return formatErr(clampOff(off), what+" offset overflows", n)
	}
	if f.size >= 0 && end > uint64(f.size) {
		return formatErr(clampOff(off), what+" extends past end of file", fmt.Sprintf("%#x+%#x > %#x", off, n, f.size))
	}
	return nil
}

// read returns n bytes at off. The allocation never exceeds the file size
// when that is known, and otherwise grows with the data actually read.
func (f *File) read(off, n uint64, what string) ([]byte, error) {
	if err := f.checkRange(off, n, what); err != nil {
		return nil, err
	}
	if n == 0 {
		return []byte{}, nil
	}
	if f.size >= 0 || n <= readChunk {
		buf := make([]byte, n)
		if err := f.readFull(buf, int64(off), what); err != nil {
			return nil, err
		}
		return buf, nil
	}
	var buf []byte
	for done := uint64(0); done < n; {
		c := min(n-done, readChunk)
		if uint64(cap(buf)) < done+c {
			nb := make([]byte, done+c, max(2*uint64(cap(buf)), done+c))
			copy(nb, buf)
			buf = nb
		}
		buf = buf[:done+c]
		if err := f.readFull(buf[done:done+c], int64(off+done), what); err != nil {
			return nil, err
		}
		done += c
	}
	return buf, nil
}

// readTable reads n entries of entsize bytes at off and returns the first
// size bytes of each, packed: an entry larger than this package decodes
// costs no memory for the bytes it does not read.
func (f *File) readTable(off, n, entsize, size uint64, what string) ([]byte, error) {
	if entsize == size {
		return f.read(off, n*size, what)
	}
	// The caller checked that n*entsize does not overflow.
	if err := f.checkRange(off, n*entsize, what); err != nil {
		return nil, err
	}
	if f.size < 0 && n > 0 {
		// Without the file's size, the table's last byte says whether it
		// fits, as checkRange says with the size: entries past the part
		// read must be in the file too.
		if _, err := f.read(off+n*entsize-1, 1, what); err != nil {
			return nil, err
		}
	}
	var tab []byte
	for i := range n {
		e, err := f.read(off+i*entsize, size, what)
		if err != nil {
			return nil, err
		}
		tab = append(tab, e...)
	}
	return tab, nil
}

func (f *File) readFull(buf []byte, off int64, what string) error {
	n, err := f.r.ReadAt(buf, off)
	if n == len(buf) {
		return nil
	}
	if err == nil || err == io.EOF {
		return formatErr(off, what+" truncated", fmt.Sprintf("%#x of %#x bytes", n, len(buf)))
	}
	return fmt.Errorf("read %s: %w", what, err)
}

func clampOff(off uint64) int64 {
	if off > math.MaxInt64 {
		return math.MaxInt64
	}
	return int64(off)
}

func (f *File) parse() error {
	var ident [identSize]byte
	if n, _ := f.r.ReadAt(ident[:4], 0); n < 4 || string(ident[:4]) != elf.ELFMAG {
		return &FormatError{Off: 0, Msg: "bad magic number", Val: fmt.Sprintf("%x", ident[:n]), Err: ErrNotELF}
	}
	if err := f.readFull(ident[:], 0, "ELF identification"); err != nil {
		return err
	}
	f.Class = elf.Class(ident[elf.EI_CLASS])
	if f.Class != elf.ELFCLASS32 && f.Class != elf.ELFCLASS64 {
		return formatErr(elf.EI_CLASS, "unknown ELF class", f.Class)
	}
	f.Data = elf.Data(ident[elf.EI_DATA])
	switch f.Data {
	case elf.ELFDATA2LSB:
		f.ByteOrder = binary.LittleEndian
	case elf.ELFDATA2MSB:
		f.ByteOrder = binary.BigEndian
	default:
		return formatErr(elf.EI_DATA, "unknown ELF data encoding", f.Data)
	}
	if v := elf.Version(ident[elf.EI_VERSION]); v != elf.EV_CURRENT {
		return formatErr(elf.EI_VERSION, "unknown ELF version", v)
	}
	f.OSABI = elf.OSABI(ident[elf.EI_OSABI])

	is64 := f.Class == elf.ELFCLASS64
	hsize := uint64(ehdr32)
	if is64 {
		hsize = ehdr64
	}
	hdr, err := f.read(0, hsize, "ELF header")
	if err != nil {
		return err
	}
	bo := f.ByteOrder
	f.Type = elf.Type(bo.Uint16(hdr[16:]))
	f.Machine = elf.Machine(bo.Uint16(hdr[18:]))
	var (
		phoff, shoff                 uint64
		phentsize, phnum             uint64
		shentsize, shnum, shstrndx   uint64
		phentOff, shentOff, shstrOff int64
	)
	if is64 {
		f.Entry = bo.Uint64(hdr[24:])
		phoff = bo.Uint64(hdr[32:])
		shoff = bo.Uint64(hdr[40:])
		phentsize, phnum = uint64(bo.Uint16(hdr[54:])), uint64(bo.Uint16(hdr[56:]))
		shentsize, shnum = uint64(bo.Uint16(hdr[58:])), uint64(bo.Uint16(hdr[60:]))
		shstrndx = uint64(bo.Uint16(hdr[62:]))
		phentOff, shentOff, shstrOff = 54, 58, 62
	} else {
		f.Entry = uint64(bo.Uint32(hdr[24:]))
		phoff = uint64(bo.Uint32(hdr[28:]))
		shoff = uint64(bo.Uint32(hdr[32:]))
		phentsize, phnum = uint64(bo.Uint16(hdr[42:])), uint64(bo.Uint16(hdr[44:]))
		shentsize, shnum = uint64(bo.Uint16(hdr[46:])), uint64(bo.Uint16(hdr[48:]))
		shstrndx = uint64(bo.Uint16(hdr[50:]))
		phentOff, shentOff, shstrOff = 42, 46, 50
	}

	minSh, minPh := uint64(shdr32), uint64(phdr32)
	if is64 {
		minSh, minPh = shdr64, phdr64
	}

	// Section header 0 carries the real counts when they overflow the
	// 16-bit fields (gABI "Extended Section Header Numbering").
	if shoff != 0 && (shnum == 0 || shstrndx == shnXIndex || phnum == pnXNum) {
		if shentsize < minSh {
			return formatErr(shentOff, "section header entry too small", shentsize)
		}
		s0, err := f.read(shoff, minSh, "section header 0")
		if err != nil {
			return err
		}
		sec0 := f.decodeSection(s0)
		if shnum == 0 {
			shnum = sec0.Size
		}
		if shstrndx == shnXIndex {
			shstrndx = uint64(sec0.Link)
		}
		if phnum == pnXNum {
			phnum = uint64(sec0.Info)
		}
	}
	if shoff == 0 {
		shnum = 0
	}

	if phnum > 0 {
		if phentsize < minPh {
			return formatErr(phentOff, "program header entry too small", phentsize)
		}
		if phnum > math.MaxUint64/phentsize {
			return formatErr(phentOff, "program header table size overflows", phnum)
		}
		if phnum > maxProgs {
			return formatErr(clampOff(phoff), "too many program headers", phnum)
		}
		tab, err := f.readTable(phoff, phnum, phentsize, minPh, "program header table")
		if err != nil {
			return err
		}
		f.Progs = make([]*Prog, phnum)
		for i := range f.Progs {
			f.Progs[i] = f.decodeProg(tab[uint64(i)*minPh:])
		}
	}

	if shnum == 0 {
		return nil
	}
	if shentsize < minSh {
		return formatErr(shentOff, "section header entry too small", shentsize)
	}
	if shnum > math.MaxUint64/shentsize {
		return formatErr(shentOff, "section header table size overflows", shnum)
	}
	if shnum > maxSections {
		return formatErr(clampOff(shoff), "too many section headers", shnum)
	}
	tab, err := f.readTable(shoff, shnum, shentsize, minSh, "section header table")
	if err != nil {
		return err
	}
	f.Sections = make([]*Section, shnum)
	names := make([]uint32, shnum)
	for i := range f.Sections {
		b := tab[uint64(i)*minSh:]
		names[i] = bo.Uint32(b)
		f.Sections[i] = f.decodeSection(b)
	}

	if shstrndx == uint64(elf.SHN_UNDEF) {
		return nil
	}
	// Damage to the names is passed over with a warning, as readelf
	// does: the sections are still found by type.
	if shstrndx >= shnum {
		f.warnings = append(f.warnings, formatErr(shstrOff, "section name table index out of range", shstrndx))
		return nil
	}
	// Read only as much of the table as the names need, not the size it
	// claims.
	var maxOff uint64
	for _, n := range names {
		maxOff = max(maxOff, uint64(n))
	}
	st := f.Sections[shstrndx]
	var strtab []byte
	if st.Type != elf.SHT_NOBITS {
		strtab, err = f.read(st.Offset, min(st.Size, maxOff+maxSectionName), "section name table")
	}
	var fe *FormatError
	if errors.As(err, &fe) {
		f.warnings = append(f.warnings, fmt.Errorf("section name table: %w", err))
		return nil
	}
	if err != nil {
		return err
	}
	// One string for the whole table: names are substrings of it.
	str := string(strtab)
	for i, s := range f.Sections {
		off := uint64(names[i])
		if off == 0 {
			continue
		}
		hdrOff := clampOff(shoff + uint64(i)*shentsize)
		if off >= uint64(len(str)) {
			f.warnings = append(f.warnings, formatErr(hdrOff, fmt.Sprintf("section %d: name offset out of range", i), off))
			continue
		}
		end := bytes.IndexByte(strtab[off:], 0)
		if end < 0 {
			f.warnings = append(f.warnings, formatErr(hdrOff, fmt.Sprintf("section %d: name not NUL-terminated", i), off))
			continue
		}
		s.Name = str[off : off+uint64(end)]
	}
	return nil
}

// decodeSection decodes one section header, except its name; b holds at
// least one full header.
func (f *File) decodeSection(b []byte) *Section {
	bo := f.ByteOrder
	if f.Class == elf.ELFCLASS64 {
		return &Section{
			Type:    elf.SectionType(bo.Uint32(b[4:])),
			Flags:   elf.SectionFlag(bo.Uint64(b[8:])),
			Addr:    bo.Uint64(b[16:]),
			Offset:  bo.Uint64(b[24:]),
			Size:    bo.Uint64(b[32:]),
			Link:    bo.Uint32(b[40:]),
			Info:    bo.Uint32(b[44:]),
			Align:   bo.Uint64(b[48:]),
			Entsize: bo.Uint64(b[56:]),
			f:       f,
		}
	}
	return &Section{
		Type:    elf.SectionType(bo.Uint32(b[4:])),
		Flags:   elf.SectionFlag(bo.Uint32(b[8:])),
		Addr:    uint64(bo.Uint32(b[12:])),
		Offset:  uint64(bo.Uint32(b[16:])),
		Size:    uint64(bo.Uint32(b[20:])),
		Link:    bo.Uint32(b[24:]),
		Info:    bo.Uint32(b[28:]),
		Align:   uint64(bo.Uint32(b[32:])),
		Entsize: uint64(bo.Uint32(b[36:])),
		f:       f,
	}
}

// decodeProg decodes one program header; b holds at least one full header.
func (f *File) decodeProg(b []byte) *Prog {
	bo := f.ByteOrder
	if f.Class == elf.ELFCLASS64 {
		return &Prog{
			Type:   elf.ProgType(bo.Uint32(b[0:])),
			Flags:  elf.ProgFlag(bo.Uint32(b[4:])),
			Off:    bo.Uint64(b[8:]),
			Vaddr:  bo.Uint64(b[16:]),
			Paddr:  bo.Uint64(b[24:]),
			Filesz: bo.Uint64(b[32:]),
			Memsz:  bo.Uint64(b[40:]),
			Align:  bo.Uint64(b[48:]),
			f:      f,
		}
	}
	return &Prog{
		Type:   elf.ProgType(bo.Uint32(b[0:])),
		Off:    uint64(bo.Uint32(b[4:])),
		Vaddr:  uint64(bo.Uint32(b[8:])),
		Paddr:  uint64(bo.Uint32(b[12:])),
		Filesz: uint64(bo.Uint32(b[16:])),
		Memsz:  uint64(bo.Uint32(b[20:])),
		Flags:  elf.ProgFlag(bo.Uint32(b[24:])),
		Align:  uint64(bo.Uint32(b[28:])),
		f:      f,
	}
}
