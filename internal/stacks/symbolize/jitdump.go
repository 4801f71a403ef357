package symbolize

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/usdtkit/usdtkit/internal/proc/procfs"
)

// Jitdump format (Linux perf's tools/perf/Documentation/
// jitdump-specification.txt): a file header, then records, each a
// 16-byte record header {id u32, total_size u32, timestamp u64} and its
// payload, in the byte order the header's magic says.
const (
	jitMagic        = 0x4A695444 // "JiTD" as the writer's u32
	jitMagicSwapped = 0x4454694A // the same, written in the other byte order
	// jitHeaderSize is the version 1 header: magic, version, total_size,
	// elf_mach, pad1, pid (u32 each), timestamp, flags (u64 each).
	jitHeaderSize = 40
	// jitRecordHeader is id, total_size (u32), timestamp (u64).
	jitRecordHeader = 16
	// jitLoadFixed is JIT_CODE_LOAD's pid, tid (u32), vma, code_addr,
	// code_size, code_index (u64), before the name.
	jitLoadFixed = 40
	// jitMoveSize is JIT_CODE_MOVE's pid, tid (u32), vma, old_code_addr,
	// new_code_addr, code_size, code_index (u64).
	jitMoveSize = 48
	// maxJitName bounds a function name; a record with a longer one is
	// skipped.
	maxJitName = 64 << 10
	// maxJitDebug bounds a JIT_CODE_DEBUG_INFO record read; larger ones
	// are skipped.
	maxJitDebug = 1 << 20
	// maxJitLines bounds the source positions kept from one dump.
	maxJitLines = 1 << 22
	// jitDebugEntry is a debug_entry's code_addr (u64), line, discrim
	// (u32), before the file name.
	jitDebugEntry = 16
	// maxJitHeader bounds the header's total_size.
	maxJitHeader = 1 << 20
	// maxJitWarnings bounds the warnings of one parse.
	maxJitWarnings = 16
)

// JitRecord is the id of a jitdump record.
type JitRecord uint32

const (
	JitCodeLoad          JitRecord = 0
	JitCodeMove          JitRecord = 1
	JitCodeDebugInfo     JitRecord = 2
	JitCodeClose         JitRecord = 3
	JitCodeUnwindingInfo JitRecord = 4
)

var jitRecordNames = [...]string{"JIT_CODE_LOAD", "JIT_CODE_MOVE", "JIT_CODE_DEBUG_INFO", "JIT_CODE_CLOSE", "JIT_CODE_UNWINDING_INFO"}

func (r JitRecord) String() string {
	if int(r) < len(jitRecordNames) {
		return jitRecordNames[r]
	}
	return fmt.Sprintf("JitRecord(%d)", uint32(r))
}

// ParseJitdump reads the jitdump file r of size bytes: one PerfSymbol
// per function a JIT_CODE_LOAD record names (at its code_addr, of its
// code_size), and one more at the new address of each JIT_CODE_MOVE of a
// function loaded before, in the order of the file. The native code and
// the other records are passed over, not read (a Symbolizer also reads
// JIT_CODE_DEBUG_INFO records, for the file and line of JIT frames).
//
// The file is written by the process while it runs, so damage stays
// local: a record that is malformed (a name without its NUL or longer
// than 64 KiB, a move of
// an unknown function, code that wraps around the address space) is
// skipped with a *FormatError warning (at most 16); a last record that
// ends past size (being written) ends the symbols, without warning; a
// record header whose size is smaller than itself ends them with a
// warning, as the next record cannot be found. err is a *FormatError for
// a header that is not a jitdump's, or an error of r; syms is then nil.
func ParseJitdump(r io.ReaderAt, size int64) (syms []PerfSymbol, warnings []error, err error) {
	var p jitParser
	warnings, err = p.parse(r, size)
	if err != nil {
		return nil, nil, err
	}
	return p.syms, warnings, nil
}

// jitParser reads a jitdump incrementally: parse goes on from where the
// last call stopped, for a file that grows.
type jitParser struct {
	order binary.ByteOrder // nil until the header is read
	off   int64            // the next record
	syms  []PerfSymbol
	// index maps code_index to the function's name, for moves.
	index map[uint64]string
	// done: a JIT_CODE_CLOSE or a record that cannot be passed was
	// read; nothing after it is.
	done bool
	// lines are the source positions of JIT_CODE_DEBUG_INFO records, in
	// file order; files their file names, each once.
	lines     []jitLine
	files     []string
	fileIndex map[string]uint32
}

// jitLine says that the JIT code from addr on is at line of files[file].
type jitLine struct {
	addr uint64
	line uint32
	file uint32
}

// parse reads the records that are whole below end.
func (p *jitParser) parse(r io.ReaderAt, end int64) (warnings []error, err error) {
	warn := func(off int64, msg string, val any) {
		if len(warnings) < maxJitWarnings {
			warnings = append(warnings, &FormatError{Off: off, Msg: msg, Val: val})
		}
	}
	if p.syms == nil {
		p.syms = []PerfSymbol{}
	}
	if p.order == nil {
		if err := p.header(r, end); err != nil {
			return nil, err
		}
	}
	var hdr [64]byte
	for !p.done && end-p.off >= jitRecordHeader {
		if _, err := r.ReadAt(hdr[:jitRecordHeader], p.off); err != nil {
			return warnings, readErr(err)
		}
		id := JitRecord(p.order.Uint32(hdr[0:]))
		total := int64(p.order.Uint32(hdr[4:]))
		if total < jitRecordHeader {
			warn(p.off, "record size smaller than its header", total)
			p.done = true
			break
		}
		if total > end-p.off {
			break // being written
		}
		body := p.off + jitRecordHeader
		n := total - jitRecordHeader
		switch id {
		case JitCodeLoad:
			if n < jitLoadFixed {
				warn(p.off, "JIT_CODE_LOAD record too short", total)
				break
			}
			if _, err := r.ReadAt(hdr[:jitLoadFixed], body); err != nil {
				return warnings, readErr(err)
			}
			addr, size, index := p.order.Uint64(hdr[16:]), p.order.Uint64(hdr[24:]), p.order.Uint64(hdr[32:])
			name, ok, err := readName(r, body+jitLoadFixed, n-jitLoadFixed)
			if err != nil {
				return warnings, err
			}
			switch {
			case !ok:
				warn(p.off, "JIT_CODE_LOAD name without its NUL", nil)
			case name == "":
				warn(p.off, "JIT_CODE_LOAD with an empty name", nil)
			case addr+size < addr:
				warn(p.off, "JIT_CODE_LOAD code wraps around the address space", addr)
			default:
				p.syms = append(p.syms, PerfSymbol{Start: addr, Size: size, Name: name})
				if p.index == nil {
					p.index = make(map[uint64]string)
				}
				p.index[index] = name
			}
		case JitCodeMove:
			if n < jitMoveSize {
				warn(p.off, "JIT_CODE_MOVE record too short", total)
				break
			}
			if _, err := r.ReadAt(hdr[:jitMoveSize], body); err != nil {
				return warnings, readErr(err)
			}
			addr, size, index := p.order.Uint64(hdr[24:]), p.order.Uint64(hdr[32:]), p.order.Uint64(hdr[40:])
			name, ok := p.index[index]
			switch {
			case !ok:
				warn(p.off, "JIT_CODE_MOVE of a code_index no JIT_CODE_LOAD gave", index)
			case addr+size < addr:
				warn(p.off, "JIT_CODE_MOVE code wraps around the address space", addr)
			default:
				p.syms = append(p.syms, PerfSymbol{Start: addr, Size: size, Name: name})
			}
		case JitCodeDebugInfo:
			if n > maxJitDebug {
				warn(p.off, "JIT_CODE_DEBUG_INFO record larger than 1 MiB", total)
				break
			}
			b := make([]byte, n)
			if n > 0 {
				// (ReadAt at the end, of nothing, is io.EOF.)
				if _, err := r.ReadAt(b, body); err != nil {
					return warnings, readErr(err)
				}
			}
			if msg := p.debugInfo(b); msg != "" {
				warn(p.off, msg, nil)
			}
		case JitCodeClose:
			p.done = true
		}
		p.off += total
	}
	return warnings, nil
}

// debugInfo adds the source positions of a JIT_CODE_DEBUG_INFO record's
// payload b: code_addr, nr_entry (u64), then nr_entry debug_entry, each
// code_addr (u64), line, discrim (u32) and a NUL-terminated file name. It
// returns what is wrong with b, "" if nothing; the entries before the
// damage are kept.
func (p *jitParser) debugInfo(b []byte) string {
	if len(b) < 16 {
		return "JIT_CODE_DEBUG_INFO record too short"
	}
	nr := p.order.Uint64(b[8:])
	b = b[16:]
	for k := uint64(0); k < nr; k++ {
		if len(b) < jitDebugEntry+1 {
			return "JIT_CODE_DEBUG_INFO entries past the record's end"
		}
		addr, line := p.order.Uint64(b), p.order.Uint32(b[8:])
		name, rest, ok := bytes.Cut(b[jitDebugEntry:], []byte{0})
		if !ok {
			return "JIT_CODE_DEBUG_INFO file name without its NUL"
		}
		b = rest
		if len(p.lines) >= maxJitLines {
			return "more than 4 Mi JIT source positions"
		}
		if p.fileIndex == nil {
			p.fileIndex = make(map[string]uint32)
		}
		fi, seen := p.fileIndex[string(name)]
		if !seen {
			fi = uint32(len(p.files))
			p.files = append(p.files, string(name))
			p.fileIndex[string(name)] = fi
		}
		p.lines = append(p.lines, jitLine{addr: addr, line: line, file: fi})
	}
	return ""
}

// header reads and checks the file header.
func (p *jitParser) header(r io.ReaderAt, end int64) error {
	if end < jitHeaderSize {
		return &FormatError{Off: 0, Msg: "shorter than a jitdump header", Val: end}
	}
	var h [jitHeaderSize]byte
	if _, err := r.ReadAt(h[:], 0); err != nil {
		return readErr(err)
	}
	var order binary.ByteOrder
	switch binary.LittleEndian.Uint32(h[:]) {
	case jitMagic:
		order = binary.LittleEndian
	case jitMagicSwapped:
		order = binary.BigEndian
	default:
		return &FormatError{Off: 0, Msg: "not a jitdump: bad magic", Val: binary.LittleEndian.Uint32(h[:])}
	}
	if v := order.Uint32(h[4:]); v != 1 {
		return &FormatError{Off: 4, Msg: "unknown jitdump version", Val: v}
	}
	total := int64(order.Uint32(h[8:]))
	if total < jitHeaderSize || total > maxJitHeader {
		return &FormatError{Off: 8, Msg: "bad header size", Val: total}
	}
	p.order, p.off = order, total
	return nil
}

// readName reads a NUL-terminated name of at most n bytes at off; ok is
// false without a NUL among them or among the first maxJitName+1.
func readName(r io.ReaderAt, off, n int64) (name string, ok bool, err error) {
	var buf [512]byte
	var b []byte
	n = min(n, maxJitName+1)
	for read := int64(0); read < n; {
		k := min(int64(len(buf)), n-read)
		if _, err := r.ReadAt(buf[:k], off+read); err != nil {
			return "", false, readErr(err)
		}
		if i := bytes.IndexByte(buf[:k], 0); i >= 0 {
			return string(append(b, buf[:i]...)), true, nil
		}
		b = append(b, buf[:k]...)
		read += k
	}
	return "", false, nil
}

// readErr turns a short read of a file that was checked to be long
// enough (it shrank meanwhile) into io.ErrUnexpectedEOF.
func readErr(err error) error {
	if errors.Is(err, io.EOF) {
		return io.ErrUnexpectedEOF
	}
	return err
}

// jitState is the process's jitdump as read so far.
type jitState struct {
	// mapped is the path of a jitdump the process maps; "" for none
	// seen (then /tmp/jit-NSPID.dump is looked for).
	mapped string
	// file is the dump, held open from when it was first found, so that
	// one removed when its process exits is still read; path is where it
	// was found, as frames name it, dev and ino its identity.
	file     *os.File
	path     string
	dev, ino uint64
	size     int64
	p        jitParser
	idx      *perfIndex
	// lines are p.lines sorted by address (of one address, the last in
	// the file).
	lines []jitLine
	// bad: the file's header is not a jitdump's; it is not read again
	// until another file is found.
	bad bool
}

// isJitdump reports whether path names a jitdump file: jit-PID.dump.
func isJitdump(path string) bool {
	base := path[strings.LastIndexByte(path, '/')+1:]
	pid, ok := strings.CutPrefix(base, "jit-")
	if !ok {
		return false
	}
	pid, ok = strings.CutSuffix(pid, ".dump")
	return ok && pid != "" && strings.Trim(pid, "0123456789") == ""
}

// openJit opens the process's jitdump when it is not the one held open:
// at New, so that it outlives its process, and when an address is not
// found (a dump created or replaced since).
func (s *Symbolizer) openJit() {
	j := &s.jit
	if s.root == nil {
		return
	}
	path := j.mapped
	if path == "" {
		path = fmt.Sprintf("/tmp/jit-%d.dump", s.nspid)
	}
	f, err := procfs.OpenInRoot(s.root, path)
	if err != nil {
		return
	}
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil || st.Dev == j.dev && st.Ino == j.ino && j.file != nil {
		f.Close()
		return
	}
	// /tmp is everyone's, and a process may map any file: a dump another
	// user owns, or a FIFO or device, is not the process's (perf's rule
	// for its maps). It could rename the process's frames, or make us
	// read without end.
	if st.Mode&unix.S_IFMT != unix.S_IFREG || st.Uid != 0 && st.Uid != s.uid {
		f.Close()
		return
	}
	if j.file != nil {
		j.file.Close()
	}
	*j = jitState{mapped: j.mapped, file: f, path: path, dev: st.Dev, ino: st.Ino}
}

// jitLookup finds addr in the process's jitdump, reading what was added
// to it since it was last read when addr is not known.
func (s *Symbolizer) jitLookup(a uint64) (PerfSymbol, bool) {
	j := &s.jit
	if j.idx != nil {
		if sym, ok := j.idx.lookup(a); ok {
			return sym, true
		}
	}
	if !s.readJit() {
		// Nothing new in the file held: look for a new one.
		s.openJit()
		if !s.readJit() {
			return PerfSymbol{}, false
		}
	}
	return j.idx.lookup(a)
}

// readJit reads what was added to the held jitdump since it was last
// read; false when nothing was.
func (s *Symbolizer) readJit() bool {
	j := &s.jit
	if j.file == nil || j.bad {
		return false
	}
	var st unix.Stat_t
	if err := unix.Fstat(int(j.file.Fd()), &st); err != nil || st.Size == j.size {
		return false
	}
	if j.p.order == nil && st.Size < jitHeaderSize {
		return false // its header is being written
	}
	if st.Size < j.size {
		// Written again from the start.
		j.p, j.idx, j.lines = jitParser{}, nil, nil
	}
	j.size = st.Size
	n := len(j.p.syms)
	if _, err := j.p.parse(j.file, min(st.Size, s.opts.MaxJitdump)); err != nil {
		var fe *FormatError
		j.bad = errors.As(err, &fe)
		return false
	}
	if len(j.p.lines) != len(j.lines) {
		j.lines = slices.Clone(j.p.lines)
		slices.SortStableFunc(j.lines, func(a, b jitLine) int { return cmp.Compare(a.addr, b.addr) })
	}
	if len(j.p.syms) == n && j.idx != nil {
		return false
	}
	j.idx = newPerfIndex(j.p.syms)
	return true
}

// jitPosition returns the source file and line of pc, in the JIT
// function sym, from the dump's debug entries; "" and 0 when none of sym
// is at or below pc.
func (j *jitState) jitPosition(sym PerfSymbol, pc uint64) (string, int) {
	i, _ := slices.BinarySearchFunc(j.lines, pc, func(l jitLine, pc uint64) int {
		if l.addr <= pc {
			return -1
		}
		return 1
	})
	if i == 0 {
		return "", 0
	}
	l := j.lines[i-1]
	if l.addr < sym.Start || int(l.file) >= len(j.p.files) {
		return "", 0
	}
	return j.p.files[l.file], int(l.line)
}
