package postlink

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/usdtkit/usdtkit/dynsdt"
	"github.com/usdtkit/usdtkit/dynsdt/gen"
	"github.com/usdtkit/usdtkit/elfnotes"
	"github.com/usdtkit/usdtkit/uprobe"
)

// Options are the step's choices; nil means the zero value.
type Options struct {
	// Site is the kind of probe site the amd64 stubs get (see "Sites").
	// SiteAuto, the default, is dynsdt.ResolveSite's choice on the machine
	// that runs the step (the USDTKIT_SITE environment variable, else the
	// kind that suits its kernel).
	Site dynsdt.Site
}

// Result says what the step found and did.
type Result struct {
	// Site is the kind of site the amd64 stubs have after the step; the
	// zero SiteAuto for arm64, for a file without probes, and when
	// Options.Site was SiteAuto and some stub was not one the step can
	// rewrite (from another usdtkit's gen --static), which it then leaves
	// as it is. With another Options.Site such a stub is an error.
	Site dynsdt.Site
	// Rewritten counts the stubs whose site the step changed.
	Rewritten int
	// Probes are the notes of static probes, in table order.
	Probes []elfnotes.Stapsdt
	// Missing names the probes whose stubs the linker left out (their
	// functions are never called), "provider:name".
	Missing []string
	// Changed reports that the file was rewritten; false when it had no
	// tables or already had exactly these notes and stubs.
	Changed bool
}

// ErrNotSupported is wrapped by the error for a file with static probe
// tables that the step cannot process (not ELF64 little-endian, a machine
// other than x86-64 and arm64, too many sections).
var ErrNotSupported = errors.New("not supported")

// File runs the step on the executable at path; opts may be nil (the
// default Options).
// The step appends to the file, writes the stubs whose site kind changes
// (16 bytes each, x86-64 only) and then rewrites its ELF header to point
// at what it appended, so it changes the file in place: a reader sees the
// old file or the new one, and an interrupted step leaves a longer file
// that reads as before (short of a machine crash that writes the header
// but not the rest); its stubs may then be of two kinds, each a whole
// stub with the site where the notes say, so the program runs as before.
// No process can start the file while the step has it open for writing
// (the kernel refuses with ETXTBSY), so none runs a stub half written.
// A file that cannot be written in place (an executable that is running:
// ETXTBSY) is replaced instead: a new file, with its mode, with the same
// changes, renamed over it.
//
// File reads only what the step needs (the headers, the symbol table and
// the tables it names or, without a symbol table, the writable data and
// .gopclntab, the notes and the stubs), never the whole file, and writes
// only the appended bytes, the changed stubs and the header.
func File(path string, opts *Options) (*Result, error) {
	// A symlink's target is the executable: it is changed, and the link
	// stays a link.
	path, err := filepath.EvalSymlinks(path)
	if err != nil {
		return nil, err
	}
	in, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer in.Close()
	st, err := in.Stat()
	if err != nil {
		return nil, err
	}
	im, res, err := plan(in, st.Size(), opts)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if im == nil {
		return res, nil
	}
	attrs, err := readXattrs(in)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	err = im.writeInPlace(path)
	if errors.Is(err, syscall.ETXTBSY) {
		// A running executable cannot be written: a new file takes its
		// place, which would split its hard links.
		if sys, ok := st.Sys().(*syscall.Stat_t); ok && sys.Nlink > 1 {
			return nil, fmt.Errorf("%s is running and has %d hard links, which replacing it would split: run the step when it is not running", path, sys.Nlink)
		}
		return res, im.replace(path, in, st, attrs)
	}
	if err == nil {
		// The kernel drops file capabilities (security.capability) at a
		// write; the file keeps the ones it had.
		err = restoreCapabilities(path, attrs)
	}
	return res, err
}

// xattr is an extended attribute of a file.
type xattr struct {
	name  string
	value []byte
}

// maxXattrs bounds what readXattrs reads: the kernel's own limit on a
// list and on a value is 64 KiB.
const maxXattrs = 64 << 10

// readXattrs returns the extended attributes of f (file capabilities,
// security labels, user attributes); none where the file system has
// none.
func readXattrs(f *os.File) ([]xattr, error) {
	fd := int(f.Fd())
	names := make([]byte, maxXattrs)
	n, err := unix.Flistxattr(fd, names)
	if errors.Is(err, unix.ENOTSUP) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list extended attributes: %w", err)
	}
	var out []xattr
	for _, name := range strings.Split(strings.TrimSuffix(string(names[:n]), "\x00"), "\x00") {
		if name == "" {
			continue
		}
		v := make([]byte, maxXattrs)
		m, err := unix.Fgetxattr(fd, name, v)
		if err != nil {
			return nil, fmt.Errorf("read extended attribute %s: %w", name, err)
		}
		out = append(out, xattr{name, v[:m]})
	}
	return out, nil
}

// restoreCapabilities sets security.capability on the file at path again
// when attrs has it.
func restoreCapabilities(path string, attrs []xattr) error {
	for _, a := range attrs {
		if a.name == "security.capability" {
			if err := unix.Setxattr(path, a.name, a.value, 0); err != nil {
				return fmt.Errorf("%s: restore file capabilities: %w", path, err)
			}
		}
	}
	return nil
}

// ehSize is the size of an ELF64 header.
const ehSize = 0x40

// image is a file as the step changes it: its first size bytes are read
// through r, except for the ELF header, which is hdr, and the patches;
// tail follows them.
type image struct {
	r       io.ReaderAt
	size    uint64
	hdr     [ehSize]byte
	patches []patch
	tail    []byte
}

// patch is bytes b written over the file at off, past the ELF header and
// before the file's end. Patches are applied in order (they overlap only
// in a crafted file, where the last one wins, on disk as in Bytes).
type patch struct {
	off uint64
	b   []byte
}

// read returns n bytes at off of the image, which must lie either in the
// file as it was or in the tail. The bytes are the caller's.
func (im *image) read(off, n uint64) ([]byte, error) {
	end := im.size + uint64(len(im.tail))
	if off > end || n > end-off {
		return nil, fmt.Errorf("%d bytes at %#x beyond the file's %d", n, off, end)
	}
	if n == 0 {
		return nil, nil
	}
	if off >= im.size {
		return slices.Clone(im.tail[off-im.size : off-im.size+n]), nil
	}
	if n > im.size-off || off < ehSize {
		// Only the step's own headers and tables are read back; none
		// spans the old end or the ELF header.
		return nil, fmt.Errorf("%d bytes at %#x across the file's end or its ELF header", n, off)
	}
	b := make([]byte, n)
	if err := readAt(im.r, b, off); err != nil {
		return nil, err
	}
	for _, p := range im.patches {
		if p.off < off+n && off < p.off+uint64(len(p.b)) {
			lo, hi := max(p.off, off), min(p.off+uint64(len(p.b)), off+n)
			copy(b[lo-off:hi-off], p.b[lo-p.off:])
		}
	}
	return b, nil
}

// readAt fills b from r at off.
func readAt(r io.ReaderAt, b []byte, off uint64) error {
	if off > math.MaxInt64 {
		return fmt.Errorf("offset %#x", off)
	}
	n, err := r.ReadAt(b, int64(off))
	if n == len(b) {
		return nil
	}
	if err == nil || err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	return fmt.Errorf("read %d bytes at %#x: %w", len(b), off, err)
}

// writeInPlace appends the tail to the file at path, then writes the
// patches and the header.
func (im *image) writeInPlace(path string) error {
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	// No fsync between the writes, as the go command does not sync what
	// it links either.
	err = im.writeChanges(f)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// writeChanges writes the tail at the file's old end, then the patches,
// then the header (when there is a tail for it to point at) to w, which
// holds the file as it was.
func (im *image) writeChanges(w io.WriterAt) error {
	if len(im.tail) > 0 {
		if _, err := w.WriteAt(im.tail, int64(im.size)); err != nil {
			return err
		}
	}
	for _, p := range im.patches {
		if _, err := w.WriteAt(p.b, int64(p.off)); err != nil {
			return err
		}
	}
	if len(im.tail) > 0 {
		if _, err := w.WriteAt(im.hdr[:], 0); err != nil {
			return err
		}
	}
	return nil
}

// replace writes the image to a new file beside path with the owner, mode
// (setuid and setgid included) and extended attributes (capabilities) of
// the file as it was, in (st), and renames it over path.
func (im *image) replace(path string, in *os.File, st os.FileInfo, attrs []xattr) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".usdtkit-*")
	if err != nil {
		return err
	}
	// in was read with ReadAt only: its offset is 0. A LimitedReader
	// over an *os.File lets io.Copy use copy_file_range.
	_, err = io.Copy(tmp, io.LimitReader(in, int64(im.size)))
	if err == nil {
		err = im.writeChanges(tmp)
	}
	if sys, ok := st.Sys().(*syscall.Stat_t); ok && err == nil {
		// Before the mode: a change of owner clears setuid.
		err = tmp.Chown(int(sys.Uid), int(sys.Gid))
	}
	if err == nil {
		err = tmp.Chmod(st.Mode() & (os.ModePerm | os.ModeSetuid | os.ModeSetgid | os.ModeSticky))
	}
	for _, a := range attrs {
		if err == nil {
			if err = unix.Fsetxattr(int(tmp.Fd()), a.name, a.value, 0); err != nil {
				err = fmt.Errorf("copy extended attribute %s: %w", a.name, err)
			}
		}
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		os.Remove(tmp.Name())
	}
	return err
}

// Bytes runs the step on an executable's contents (opts may be nil: the
// default Options) and returns the new contents (data itself when nothing
// changes). It never modifies data: a changed file is a new slice.
func Bytes(data []byte, opts *Options) ([]byte, *Result, error) {
	im, res, err := plan(bytes.NewReader(data), int64(len(data)), opts)
	if err != nil {
		return nil, nil, err
	}
	if im == nil {
		return data, res, nil
	}
	return im.apply(data), res, nil
}

// plan runs the step on the file of size bytes that r reads and returns
// what to write, or nil when nothing changes.
func plan(r io.ReaderAt, size int64, opts *Options) (*image, *Result, error) {
	var want dynsdt.Site
	if opts != nil {
		want = opts.Site
	}
	f, err := elfnotes.NewFile(r)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	res := &Result{}
	st := readSymtab(f)
	tables, err := findTables(f, st, r, uint64(size))
	if err != nil {
		return nil, nil, err
	}
	if len(tables) == 0 {
		return nil, res, nil
	}
	if f.Class != elf.ELFCLASS64 || f.Data != elf.ELFDATA2LSB || (f.Machine != elf.EM_X86_64 && f.Machine != elf.EM_AARCH64) {
		return nil, nil, fmt.Errorf("%v %v %v: %w", f.Class, f.ByteOrder, f.Machine, ErrNotSupported)
	}
	stubs, err := stubAddrs(f, st, tables)
	if err != nil {
		return nil, nil, err
	}
	ours := make(map[uint64]bool)
	for _, t := range tables {
		for i, pr := range t.Probes {
			pc, ok := stubs[t.Stub(i)]
			if !ok {
				res.Missing = append(res.Missing, t.Provider+":"+pr.Name)
				continue
			}
			args, err := dynsdt.StaticArgs(f.Machine, pr.Args)
			if err != nil {
				return nil, nil, err
			}
			res.Probes = append(res.Probes, elfnotes.Stapsdt{
				PC: pc, Semaphore: t.addr + uint64(t.Sems) + 2*uint64(i),
				Provider: t.Provider, Name: pr.Name, Args: args,
			})
			ours[pc] = true
		}
	}
	im := &image{r: r, size: uint64(size)}
	if err := readAt(r, im.hdr[:], 0); err != nil {
		return nil, nil, err
	}
	if f.Machine == elf.EM_X86_64 && len(ours) > 0 {
		site, err := dynsdt.ResolveSite(want)
		if err != nil {
			return nil, nil, err
		}
		skipped, err := im.rewriteSites(f, res.Probes, site, want != dynsdt.SiteAuto)
		if err != nil {
			return nil, nil, err
		}
		res.Rewritten = len(im.patches)
		if skipped == 0 {
			res.Site = site
		}
	}
	// The notes already there: others' are kept; if ours are there as
	// they would be written, there is nothing to do.
	old, err := f.SDTProbes()
	if err != nil {
		return nil, nil, fmt.Errorf("the file's SDT notes: %w", err)
	}
	var keep, had []elfnotes.Stapsdt
	for _, p := range old {
		if ours[p.PC] || ours[p.Addr] {
			had = append(had, p.Stapsdt)
		} else {
			keep = append(keep, p.Stapsdt)
		}
	}
	if slices.Equal(had, res.Probes) && f.Section(elfnotes.StapsdtBaseSection) == nil {
		if len(im.patches) == 0 {
			return nil, res, nil
		}
		res.Changed = true
		return im, res, nil
	}
	var notes []byte
	for _, s := range append(keep, res.Probes...) {
		desc := s.AppendDesc(nil, f.Class, f.ByteOrder)
		notes = elfnotes.AppendNote(notes, f.ByteOrder, elfnotes.OwnerStapsdt, elfnotes.NTStapsdt, desc)
	}
	// .probes first: bcc finds .note.stapsdt only among the sections
	// after .probes.
	if probes, ok := probesSection(f, tables, uint64(size)); ok {
		if err := im.putSection(probes); err != nil {
			return nil, nil, err
		}
	}
	if err := im.putSection(section{name: ".note.stapsdt", typ: elf.SHT_NOTE, align: 4, content: notes}); err != nil {
		return nil, nil, err
	}
	res.Changed = true
	return im, res, nil
}

// table is a static probe table found in the file, at virtual address
// addr.
type table struct {
	*gen.StaticTable
	addr uint64
}

// scanChunk is how much of a section findTables reads at a time.
const scanChunk = 1 << 20

// tableSymbol is the name, without package, of the variable that holds a
// static probe table in the generated code (see gen.Static).
const tableSymbol = "usdtkitSDT"

// findTables returns the static probe tables of the file (size bytes of
// r): the variables its .symtab names PKG.usdtkitSDT that start with
// gen.StaticMagic or, when there is no such symbol (a file without
// .symtab), what scanTables finds.
func findTables(f *elfnotes.File, st *symtab, r io.ReaderAt, size uint64) ([]table, error) {
	var tables []table
	err := st.each(func(name []byte, typ elf.SymType, shndx elf.SectionIndex, value, symSize uint64) error {
		if typ != elf.STT_OBJECT || !bytes.HasSuffix(name, []byte("."+tableSymbol)) || int(shndx) >= len(f.Sections) {
			return nil
		}
		s := f.Sections[shndx]
		if !isData(s) || value < s.Addr || value-s.Addr >= s.Size || symSize < uint64(tableHeader) {
			return nil
		}
		at := value - s.Addr
		if s.Offset > size || s.Size > size-s.Offset {
			return fmt.Errorf("section %s: %d bytes at %#x beyond the file's %d", s.Name, s.Size, s.Offset, size)
		}
		magic := make([]byte, len(gen.StaticMagic))
		if err := readAt(r, magic, s.Offset+at); err != nil || string(magic) != gen.StaticMagic {
			return err
		}
		if slices.ContainsFunc(tables, func(t table) bool { return t.addr == value }) {
			return nil // two names of one table
		}
		t, _, err := readTable(r, s.Offset+at, s.Size-at)
		if err != nil {
			return fmt.Errorf("section %s at %#x (symbol %s): %w", s.Name, s.Offset+at, name, err)
		}
		tables = append(tables, table{t, value})
		return nil
	})
	if err != nil || len(tables) > 0 {
		return tables, err
	}
	return scanTables(f, r, size)
}

// isData reports whether s is allocated, writable and has file contents,
// as the data where static probe tables are.
func isData(s *elfnotes.Section) bool {
	return s.Type == elf.SHT_PROGBITS && s.Flags&elf.SHF_ALLOC != 0 && s.Flags&elf.SHF_WRITE != 0
}

// scanTables scans the allocated, writable sections with file contents
// (size bytes of r) for static probe tables, a chunk at a time.
func scanTables(f *elfnotes.File, r io.ReaderAt, size uint64) ([]table, error) {
	magic := []byte(gen.StaticMagic)
	var tables []table
	var buf []byte
	for _, s := range f.Sections {
		if !isData(s) {
			continue
		}
		if s.Offset > size || s.Size > size-s.Offset {
			return nil, fmt.Errorf("section %s: %d bytes at %#x beyond the file's %d", s.Name, s.Size, s.Offset, size)
		}
		if buf == nil {
			buf = make([]byte, min(scanChunk, size))
		}
		for pos := uint64(0); pos < s.Size; {
			chunk := buf[:min(uint64(len(buf)), s.Size-pos)]
			if err := readAt(r, chunk, s.Offset+pos); err != nil {
				return nil, fmt.Errorf("section %s: %w", s.Name, err)
			}
			k := bytes.Index(chunk, magic)
			if k < 0 {
				if pos+uint64(len(chunk)) == s.Size {
					break
				}
				// The next chunk starts early enough to find a magic
				// that straddles the two.
				pos += uint64(len(chunk) - len(magic) + 1)
				continue
			}
			at := pos + uint64(k)
			t, n, err := readTable(r, s.Offset+at, s.Size-at)
			if err != nil {
				return nil, fmt.Errorf("section %s at %#x: %w", s.Name, s.Offset+at, err)
			}
			tables = append(tables, table{t, s.Addr + at})
			pos = at + uint64(n)
		}
	}
	return tables, nil
}

// tableHeader is the size of a static probe table's header: the magic,
// then the description's length and the probe count, uint32 each.
const tableHeader = len(gen.StaticMagic) + 8

// readTable reads and parses the static probe table at off, of at most
// limit bytes (the rest of its section).
func readTable(r io.ReaderAt, off, limit uint64) (*gen.StaticTable, int, error) {
	hdr := make([]byte, min(uint64(tableHeader), limit))
	if err := readAt(r, hdr, off); err != nil {
		return nil, 0, err
	}
	n := uint64(tableHeader)
	if len(hdr) == tableHeader {
		desc := binary.LittleEndian.Uint32(hdr[len(gen.StaticMagic):])
		count := binary.LittleEndian.Uint32(hdr[len(gen.StaticMagic)+4:])
		n += uint64(desc) + 2*uint64(count)
	}
	// ParseStaticTable reports a table longer than its section.
	b := make([]byte, min(n, limit))
	if err := readAt(r, b, off); err != nil {
		return nil, 0, err
	}
	return gen.ParseStaticTable(b)
}

// stubAddrs returns the addresses of the tables' stubs that the file has,
// by name without package. A stub name found twice (one provider linked
// from two packages) is an error. It looks in .symtab first, without
// building every symbol; a file whose .symtab has none of the stubs (a Go
// executable built with -ldflags=-s has no .symtab) is read with all its
// symbols, .gopclntab's included.
func stubAddrs(f *elfnotes.File, st *symtab, tables []table) (map[string]uint64, error) {
	want := make(map[string]bool)
	for _, t := range tables {
		for i := range t.Probes {
			want[t.Stub(i)] = true
		}
	}
	addrs := make(map[string]uint64)
	add := func(name string, value uint64) error {
		name = strings.TrimSuffix(name, ".abi0")
		dot := strings.LastIndexByte(name, '.')
		if dot < 0 || !want[name[dot+1:]] {
			return nil
		}
		stub := name[dot+1:]
		if a, dup := addrs[stub]; dup && a != value {
			return fmt.Errorf("stub %s at %#x and %#x: a provider's probes are generated into one package only", stub, a, value)
		}
		addrs[stub] = value
		return nil
	}
	err := st.each(func(name []byte, typ elf.SymType, shndx elf.SectionIndex, value, _ uint64) error {
		if typ != elf.STT_FUNC || shndx == elf.SHN_UNDEF || !bytes.Contains(name, []byte(stubPrefix)) {
			return nil
		}
		return add(string(name), value)
	})
	if err != nil {
		return nil, fmt.Errorf("the stubs' symbols: %w", err)
	}
	if len(addrs) > 0 {
		return addrs, nil
	}
	syms, err := uprobe.Symbols(f)
	if err != nil {
		return nil, fmt.Errorf("the stubs' symbols: %w", err)
	}
	for _, s := range syms {
		if err := add(s.Name, s.Value); err != nil {
			return nil, err
		}
	}
	return addrs, nil
}

// stubPrefix starts the name of every stub (see gen.StaticTable.Stub).
const stubPrefix = "usdtkit_"

// symtab is an ELF64 little-endian file's .symtab with its string table,
// read as they are, without building every symbol.
type symtab struct {
	syms, strs []byte
}

// symSize is the size of an Elf64_Sym.
const symSize = 24

// readSymtab reads f's .symtab. A file without one, or with one that is
// not ELF64's or cannot be read, gives an empty symtab: tables are then
// found by scanning, and stubs by uprobe.Symbols, which reports damage.
func readSymtab(f *elfnotes.File) *symtab {
	sec := f.Section(".symtab")
	if f.Class != elf.ELFCLASS64 || f.Data != elf.ELFDATA2LSB || sec == nil || sec.Type != elf.SHT_SYMTAB || sec.Entsize != symSize || int(sec.Link) >= len(f.Sections) {
		return &symtab{}
	}
	syms, err := sec.Data()
	if err != nil {
		return &symtab{}
	}
	strs, err := f.Sections[sec.Link].Data()
	if err != nil {
		return &symtab{}
	}
	return &symtab{syms, strs}
}

// each calls fn with each symbol's name (valid during the call), type,
// section index, value and size, until fn returns an error. Symbols whose
// name lies outside the string table are skipped.
func (st *symtab) each(fn func(name []byte, typ elf.SymType, shndx elf.SectionIndex, value, size uint64) error) error {
	le := binary.LittleEndian
	for e := st.syms; len(e) >= symSize; e = e[symSize:] {
		off := uint64(le.Uint32(e))
		if off >= uint64(len(st.strs)) {
			continue
		}
		name := st.strs[off:]
		if k := bytes.IndexByte(name, 0); k >= 0 {
			name = name[:k]
		}
		if err := fn(name, elf.ST_TYPE(e[4]), elf.SectionIndex(le.Uint16(e[6:])), le.Uint64(e[8:]), le.Uint64(e[16:])); err != nil {
			return err
		}
	}
	return nil
}

// ELF64 header fields.
const (
	ehShoff     = 0x28
	ehShentsize = 0x3a
	ehShnum     = 0x3c
	ehShstrndx  = 0x3e
	shdrSize    = 64
)

// section is a section for putSection: either contents to append (content)
// or, for an allocated section, a range of the file already there (addr,
// offset, size).
type section struct {
	name               string
	typ                elf.SectionType
	flags              elf.SectionFlag
	align              uint64
	content            []byte
	addr, offset, size uint64
}

// probesSection returns a .probes section header that covers every
// semaphore of the tables, in the writable data where they are. bcc (and
// so bpftrace) computes a semaphore's file offset for the kernel's
// ref_ctr from the .probes section, where sys/sdt.h puts semaphores; without
// one it enables no semaphore. It is only a header: the bytes are
// .noptrdata's. ok is false when the file already has a .probes section
// or the semaphores are not in the file data of one PT_LOAD segment,
// inside the file of size bytes.
func probesSection(f *elfnotes.File, tables []table, size uint64) (section, bool) {
	if f.Section(".probes") != nil {
		return section{}, false
	}
	lo, hi := ^uint64(0), uint64(0)
	for _, t := range tables {
		start := t.addr + uint64(t.Sems)
		lo = min(lo, start)
		hi = max(hi, start+2*uint64(len(t.Probes)))
	}
	off, err := f.AddrRangeToOffset(lo, hi-lo)
	// The range must lie in the file (a crafted segment may not), so that
	// the header does not point outside it. f checks that only when its
	// reader tells it the size.
	if err != nil || off > size || hi-lo > size-off {
		return section{}, false
	}
	return section{name: ".probes", typ: elf.SHT_PROGBITS, flags: elf.SHF_ALLOC | elf.SHF_WRITE, align: 2,
		addr: lo, offset: off, size: hi - lo}, true
}

// putSection adds section sec to the image: the header of a section of
// that name updated if there is one, else a new header; the contents (if
// any), a new .shstrtab when the name is new, and the new section header
// table are appended to the tail, and the ELF header points at them.
func (im *image) putSection(sec section) error {
	name, content := sec.name, sec.content
	le := binary.LittleEndian
	shoff := le.Uint64(im.hdr[ehShoff:])
	shnum := uint64(le.Uint16(im.hdr[ehShnum:]))
	shstrndx := uint64(le.Uint16(im.hdr[ehShstrndx:]))
	if le.Uint16(im.hdr[ehShentsize:]) != shdrSize || shnum == 0 || shnum >= uint64(elf.SHN_LORESERVE)-1 || shstrndx >= shnum {
		return fmt.Errorf("section headers: %d of %d bytes, names in %d: %w", shnum, le.Uint16(im.hdr[ehShentsize:]), shstrndx, ErrNotSupported)
	}
	shdrs, err := im.read(shoff, shnum*shdrSize)
	if err != nil {
		return fmt.Errorf("section headers: %w", err)
	}
	hdr := func(i uint64) []byte { return shdrs[i*shdrSize : (i+1)*shdrSize] }
	strOff, strSize := le.Uint64(hdr(shstrndx)[0x18:]), le.Uint64(hdr(shstrndx)[0x20:])
	strtab, err := im.read(strOff, strSize)
	if err != nil {
		return fmt.Errorf(".shstrtab: %w", err)
	}
	nameOf := func(h []byte) string {
		o := uint64(le.Uint32(h))
		if o >= uint64(len(strtab)) {
			return ""
		}
		s := strtab[o:]
		if k := bytes.IndexByte(s, 0); k >= 0 {
			s = s[:k]
		}
		return string(s)
	}
	target := -1
	for i := range shnum {
		if nameOf(hdr(i)) == name {
			target = int(i)
		}
	}
	out := slices.Grow(im.tail, len(content)+len(strtab)+len(name)+int(shnum+1)*shdrSize+32)
	at := func() uint64 { return im.size + uint64(len(out)) }
	pad := func(a uint64) {
		for at()%a != 0 {
			out = append(out, 0)
		}
	}
	pad(8)
	contentOff := at()
	out = append(out, content...)
	if target < 0 {
		newStr := append(strtab, name...)
		newStr = append(newStr, 0)
		nameIdx := uint32(len(strtab))
		strAt := at()
		out = append(out, newStr...)
		le.PutUint64(hdr(shstrndx)[0x18:], strAt)
		le.PutUint64(hdr(shstrndx)[0x20:], uint64(len(newStr)))
		h := make([]byte, shdrSize)
		le.PutUint32(h[0x00:], nameIdx)
		shdrs = append(shdrs, h...)
		target = int(shnum)
		shnum++
	}
	h := hdr(uint64(target))
	le.PutUint32(h[0x04:], uint32(sec.typ))
	le.PutUint64(h[0x08:], uint64(sec.flags))
	le.PutUint64(h[0x30:], sec.align)
	if sec.flags&elf.SHF_ALLOC != 0 {
		le.PutUint64(h[0x10:], sec.addr)
		le.PutUint64(h[0x18:], sec.offset)
		le.PutUint64(h[0x20:], sec.size)
	} else {
		le.PutUint64(h[0x18:], contentOff)
		le.PutUint64(h[0x20:], uint64(len(content)))
	}
	pad(8)
	newShoff := at()
	out = append(out, shdrs...)
	im.tail = out
	le.PutUint64(im.hdr[ehShoff:], newShoff)
	le.PutUint16(im.hdr[ehShnum:], uint16(shnum))
	return nil
}

// apply returns data, the file the image was made from, as the image
// changes it.
func (im *image) apply(data []byte) []byte {
	out := make([]byte, len(data)+len(im.tail))
	copy(out, data)
	copy(out, im.hdr[:])
	for _, p := range im.patches {
		copy(out[p.off:], p.b)
	}
	copy(out[len(data):], im.tail)
	return out
}

// rewriteSites adds to the image a patch for each of probes' amd64 stubs
// that is not of kind site: each stub's dynsdt.StaticStubLen bytes must be
// some kind's stub as dynsdt.StaticStubAMD64 writes it (the linker keeps
// them as assembled). A stub that is not (another usdtkit's gen --static
// wrote it) is an error if strict, else left as it is and counted as
// skipped. It reads only the stubs' bytes.
func (im *image) rewriteSites(f *elfnotes.File, probes []elfnotes.Stapsdt, site dynsdt.Site, strict bool) (skipped int, err error) {
	want := dynsdt.StaticStubAMD64(site)
	kinds := []dynsdt.Site{dynsdt.SiteNop, dynsdt.SiteNop5, dynsdt.SiteNop10}
	cur := make([]byte, dynsdt.StaticStubLen)
	for _, p := range probes {
		off, ok := textOffset(f, im.size, p.PC, dynsdt.StaticStubLen)
		cur = cur[:0]
		if ok {
			cur = cur[:dynsdt.StaticStubLen]
			if err := readAt(im.r, cur, off); err != nil {
				return 0, fmt.Errorf("probe %s:%s: stub: %w", p.Provider, p.Name, err)
			}
			if bytes.Equal(cur, want) {
				continue
			}
			ok = slices.ContainsFunc(kinds, func(k dynsdt.Site) bool { return bytes.Equal(cur, dynsdt.StaticStubAMD64(k)) }) ||
				bytes.Equal(cur, nop5RetStub)
		}
		if !ok && strict {
			return 0, fmt.Errorf("probe %s:%s: stub at %#x holds % x, no site kind's stub of %d bytes (from another usdtkit gen --static?): %w",
				p.Provider, p.Name, p.PC, cur, dynsdt.StaticStubLen, ErrNotSupported)
		}
		if !ok {
			skipped++
			continue
		}
		im.patches = append(im.patches, patch{off, want})
	}
	return skipped, nil
}

// nop5RetStub is the nop5 stub that usdtkit link wrote before it left by
// "pop %r11; jmp *%r11" as the nop stub does: "nopl 0x0(%rax,%rax,1);
// ret", int3 up to StaticStubLen. Binaries linked then are rewritten as
// any kind's stub is.
var nop5RetStub = append([]byte{0x0f, 0x1f, 0x44, 0x00, 0x00, 0xc3}, bytes.Repeat([]byte{0xcc}, dynsdt.StaticStubLen-6)...)

// textOffset returns the file offset of the n bytes at vaddr if they lie
// in one executable section with contents in the file of size size, past
// the ELF header.
func textOffset(f *elfnotes.File, size, vaddr, n uint64) (uint64, bool) {
	for _, s := range f.Sections {
		if s.Type != elf.SHT_PROGBITS || s.Flags&elf.SHF_EXECINSTR == 0 || vaddr < s.Addr || vaddr-s.Addr > s.Size || n > s.Size-(vaddr-s.Addr) {
			continue
		}
		off := s.Offset + (vaddr - s.Addr)
		if off < s.Offset || off < ehSize || off+n < off || off+n > size {
			return 0, false
		}
		return off, true
	}
	return 0, false
}
