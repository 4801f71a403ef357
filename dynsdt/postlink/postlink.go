// Package postlink is the post-link step of static Go probes (usdtkit gen
// --static): it finds, in a linked Go executable, the probe tables and
// stubs the generated code put there (see dynsdt.StaticTable) and adds the
// NT_STAPSDT notes that tracers read, so that readelf -n, tplist, bpftrace
// and usdtkit see the probes by path, before the program runs, and attach
// to every process of it.
//
// # Model
//
//	linked executable ──scan writable data for dynsdt.StaticMagic──► tables
//	                  ──symbols (.symtab, else .gopclntab)──────────► stubs
//	                  ──► one note per probe whose stub was linked
//	                  ──► .note.stapsdt appended, section headers rewritten
//
// A note's PC is the stub's first instruction (the probe site), its
// semaphore the probe's 2-byte counter in the table, its arguments the
// stub's stack slots (dynsdt.StaticArgs). No .stapsdt.base section is
// added and Base is 0: tracers then use the addresses as they are, which
// are right, since the notes are written after the final link.
//
// The notes go into a new .note.stapsdt section (not allocated, outside
// every segment, as sys/sdt.h makes it) at the end of the file, followed
// by a copy of .shstrtab with its name and a new section header table; the
// ELF header points at them. Nothing the program loads or runs moves, so
// the program runs as before; only the file grows. If the file already
// has a .note.stapsdt (probes of C code linked with cgo, or an earlier
// run), its notes other than these probes' are kept and the section is
// replaced. Running the step on its own output changes nothing.
//
// A program whose probe functions are never called has no table (the
// linker drops it): the step leaves it as it is. A probe whose function is
// never called has no stub and gets no note.
//
// # Sites
//
// On x86-64 the step also sets the kind of instruction at the probe sites
// (Options.Site, usdtkit link --site): gen --static writes each stub as
// dynsdt.StaticStubAMD64(dynsdt.SiteNop), 16 bytes with room for every
// kind's stub, and the step writes the kind asked for over them (see
// dynsdt.Site for what each costs on which kernel). The default, SiteAuto,
// is dynsdt.ResolveSite's choice where the step runs (USDTKIT_SITE, else
// the kind for its kernel): a binary is built for the kernels it will run
// on, so set the kind where the build host's kernel is not theirs. Only
// the stubs' bytes change, so the file is then replaced (see File) rather
// than appended to.
//
// # Errors
//
// Only 64-bit little-endian executables for x86-64 and arm64 are
// processed; a file with a table but another machine, a malformed table
// (wrapping dynsdt.ErrStaticTable), a table whose stubs are missing while
// others are present, or a malformed ELF file is an error, and the file
// is left unchanged. File appends to the file and then rewrites its ELF
// header, so an error or a crash never leaves a file that reads as half
// done (see File).
package postlink

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/usdtkit/usdtkit/dynsdt"
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
	// tables or already had exactly these notes.
	Changed bool
}

// ErrNotSupported is wrapped by the error for a file with static probe
// tables that the step cannot process (not ELF64 little-endian, a machine
// other than x86-64 and arm64, too many sections).
var ErrNotSupported = errors.New("not supported")

// File runs the step on the executable at path. The step only appends to
// the file and then rewrites its ELF header to point at what it appended,
// so it changes the file in place: a reader sees the old file or the new
// one, and an interrupted step leaves a longer file that reads as before
// (short of a machine crash that writes the header but not the rest).
// A file that cannot be written in place (an executable that is running:
// ETXTBSY) is replaced instead: a new file, with its mode, renamed over it.
func File(path string) (*Result, error) { return FileWith(path, nil) }

// FileWith is File with options.
func FileWith(path string, opts *Options) (*Result, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	out, res, err := BytesWith(data, opts)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if !res.Changed {
		return res, nil
	}
	if len(out) > len(data) && bytes.Equal(out[ehSize:len(data)], data[ehSize:]) {
		err := appendInPlace(path, out, len(data))
		if err == nil || !errors.Is(err, syscall.ETXTBSY) {
			return res, err
		}
	}
	return res, replace(path, out)
}

// ehSize is the size of an ELF64 header.
const ehSize = 0x40

// appendInPlace writes out's bytes past old to the file, then its header.
func appendInPlace(path string, out []byte, old int) error {
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	// No fsync between the two writes, as the go command does not sync
	// what it links either.
	_, err = f.WriteAt(out[old:], int64(old))
	if err == nil {
		_, err = f.WriteAt(out[:ehSize], 0)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// replace writes out to a new file beside path and renames it over path.
func replace(path string, out []byte) error {
	st, err := os.Stat(path)
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".usdtkit-*")
	if err != nil {
		return err
	}
	_, err = tmp.Write(out)
	if err == nil {
		err = tmp.Chmod(st.Mode().Perm())
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

// Bytes runs the step on an executable's contents and returns the new
// contents (data itself when nothing changes).
func Bytes(data []byte) ([]byte, *Result, error) { return BytesWith(data, nil) }

// BytesWith is Bytes with options. It never modifies data: a changed file
// is a new slice.
func BytesWith(data []byte, opts *Options) ([]byte, *Result, error) {
	var want dynsdt.Site
	if opts != nil {
		want = opts.Site
	}
	f, err := elfnotes.NewFile(bytes.NewReader(data))
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	res := &Result{}
	tables, err := findTables(f, data)
	if err != nil {
		return nil, nil, err
	}
	if len(tables) == 0 {
		return data, res, nil
	}
	if f.Class != elf.ELFCLASS64 || f.Data != elf.ELFDATA2LSB || (f.Machine != elf.EM_X86_64 && f.Machine != elf.EM_AARCH64) {
		return nil, nil, fmt.Errorf("%v %v %v: %w", f.Class, f.ByteOrder, f.Machine, ErrNotSupported)
	}
	stubs, err := stubAddrs(f, tables)
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
	out := data
	if f.Machine == elf.EM_X86_64 && len(ours) > 0 {
		site, err := dynsdt.ResolveSite(want)
		if err != nil {
			return nil, nil, err
		}
		var skipped int
		if out, res.Rewritten, skipped, err = rewriteSites(f, data, res.Probes, site, want != dynsdt.SiteAuto); err != nil {
			return nil, nil, err
		}
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
		res.Changed = res.Rewritten > 0
		return out, res, nil
	}
	var notes []byte
	for _, s := range append(keep, res.Probes...) {
		desc := s.AppendDesc(nil, f.Class, f.ByteOrder)
		notes = elfnotes.AppendNote(notes, f.ByteOrder, elfnotes.OwnerStapsdt, elfnotes.NTStapsdt, desc)
	}
	// .probes first: bcc finds .note.stapsdt only among the sections
	// after .probes.
	if probes, ok := probesSection(f, tables); ok {
		if out, err = putSection(out, probes); err != nil {
			return nil, nil, err
		}
	}
	out, err = putSection(out, section{name: ".note.stapsdt", typ: elf.SHT_NOTE, align: 4, content: notes})
	if err != nil {
		return nil, nil, err
	}
	res.Changed = true
	return out, res, nil
}

// table is a static probe table found in the file, at virtual address
// addr.
type table struct {
	*dynsdt.StaticTable
	addr uint64
}

// findTables scans the allocated, writable sections with file contents for
// static probe tables.
func findTables(f *elfnotes.File, data []byte) ([]table, error) {
	var tables []table
	for i := range f.Sections {
		s := f.Sections[i]
		if s.Type != elf.SHT_PROGBITS || s.Flags&elf.SHF_ALLOC == 0 || s.Flags&elf.SHF_WRITE == 0 {
			continue
		}
		if s.Offset > uint64(len(data)) || s.Size > uint64(len(data))-s.Offset {
			return nil, fmt.Errorf("section %s: %d bytes at %#x beyond the file's %d", s.Name, s.Size, s.Offset, len(data))
		}
		sec := data[s.Offset : s.Offset+s.Size]
		for at := 0; ; {
			k := bytes.Index(sec[at:], []byte(dynsdt.StaticMagic))
			if k < 0 {
				break
			}
			at += k
			t, n, err := dynsdt.ParseStaticTable(sec[at:])
			if err != nil {
				return nil, fmt.Errorf("section %s at %#x: %w", s.Name, s.Offset+uint64(at), err)
			}
			tables = append(tables, table{t, s.Addr + uint64(at)})
			at += n
		}
	}
	return tables, nil
}

// stubAddrs returns the addresses of the tables' stubs that the file has,
// by name without package. A stub name found twice (one provider linked
// from two packages) is an error.
func stubAddrs(f *elfnotes.File, tables []table) (map[string]uint64, error) {
	want := make(map[string]bool)
	for _, t := range tables {
		for i := range t.Probes {
			want[t.Stub(i)] = true
		}
	}
	syms, err := uprobe.Symbols(f)
	if err != nil {
		return nil, fmt.Errorf("the stubs' symbols: %w", err)
	}
	addrs := make(map[string]uint64)
	for _, s := range syms {
		name := strings.TrimSuffix(s.Name, ".abi0")
		dot := strings.LastIndexByte(name, '.')
		if dot < 0 || !want[name[dot+1:]] {
			continue
		}
		stub := name[dot+1:]
		if a, dup := addrs[stub]; dup && a != s.Value {
			return nil, fmt.Errorf("stub %s at %#x and %#x: a provider's probes are generated into one package only", stub, a, s.Value)
		}
		addrs[stub] = s.Value
	}
	return addrs, nil
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
// or the semaphores are not in one segment.
func probesSection(f *elfnotes.File, tables []table) (section, bool) {
	if f.Section(".probes") != nil {
		return section{}, false
	}
	lo, hi := ^uint64(0), uint64(0)
	for _, t := range tables {
		start := t.addr + uint64(t.Sems)
		lo = min(lo, start)
		hi = max(hi, start+2*uint64(len(t.Probes)))
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_LOAD && lo >= p.Vaddr && hi <= p.Vaddr+p.Filesz {
			return section{name: ".probes", typ: elf.SHT_PROGBITS, flags: elf.SHF_ALLOC | elf.SHF_WRITE, align: 2,
				addr: lo, offset: p.Off + (lo - p.Vaddr), size: hi - lo}, true
		}
	}
	return section{}, false
}

// putSection returns data with section sec: the header of a section of
// that name updated if there is one, else a new header; the contents (if
// any), a new .shstrtab when the name is new, and the new section header
// table are appended.
func putSection(data []byte, sec section) ([]byte, error) {
	name, content := sec.name, sec.content
	le := binary.LittleEndian
	if len(data) < 0x40 {
		return nil, fmt.Errorf("ELF header: %d bytes", len(data))
	}
	shoff := le.Uint64(data[ehShoff:])
	shnum := uint64(le.Uint16(data[ehShnum:]))
	shstrndx := uint64(le.Uint16(data[ehShstrndx:]))
	if le.Uint16(data[ehShentsize:]) != shdrSize || shnum == 0 || shnum >= uint64(elf.SHN_LORESERVE)-1 || shstrndx >= shnum {
		return nil, fmt.Errorf("section headers: %d of %d bytes, names in %d: %w", shnum, le.Uint16(data[ehShentsize:]), shstrndx, ErrNotSupported)
	}
	if shoff > uint64(len(data)) || shnum*shdrSize > uint64(len(data))-shoff {
		return nil, fmt.Errorf("section headers at %#x beyond the file's %d bytes", shoff, len(data))
	}
	shdrs := slices.Clone(data[shoff : shoff+shnum*shdrSize])
	hdr := func(i uint64) []byte { return shdrs[i*shdrSize : (i+1)*shdrSize] }
	strOff, strSize := le.Uint64(hdr(shstrndx)[0x18:]), le.Uint64(hdr(shstrndx)[0x20:])
	if strOff > uint64(len(data)) || strSize > uint64(len(data))-strOff {
		return nil, fmt.Errorf(".shstrtab at %#x beyond the file's %d bytes", strOff, len(data))
	}
	strtab := data[strOff : strOff+strSize]
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
	out := slices.Grow(slices.Clone(data), len(content)+len(strtab)+len(name)+int(shnum+1)*shdrSize+32)
	pad := func(a int) {
		for len(out)%a != 0 {
			out = append(out, 0)
		}
	}
	pad(8)
	contentOff := uint64(len(out))
	out = append(out, content...)
	if target < 0 {
		newStr := append(append(slices.Clone(strtab), name...), 0)
		nameIdx := uint32(len(strtab))
		strAt := uint64(len(out))
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
	newShoff := uint64(len(out))
	out = append(out, shdrs...)
	le.PutUint64(out[ehShoff:], newShoff)
	le.PutUint16(out[ehShnum:], uint16(shnum))
	return out, nil
}

// rewriteSites gives the amd64 stubs of probes a site of kind site: each
// stub's dynsdt.StaticStubLen bytes must be some kind's stub as
// dynsdt.StaticStubAMD64 writes it (the linker keeps them as assembled).
// A stub that is not (another usdtkit's gen --static wrote it) is an
// error if strict, else left as it is and counted as skipped. It returns
// data itself when no stub changes, else a copy, and the number of stubs
// changed.
func rewriteSites(f *elfnotes.File, data []byte, probes []elfnotes.Stapsdt, site dynsdt.Site, strict bool) (out []byte, n, skipped int, err error) {
	want := dynsdt.StaticStubAMD64(site)
	kinds := []dynsdt.Site{dynsdt.SiteNop, dynsdt.SiteNop5, dynsdt.SiteNop10}
	out = data
	for _, p := range probes {
		off, ok := textOffset(f, uint64(len(data)), p.PC, dynsdt.StaticStubLen)
		var cur []byte
		if ok {
			cur = data[off : off+dynsdt.StaticStubLen]
			if bytes.Equal(cur, want) {
				continue
			}
			ok = slices.ContainsFunc(kinds, func(k dynsdt.Site) bool { return bytes.Equal(cur, dynsdt.StaticStubAMD64(k)) })
		}
		if !ok && strict {
			return nil, 0, 0, fmt.Errorf("probe %s:%s: stub at %#x holds % x, no site kind's stub of %d bytes (from another usdtkit gen --static?): %w",
				p.Provider, p.Name, p.PC, cur, dynsdt.StaticStubLen, ErrNotSupported)
		}
		if !ok {
			skipped++
			continue
		}
		if n == 0 {
			out = slices.Clone(data)
		}
		copy(out[off:], want)
		n++
	}
	return out, n, skipped, nil
}

// textOffset returns the file offset of the n bytes at vaddr if they lie
// in one executable section with contents in the file of size size.
func textOffset(f *elfnotes.File, size, vaddr, n uint64) (uint64, bool) {
	for _, s := range f.Sections {
		if s.Type != elf.SHT_PROGBITS || s.Flags&elf.SHF_EXECINSTR == 0 || vaddr < s.Addr || vaddr-s.Addr > s.Size || n > s.Size-(vaddr-s.Addr) {
			continue
		}
		off := s.Offset + (vaddr - s.Addr)
		if off < s.Offset || off+n < off || off+n > size {
			return 0, false
		}
		return off, true
	}
	return 0, false
}
