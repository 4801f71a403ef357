package symbolize

import (
	"bufio"
	"bytes"
	"cmp"
	"fmt"
	"io"
	"os"
	"path"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/usdtkit/usdtkit/internal/escape"
	"github.com/usdtkit/usdtkit/internal/proc/procfs"
)

// DefaultMaxPerfMap is the default of Options.MaxPerfMap.
const DefaultMaxPerfMap = 64 << 20

// DefaultPerfMapReread is the default of Options.PerfMapReread.
const DefaultPerfMapReread = time.Second

// DefaultMaxJitdump is the default of Options.MaxJitdump.
const DefaultMaxJitdump = 1 << 30

// Options configure a Symbolizer.
type Options struct {
	// DebugDirs are the global debug directories in which separate debug
	// files are looked for, inside the process's root. Empty means
	// symtab.DefaultDebugDir (/usr/lib/debug).
	DebugDirs []string
	// Cache holds object tables across Symbolizers; nil gives the
	// Symbolizer a cache of its own.
	Cache *Cache
	// MaxPerfMap bounds, in bytes, how much of /tmp/perf-PID.map is
	// read; the rest is passed over. 0 means DefaultMaxPerfMap.
	MaxPerfMap int64
	// PerfMapReread is the least time between two reads of the perf
	// map when it has changed: a process (or whoever wrote its map) that
	// rewrites a big map without pause would otherwise have every
	// lookup of a new address parse it again. 0 means
	// DefaultPerfMapReread; negative, at every change.
	PerfMapReread time.Duration
	// MaxJitdump bounds, in bytes, how much of the process's jitdump
	// file is parsed; records past it are not read. Only record headers
	// and names are read, not the native code between them. 0 means
	// DefaultMaxJitdump.
	MaxJitdump int64
	// NoDWARF leaves DWARF unused: no inlined frames, and file:line only
	// for Go code (from .gopclntab). Lookups are then a binary search
	// or two per address, and the DWARF indexes (line rows, inline
	// trees) are not built. The default uses DWARF where present.
	NoDWARF bool
}

// A Symbolizer turns addresses of one process into frames. It remembers
// the process's mappings and holds its objects open from New on, so the
// addresses of a process that has exited since still symbolize. It is safe
// for concurrent use; Close must not race with Frames.
type Symbolizer struct {
	pid   int
	nspid int // the PID as the process knows itself, for perf-PID.map
	opts  Options
	root  *os.File

	mu    sync.Mutex
	maps  []mapping // sorted by start, not overlapping
	files map[procfs.FileID]*object
	perf  *perfState
	jit   jitState
	// uid owns the process (its /proc directory): a perf map must be
	// owned by it or by root.
	uid uint32
	// unnamedAnon counts the frames in anonymous executable memory that
	// neither the perf map nor a jitdump named (UnnamedJIT).
	unnamedAnon int
	// chain is appendFrames' buffer for inline chains.
	chain []inlFrame
}

// mapping is one executable mapping of the process.
type mapping struct {
	start, end, offset uint64
	obj                *object // nil for anonymous and pseudo mappings
	name               string  // for pseudo mappings: "[vdso]", "[anon:x]"; "" for anonymous memory
}

// object is one file mapped by the process.
type object struct {
	name  string   // as Frame.Object shows it
	file  *os.File // nil when it could not be opened
	entry *cacheEntry
	syms  *objectSyms
	done  bool // syms was looked for
	dwarf *dwarfLines
	// dwarfDone: dwarf was looked for.
	dwarfDone bool
}

// perfState is the perf map as last read.
type perfState struct {
	idx        *perfIndex
	size       int64
	mtime      unix.Timespec
	readAt     time.Time // when it was last read
	tried      bool
	statFailed bool
}

// New reads the mappings of process pid and opens every object it maps
// executable, through procfs.Open. Objects that cannot be opened are
// remembered by name (their frames show object+offset). It fails when the
// process does not exist (an error wrapping procfs.ErrNoProcess) or its
// maps cannot be read. The caller calls Close.
func New(pid int, opts *Options) (*Symbolizer, error) {
	if opts == nil {
		opts = &Options{}
	}
	if opts.MaxPerfMap < 0 {
		return nil, fmt.Errorf("field MaxPerfMap is negative")
	}
	if opts.MaxJitdump < 0 {
		return nil, fmt.Errorf("field MaxJitdump is negative")
	}
	s := &Symbolizer{pid: pid, nspid: pid, opts: *opts, files: make(map[procfs.FileID]*object)}
	if s.opts.Cache == nil {
		s.opts.Cache = &Cache{}
	}
	if s.opts.MaxPerfMap == 0 {
		s.opts.MaxPerfMap = DefaultMaxPerfMap
	}
	if s.opts.PerfMapReread == 0 {
		s.opts.PerfMapReread = DefaultPerfMapReread
	}
	if s.opts.MaxJitdump == 0 {
		s.opts.MaxJitdump = DefaultMaxJitdump
	}
	root, err := procfs.OpenRoot(pid)
	if err != nil {
		return nil, err
	}
	s.root = root
	s.nspid = nsPID(pid)
	var st unix.Stat_t
	if err := unix.Stat(fmt.Sprintf("/proc/%d", pid), &st); err == nil {
		s.uid = st.Uid
	}
	if err := s.readMaps(); err != nil {
		s.Close()
		return nil, err
	}
	s.openJit()
	return s, nil
}

// nsPID returns the innermost PID of process pid (the last NSpid of its
// status), which names its perf map; pid itself when unknown.
func nsPID(pid int) int {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return pid
	}
	for line := range strings.Lines(string(b)) {
		if rest, ok := strings.CutPrefix(line, "NSpid:"); ok {
			f := strings.Fields(rest)
			if len(f) > 0 {
				if n, err := strconv.Atoi(f[len(f)-1]); err == nil && n > 0 {
					return n
				}
			}
		}
	}
	return pid
}

// readMaps reads the process's maps and adds the mappings and objects not
// known yet. Mappings seen before stay as they were.
func (s *Symbolizer) readMaps() error {
	maps, err := procfs.ReadMaps(s.pid)
	if err != nil {
		return err
	}
	s.addMaps(maps)
	return nil
}

// addMaps adds the mappings of maps and the objects not known yet.
func (s *Symbolizer) addMaps(maps []procfs.Mapping) {
	var add []mapping
	for _, m := range maps {
		if s.jit.mapped == "" && isJitdump(m.Path) {
			// JIT runtimes map their jitdump file so that perf record
			// finds it: this one is the process's, wherever it is.
			s.jit.mapped = m.Path
		}
		if !m.Exec() {
			continue
		}
		if _, ok := s.find(m.Start); ok {
			continue
		}
		nm := mapping{start: m.Start, end: m.End, offset: m.Offset}
		if m.FileBacked() {
			nm.obj = s.object(m)
		} else {
			nm.name = m.Path
		}
		add = append(add, nm)
	}
	s.maps = append(s.maps, add...)
	slices.SortFunc(s.maps, func(a, b mapping) int { return cmp.Compare(a.start, b.start) })
}

// object returns the object m maps, opening it when it is new.
func (s *Symbolizer) object(m procfs.Mapping) *object {
	id := procfs.FileID{Dev: unix.Mkdev(m.Major, m.Minor), Inode: m.Inode}
	if o := s.files[id]; o != nil {
		return o
	}
	po := procfs.Object{PID: s.pid, Path: m.Path, Major: m.Major, Minor: m.Minor, Inode: m.Inode,
		Deleted: m.Deleted, Memfd: strings.HasPrefix(m.Path, "/memfd:"), Mappings: []procfs.Mapping{m}}
	po.Deleted = po.Deleted || po.Memfd
	o := &object{name: m.Path}
	if m.Deleted && !po.Memfd {
		o.name += " (deleted)"
	}
	if f, err := procfs.Open(po); err == nil {
		o.file = f
	}
	s.files[id] = o
	return o
}

// Reopen returns a new descriptor of the object with identity id that the
// process mapped, as New or Refresh opened it while the process lived;
// false when there is none (never mapped executable, or not opened). The
// caller closes it. Readers of a process that may have exited since New
// (its objects can then no longer be opened through it) use it.
func (s *Symbolizer) Reopen(id procfs.FileID) (*os.File, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	o := s.files[id]
	if o == nil || o.file == nil {
		return nil, false
	}
	fd, err := unix.FcntlInt(o.file.Fd(), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return nil, false
	}
	return os.NewFile(uintptr(fd), o.file.Name()), true
}

// find returns the mapping containing addr.
func (s *Symbolizer) find(addr uint64) (*mapping, bool) {
	i, _ := slices.BinarySearchFunc(s.maps, addr, func(m mapping, a uint64) int {
		if m.start <= a {
			return -1
		}
		return 1
	})
	if i > 0 && addr < s.maps[i-1].end {
		return &s.maps[i-1], true
	}
	return nil, false
}

// Close closes the objects and the root the Symbolizer holds; calling it
// again returns nil.
func (s *Symbolizer) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, o := range s.files {
		if o.file != nil {
			o.file.Close()
			o.file = nil
		}
	}
	s.files = nil
	if s.jit.file != nil {
		s.jit.file.Close()
		s.jit.file = nil
	}
	if s.root != nil {
		s.root.Close()
		s.root = nil
	}
	return nil
}

// Frames symbolizes addrs in order, one frame each, preceded by one
// frame (Inlined set) per inlined call the object's DWARF records at that
// address, innermost first. An address in no
// known mapping makes Frames read the process's maps again once per call
// (for libraries loaded since New), while the process lives.
func (s *Symbolizer) Frames(addrs []uint64) []Frame {
	return s.AppendFrames(make([]Frame, 0, len(addrs)), addrs)
}

// Refresh reads the process's mappings again and adds those not known
// yet, while it lives: mappings made since New (libraries a command
// started stopped loads, a JIT's code cache) then symbolize after it
// exits. A process gone or exiting adds nothing.
func (s *Symbolizer) Refresh() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.root == nil {
		return fmt.Errorf("refresh: symbolizer closed")
	}
	return s.readMaps()
}

// RefreshFrom is Refresh with the process's mappings as the caller read
// them (procfs.ReadMaps), for a caller that needs them too.
func (s *Symbolizer) RefreshFrom(maps []procfs.Mapping) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.root == nil {
		return fmt.Errorf("refresh: symbolizer closed")
	}
	s.addMaps(maps)
	return nil
}

// UnnamedJIT returns how many frames so far were in anonymous executable
// memory (JIT code) that neither the process's perf map nor its jitdump
// named.
func (s *Symbolizer) UnnamedJIT() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.unnamedAnon
}

// AppendFrames is Frames appending to dst, for callers that reuse a
// buffer.
func (s *Symbolizer) AppendFrames(dst []Frame, addrs []uint64) []Frame {
	return s.appendAll(dst, addrs, false)
}

// StackFrames is Frames for a stack: pcs[0] is where the stack is (an
// instruction pointer), the others are return addresses. The inlined
// calls, file and line of a return address are those of the call before
// it (its address minus one, as unwinders look them up), so that a return
// address just past an inlined call, or past a call that ends inlined
// code, names the call's function and not the code after it. Symbols and
// offsets are still those of the addresses given, as bpftrace prints them.
func (s *Symbolizer) StackFrames(pcs []uint64) []Frame {
	return s.appendAll(make([]Frame, 0, len(pcs)), pcs, true)
}

// appendAll symbolizes addrs; stack says addrs[1:] are return addresses.
func (s *Symbolizer) appendAll(dst []Frame, addrs []uint64, stack bool) []Frame {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := dst
	reread := false
	for i, a := range addrs {
		m, ok := s.find(a)
		if !ok && !reread && s.root != nil {
			reread = true
			if s.readMaps() == nil {
				m, ok = s.find(a)
			}
		}
		if !ok {
			// In no mapping seen while the process lived (JIT code
			// mapped after the maps were last read, and the process
			// gone since): the perf map, the JIT's own list of its
			// code, may still name it.
			fr := Frame{Addr: a}
			if p, ok := s.perfLookup(a); ok {
				fr.Object, fr.Symbol, fr.SymOffset = perfObject(s.nspid), p.Name, a-p.Start
			}
			out = append(out, fr)
			continue
		}
		out = s.appendFrames(out, a, m, stack && i > 0)
	}
	return out
}

// appendFrames symbolizes a, in m; ret says a is a return address.
func (s *Symbolizer) appendFrames(out []Frame, a uint64, m *mapping, ret bool) []Frame {
	if m.obj == nil {
		fr := Frame{Addr: a, Object: m.name, Offset: a - m.start}
		if m.name == "" || strings.HasPrefix(m.name, "[anon") {
			if p, ok := s.perfLookup(a); ok {
				fr.Object = perfObject(s.nspid)
				fr.Offset = 0
				fr.Symbol, fr.SymOffset = p.Name, a-p.Start
				return append(out, fr)
			}
			if p, ok := s.jitLookup(a); ok {
				fr.Object = s.jit.path
				fr.Offset = 0
				fr.Symbol, fr.SymOffset = p.Name, a-p.Start
				at := a
				if ret && at > p.Start {
					at-- // the call before the return address
				}
				fr.File, fr.Line = s.jit.jitPosition(p, at)
				return append(out, fr)
			}
			s.unnamedAnon++
		}
		return append(out, fr)
	}
	off := a - m.start + m.offset
	fr := Frame{Addr: a, Object: m.obj.name, Offset: off}
	syms := s.objectSyms(m.obj)
	if syms == nil {
		return append(out, fr)
	}
	vaddr, ok := syms.loads.OffsetToAddr(off)
	if !ok {
		return append(out, fr)
	}
	// at is where the code of a is looked up: for a return address, the
	// call before it.
	at := vaddr
	if ret && at > 0 {
		at--
	}
	var chain []inlFrame
	if d := s.objectDWARF(m.obj); d != nil {
		s.chain = d.appendChain(s.chain[:0], at)
		chain = s.chain
	}
	found := false
	switch {
	case syms.go_ != nil && len(chain) > 0:
		// DWARF gives the file and line: .gopclntab only the function.
		if fn, entry, ok := syms.go_.PCToFunc(at); ok && entry <= vaddr {
			fr.Symbol, fr.SymOffset = fn, vaddr-entry
			found = true
		}
	case syms.go_ != nil:
		if fn, entry, file, line, ok := syms.go_.PCToLine(at); ok && entry <= vaddr {
			fr.Symbol, fr.SymOffset, fr.File, fr.Line = fn, vaddr-entry, file, line
			found = true
		}
	}
	if !found {
		if fs, ok := syms.lookup(vaddr); ok {
			fr.Symbol, fr.SymOffset = fs.name, vaddr-fs.value
		}
	}
	if len(chain) == 0 {
		return append(out, fr)
	}
	// Inlined calls first, innermost first; each is at the same address.
	for _, c := range chain[:len(chain)-1] {
		out = append(out, Frame{Addr: a, Object: fr.Object, Offset: fr.Offset, Symbol: c.name, File: c.file, Line: c.line, Inlined: true})
	}
	last := chain[len(chain)-1]
	if fr.Symbol == "" {
		fr.Symbol = last.name
	}
	fr.File, fr.Line = last.file, last.line
	return append(out, fr)
}

func perfObject(pid int) string { return fmt.Sprintf("/tmp/perf-%d.map", pid) }

// objectSyms returns the table of o, read on first use.
func (s *Symbolizer) objectSyms(o *object) *objectSyms {
	if !o.done {
		o.done = true
		if o.file != nil {
			if e, err := s.opts.Cache.get(o.file, o.name, s.root, s.opts.DebugDirs); err == nil {
				o.entry, o.syms = e, e.syms
			}
		}
	}
	return o.syms
}

// objectDWARF returns the DWARF of o (or of its separate debug file),
// read on first use; nil without DWARF or with Options.NoDWARF.
func (s *Symbolizer) objectDWARF(o *object) *dwarfLines {
	if !o.dwarfDone && !s.opts.NoDWARF && o.entry != nil {
		o.dwarfDone = true
		o.dwarf = o.entry.dwarfLines(o.file, o.name, s.root, s.opts.DebugDirs)
	}
	return o.dwarf
}

// perfLookup finds addr in the process's perf map, reading it when it has
// not been read or has changed since.
func (s *Symbolizer) perfLookup(a uint64) (PerfSymbol, bool) {
	if s.perf == nil {
		s.perf = &perfState{}
	}
	p := s.perf
	if p.idx != nil {
		if sym, ok := p.idx.lookup(a); ok {
			return sym, true
		}
	}
	if s.root == nil {
		return PerfSymbol{}, false
	}
	f, err := procfs.OpenInRoot(s.root, perfObject(s.nspid))
	if err != nil {
		return PerfSymbol{}, false
	}
	defer f.Close()
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		return PerfSymbol{}, false
	}
	if p.tried && st.Size == p.size && st.Mtim == p.mtime {
		return PerfSymbol{}, false
	}
	if p.tried && s.opts.PerfMapReread > 0 && time.Since(p.readAt) < s.opts.PerfMapReread {
		return PerfSymbol{}, false
	}
	// /tmp is everyone's: a map another user wrote, or a FIFO, is not
	// the process's.
	if st.Mode&unix.S_IFMT != unix.S_IFREG || st.Uid != 0 && st.Uid != s.uid {
		return PerfSymbol{}, false
	}
	p.tried, p.size, p.mtime, p.readAt = true, st.Size, st.Mtim, time.Now()
	syms, _, err := ParsePerfMap(bufio.NewReader(io.LimitReader(f, s.opts.MaxPerfMap)))
	if err != nil {
		return PerfSymbol{}, false
	}
	p.idx = newPerfIndex(syms)
	return p.idx.lookup(a)
}

// Frame is one symbolized address.
type Frame struct {
	Addr uint64
	// Object is the file the address is in, as the process's maps name it
	// (with " (deleted)" for a deleted file; "/memfd:NAME" for a memfd),
	// the perf map that named JIT code, a pseudo mapping ("[vdso]"), or ""
	// for anonymous memory and addresses in no mapping.
	Object string
	// Offset is the file offset of Addr in Object (for a pseudo mapping,
	// the offset from its start; 0 for a perf map).
	Offset uint64
	// Symbol is the function containing Addr, C++ and Rust names
	// demangled, Go names as the Go toolchain prints them; "" if unknown.
	Symbol    string
	SymOffset uint64 // Addr - the function's start
	// File and Line are the source position, from .gopclntab for Go code
	// and from DWARF where the object or its debug file has it; "" and 0
	// otherwise. For an inlined call's caller, the position of the call.
	File string
	Line int
	// Inlined marks a frame of a function inlined into the next one.
	Inlined bool
}

// String returns the frame as bpftrace prints a frame of ustack:
// "SYMBOL+OFFSET" (decimal offset); "[OBJECT+0xOFFSET]" (the object's base
// name) when the function is unknown but the object is; and the bare hex
// address only for an address in no known object.
func (f Frame) String() string {
	switch {
	case f.Symbol != "":
		return f.Symbol + "+" + strconv.FormatUint(f.SymOffset, 10)
	case f.Object != "":
		name := path.Base(strings.TrimSuffix(f.Object, " (deleted)"))
		if strings.HasPrefix(f.Object, "[") {
			name = strings.Trim(f.Object, "[]")
		}
		return "[" + name + "+0x" + strconv.FormatUint(f.Offset, 16) + "]"
	}
	return "0x" + strconv.FormatUint(f.Addr, 16)
}

// Format returns frames as bpftrace prints a ustack: a newline, then each
// frame on a line of its own indented by indent spaces. bpftrace indents
// by 8 in printf("%s", ustack) and by 4 in a map key.
func Format(frames []Frame, indent int) string {
	var b bytes.Buffer
	pad := strings.Repeat(" ", max(indent, 0))
	b.WriteByte('\n')
	for _, f := range frames {
		b.WriteString(pad)
		b.WriteString(escape.Control(f.String()))
		b.WriteByte('\n')
	}
	return b.String()
}

// FormatPerf returns frames as bpftrace prints ustack(perf): a newline,
// then per frame a tab, the address in hex, the frame and, in
// parentheses, its object.
func FormatPerf(frames []Frame) string {
	var b bytes.Buffer
	b.WriteByte('\n')
	for _, f := range frames {
		obj := f.Object
		if obj == "" {
			obj = "unknown"
		}
		fmt.Fprintf(&b, "\t%x %s (%s)\n", f.Addr, escape.Control(f.String()), escape.Control(obj))
	}
	return b.String()
}
