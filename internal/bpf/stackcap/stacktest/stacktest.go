// Package stacktest is the harness of the stack tests and benchmarks. It
// builds testdata/chain.c, loads a uprobe program of stackcap's captures,
// and reads what they captured.
package stacktest

import (
	"debug/elf"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/link"
	"github.com/cilium/ebpf/ringbuf"
	"github.com/usdtkit/usdtkit/elfnotes"
	"github.com/usdtkit/usdtkit/internal/bpf/stackcap"
	"github.com/usdtkit/usdtkit/internal/elf/symtab"
	"github.com/usdtkit/usdtkit/internal/proc/procfs"
	"github.com/usdtkit/usdtkit/internal/testutil"
)

// ChainSource is the path of testdata/chain.c.
func ChainSource(tb testing.TB) string {
	tb.Helper()
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		tb.Fatal("no caller information to find chain.c")
	}
	return testutil.RequireFile(tb, filepath.Join(filepath.Dir(file), "..", "testdata", "chain.c"))
}

// BuildChain compiles chain.c with gcc and flags into a temporary
// directory and returns the executable's path.
func BuildChain(tb testing.TB, flags ...string) string {
	tb.Helper()
	gcc := testutil.RequireTool(tb, "gcc")
	out := filepath.Join(tb.TempDir(), "chain")
	args := append(append([]string{}, flags...), "-o", out, ChainSource(tb))
	if b, err := exec.Command(gcc, args...).CombinedOutput(); err != nil {
		tb.Fatalf("gcc %v: %v\n%s", args, err, b)
	}
	return out
}

// Mode says what the program captures.
type Mode int

const (
	None        Mode = iota // an empty record: the floor of a benchmark
	Frames                  // stackcap.EmitFrames
	Copy                    // stackcap.EmitCopy
	Both                    // frames, then the copy
	StackID                 // stackcap.EmitStackID into map "stacks"
	Walk                    // stackcap.EmitWalkID into map "frames", its scratch a per-CPU array value, as btgen's
	CFIWalk                 // stackcap.EmitCFIWalkID into map "frames", as Walk, its tables in Options.CFIMaps
	CFIWalkCopy             // CFIWalk, then stackcap.EmitCopy of the same hit
)

// Probe is a loaded and attached capture program.
type Probe struct {
	Mode      Mode
	coll      *ebpf.Collection
	link      link.Link
	rd        *ringbuf.Reader
	framesLen int
}

// Record is one captured hit.
type Record struct {
	ID     int64         // the stack id (StackID, Walk)
	Frames []uint64      // decoded frames (Frames, Both, StackID, Walk, CFIWalk, CFIWalkCopy)
	Copy   stackcap.Copy // decoded copy (Copy, Both, CFIWalkCopy)
}

// Options says what a probe captures.
type Options struct {
	Mode  Mode
	Entry bool // stackcap.FramesOptions.Entry
	// MaxFrames is the frame count of Walk (0: stackcap.DefaultMaxFrames).
	MaxFrames int
	PID       int // the process traced; 0: every process
	// NoWakeup submits records without waking the reader (as argread
	// does): in a VM the wakeup's self-IPI costs microseconds per hit.
	// For benchmarks, with DiscardAll.
	NoWakeup bool
	// CFIMaps are the maps of CFIWalk (unwind.BPFTables.Maps); nil:
	// new empty ones, so that every step is by frame pointer.
	CFIMaps map[string]*ebpf.Map
}

// Program returns the instructions of a capture program writing to ring
// buffer "events", and the size of the frames (or stack id) part of its
// records.
func Program(tb testing.TB, o *Options) (asm.Instructions, int) {
	tb.Helper()
	mode := o.Mode
	fo := &stackcap.FramesOptions{Entry: o.Entry}
	fsize, csize := 0, 0
	if mode == Frames || mode == Both {
		fsize = stackcap.FramesSize(fo)
	}
	if mode == Copy || mode == Both || mode == CFIWalkCopy {
		csize = stackcap.CopySize(nil)
	}
	if mode == StackID {
		fsize = stackcap.StackIDSize
	}
	wo := &stackcap.WalkOptions{MaxFrames: o.MaxFrames, Entry: o.Entry, Scratch: stackcap.StackIDSize, Stack: -64}
	co := &stackcap.CFIWalkOptions{MaxFrames: o.MaxFrames, Entry: o.Entry, Scratch: stackcap.StackIDSize, Stack: -64}
	walk := mode == Walk || mode == CFIWalk || mode == CFIWalkCopy
	if walk {
		fsize = stackcap.StackIDSize
	}
	var callback asm.Instructions
	size := max(8, fsize+csize)
	insns := asm.Instructions{
		asm.Mov.Reg(asm.R6, asm.R1),
		asm.LoadMapPtr(asm.R1, 0).WithReference("events"),
		asm.Mov.Imm(asm.R2, int32(size)),
		asm.Mov.Imm(asm.R3, 0),
		asm.FnRingbufReserve.Call(),
		asm.JEq.Imm(asm.R0, 0, "exit"),
		asm.Mov.Reg(asm.R7, asm.R0),
	}
	if mode == StackID {
		f, err := stackcap.EmitStackID(elf.EM_X86_64, asm.R6, asm.R7, 0, "stacks", fo, "s")
		if err != nil {
			tb.Fatal(err)
		}
		insns = append(insns, f...)
	} else if walk {
		// The walk in the per-CPU scratch value (R8), its id copied to
		// the record.
		var f asm.Instructions
		var err error
		if mode == Walk {
			f, err = stackcap.EmitWalkID(elf.EM_X86_64, asm.R6, asm.R8, 0, "frames", wo, "w")
		} else {
			f, callback, err = stackcap.EmitCFIWalkID(elf.EM_X86_64, asm.R6, asm.R8, 0, "frames", co, "w")
		}
		if err != nil {
			tb.Fatal(err)
		}
		insns = append(insns,
			asm.StoreImm(asm.R10, -4, 0, asm.Word),
			asm.LoadMapPtr(asm.R1, 0).WithReference("scratch"),
			asm.Mov.Reg(asm.R2, asm.R10),
			asm.Add.Imm(asm.R2, -4),
			asm.FnMapLookupElem.Call(),
			asm.JNE.Imm(asm.R0, 0, "scratch_ok"),
			asm.Mov.Reg(asm.R1, asm.R7),
			asm.Mov.Imm(asm.R2, 0),
			asm.FnRingbufDiscard.Call(),
			asm.Ja.Label("exit"),
			asm.Mov.Reg(asm.R8, asm.R0).WithSymbol("scratch_ok"),
		)
		insns = append(insns, f...)
		insns = append(insns,
			asm.LoadMem(asm.R1, asm.R8, 0, asm.DWord),
			asm.StoreMem(asm.R7, 0, asm.R1, asm.DWord),
			asm.LoadMem(asm.R1, asm.R8, 8, asm.DWord),
			asm.StoreMem(asm.R7, 8, asm.R1, asm.DWord),
		)
	} else if fsize > 0 {
		f, err := stackcap.EmitFrames(elf.EM_X86_64, asm.R6, asm.R7, 0, fo, "f")
		if err != nil {
			tb.Fatal(err)
		}
		insns = append(insns, f...)
	}
	if csize > 0 {
		c, err := stackcap.EmitCopy(elf.EM_X86_64, asm.R6, asm.R7, int16(fsize), nil, "c")
		if err != nil {
			tb.Fatal(err)
		}
		insns = append(insns, c...)
	}
	insns = append(insns,
		asm.Mov.Reg(asm.R1, asm.R7),
		asm.Mov.Imm(asm.R2, 0),
	)
	if o.NoWakeup {
		insns = append(insns, asm.Mov.Imm(asm.R2, 1)) // BPF_RB_NO_WAKEUP
	}
	insns = append(insns,
		asm.FnRingbufSubmit.Call(),
		asm.Mov.Imm(asm.R0, 0).WithSymbol("exit"),
		asm.Return(),
	)
	if callback != nil {
		insns[0] = stackcap.WithProgramFunc(insns[0], "capture")
	}
	return append(insns, callback...), fsize
}

// Attach loads a capture program and attaches it to the start of symbol
// in the executable at path. The probe is closed when the test ends.
func Attach(tb testing.TB, path, symbol string, o *Options) *Probe {
	tb.Helper()
	coll, fsize := Load(tb, o)
	ex, err := link.OpenExecutable(path)
	if err != nil {
		tb.Fatal(err)
	}
	l, err := ex.Uprobe(symbol, coll.Programs["capture"], &link.UprobeOptions{PID: o.PID})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { l.Close() })
	rd, err := ringbuf.NewReader(coll.Maps["events"])
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { rd.Close() })
	return &Probe{Mode: o.Mode, coll: coll, link: l, rd: rd, framesLen: fsize}
}

// Next returns the next record, failing the test if none comes within
// 10 s.
func (p *Probe) Next(tb testing.TB) Record {
	tb.Helper()
	p.rd.SetDeadline(time.Now().Add(10 * time.Second))
	rec, err := p.rd.Read()
	if err != nil {
		tb.Fatalf("read capture: %v", err)
	}
	return p.decode(tb, rec.RawSample)
}

// Pending returns the records already in the ring buffer, without
// waiting for more.
func (p *Probe) Pending(tb testing.TB) []Record {
	tb.Helper()
	var out []Record
	p.rd.SetDeadline(time.Now())
	for {
		rec, err := p.rd.Read()
		if errors.Is(err, os.ErrDeadlineExceeded) {
			return out
		}
		if err != nil {
			tb.Fatalf("read capture: %v", err)
		}
		out = append(out, p.decode(tb, rec.RawSample))
	}
}

// decode decodes a record of the probe's mode.
func (p *Probe) decode(tb testing.TB, b []byte) Record {
	tb.Helper()
	var r Record
	var err error
	if p.Mode == StackID || p.Mode == Walk || p.Mode == CFIWalk || p.Mode == CFIWalkCopy {
		id, err := stackcap.DecodeStackID(b)
		if err != nil {
			tb.Fatal(err)
		}
		r.ID = id.ID
		m := p.coll.Maps["stacks"]
		if p.Mode != StackID {
			m = p.coll.Maps["frames"]
		}
		if r.Frames, err = stackcap.LookupStack(m, id); err != nil {
			tb.Fatal(err)
		}
	} else if p.framesLen > 0 {
		if r.Frames, err = stackcap.DecodeFrames(b[:p.framesLen]); err != nil {
			tb.Fatal(err)
		}
	}
	if p.Mode == Copy || p.Mode == Both || p.Mode == CFIWalkCopy {
		if r.Copy, err = stackcap.DecodeCopy(b[p.framesLen:]); err != nil {
			tb.Fatal(err)
		}
	}
	return r
}

// DiscardAll reads and drops every record from now on, in a goroutine
// that ends when the test does, so that a full ring never makes the
// capture skip work (benchmarks). Next must not be called afterwards.
func (p *Probe) DiscardAll(tb testing.TB) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		var rec ringbuf.Record
		for {
			// Records come without wakeups (NoWakeup): look every
			// 10 ms.
			p.rd.SetDeadline(time.Now().Add(10 * time.Millisecond))
			if err := p.rd.ReadInto(&rec); errors.Is(err, ringbuf.ErrClosed) {
				return
			}
		}
	}()
	tb.Cleanup(func() {
		p.rd.Close()
		<-done
	})
}

// Program returns the loaded capture program (for its run-time statistics).
func (p *Probe) Program() *ebpf.Program { return p.coll.Programs["capture"] }

// Symbols names the function symbols of an ELF file by virtual address
// (read with internal/elf/symtab).
type Symbols struct {
	syms []symtab.Symbol
}

// ReadSymbols reads the function symbols of path.
func ReadSymbols(tb testing.TB, path string) *Symbols {
	tb.Helper()
	f, err := elfnotes.Open(path)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	syms, err := symtab.Read(f)
	if err != nil {
		tb.Fatalf("%s: %v", path, err)
	}
	var fn []symtab.Symbol
	for _, s := range syms {
		if s.Type == elf.STT_FUNC && s.Value != 0 {
			fn = append(fn, s)
		}
	}
	sort.Slice(fn, func(i, j int) bool { return fn[i].Value < fn[j].Value })
	return &Symbols{syms: fn}
}

// Name returns the function containing virtual address addr, or "".
func (s *Symbols) Name(addr uint64) string {
	i := sort.Search(len(s.syms), func(i int) bool { return s.syms[i].Value > addr }) - 1
	if i < 0 {
		return ""
	}
	sym := s.syms[i]
	if addr-sym.Value >= max(sym.Size, 1) {
		return ""
	}
	return sym.Name
}

// Namer names addresses of one process: "function" in the objects whose
// symbols are read, "[path]" in other file mappings, "?" elsewhere.
type Namer struct {
	maps []procfs.Mapping
	syms map[string]*Symbols
	load map[string]elfnotes.LoadMap
}

// NewNamer snapshots the mappings of process pid.
func NewNamer(tb testing.TB, pid int) *Namer {
	tb.Helper()
	maps, err := procfs.ReadMaps(pid)
	if err != nil {
		tb.Fatal(err)
	}
	return &Namer{maps: maps, syms: map[string]*Symbols{}, load: map[string]elfnotes.LoadMap{}}
}

// Object returns the path of the file mapped at pc, or "".
func (n *Namer) Object(pc uint64) string {
	for _, m := range n.maps {
		if pc >= m.Start && pc < m.End && m.FileBacked() {
			return m.Path
		}
	}
	return ""
}

// Name names pc, reading the symbols of objects in symbolize (paths).
func (n *Namer) Name(tb testing.TB, pc uint64, symbolize ...string) string {
	tb.Helper()
	for _, m := range n.maps {
		if pc < m.Start || pc >= m.End || !m.FileBacked() {
			continue
		}
		if !slices.Contains(symbolize, m.Path) {
			return "[" + filepath.Base(m.Path) + "]"
		}
		if n.syms[m.Path] == nil {
			n.syms[m.Path] = ReadSymbols(tb, m.Path)
			f, err := elfnotes.Open(m.Path)
			if err != nil {
				tb.Fatal(err)
			}
			n.load[m.Path] = f.LoadMap()
			f.Close()
		}
		if vaddr, ok := n.load[m.Path].OffsetToAddr(pc - m.Start + m.Offset); ok {
			if s := n.syms[m.Path].Name(vaddr); s != "" {
				return s
			}
		}
		return "[" + filepath.Base(m.Path) + "]"
	}
	return "?"
}

// Load loads a capture program, closed when the test ends, and returns
// it with the size of the frames (or stack id) part of its records.
func Load(tb testing.TB, o *Options) (*ebpf.Collection, int) {
	tb.Helper()
	testutil.RequireBPF(tb)
	insns, fsize := Program(tb, o)
	spec := &ebpf.CollectionSpec{
		Maps: map[string]*ebpf.MapSpec{
			"events":  {Name: "events", Type: ebpf.RingBuf, MaxEntries: 4 << 20},
			"stacks":  stackcap.StackMapSpec("stacks", 1024, 0),
			"frames":  stackcap.FramesMapSpec("frames", 1024, o.MaxFrames),
			"scratch": {Name: "scratch", Type: ebpf.PerCPUArray, KeySize: 4, ValueSize: uint32(stackcap.StackIDSize + max(stackcap.WalkScratchSize(&stackcap.WalkOptions{MaxFrames: o.MaxFrames}), stackcap.CFIWalkScratchSize(&stackcap.CFIWalkOptions{MaxFrames: o.MaxFrames}))), MaxEntries: 1},
		},
		Programs: map[string]*ebpf.ProgramSpec{"capture": {
			Name: "capture", Type: ebpf.Kprobe, License: "GPL", Instructions: insns,
		}},
	}
	var copts ebpf.CollectionOptions
	if o.Mode == CFIWalk || o.Mode == CFIWalkCopy {
		spec.Maps[stackcap.DefaultCFIProcsMap] = stackcap.CFIProcsMapSpec(stackcap.DefaultCFIProcsMap, 16)
		spec.Maps[stackcap.DefaultCFITablesMap] = stackcap.CFITablesMapSpec(stackcap.DefaultCFITablesMap, 16)
		spec.Maps[stackcap.DefaultCFIRowsMap] = stackcap.CFIRowsMapSpec(stackcap.DefaultCFIRowsMap, 16)
		spec.Maps[stackcap.DefaultCFIWantedMap] = stackcap.CFIWantedMapSpec(stackcap.DefaultCFIWantedMap, 16)
		for name, m := range o.CFIMaps {
			if ms := spec.Maps[name]; ms != nil {
				ms.MaxEntries = m.MaxEntries()
			}
		}
		copts.MapReplacements = o.CFIMaps
	}
	// The verifier's statistics (instructions processed) in
	// VerifierLog.
	copts.Programs.LogLevel = ebpf.LogLevelStats
	coll, err := ebpf.NewCollectionWithOptions(spec, copts)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(coll.Close)
	return coll, fsize
}

// CheckWalkVerifier checks the verifier's statistics of a walk with
// call frame information: load returns the verifier's log (at
// ebpf.LogLevelStats) of a program with the walk for frames frames, at
// a function's entry or not, for 1, 2, stackcap.DefaultMaxFrames and
// stackcap.MaxFrames frames. The instructions processed must not grow
// with the frames (the loop is bpf_loop's): at MaxFrames, at most twice
// those at 2.
func CheckWalkVerifier(t *testing.T, load func(frames int, entry bool) string) {
	t.Helper()
	processed := map[int]int{}
	for _, frames := range []int{1, 2, stackcap.DefaultMaxFrames, stackcap.MaxFrames} {
		for _, entry := range []bool{false, true} {
			log := load(frames, entry)
			m := regexp.MustCompile(`processed (\d+) insns`).FindStringSubmatch(log)
			if m == nil {
				t.Fatalf("%d frames: no statistics in the verifier's log:\n%s", frames, log)
			}
			n, _ := strconv.Atoi(m[1])
			t.Logf("%d frames, entry %v: %d instructions processed", frames, entry, n)
			if entry {
				processed[frames] = n
			}
		}
	}
	if processed[stackcap.MaxFrames] > 2*processed[2] {
		t.Errorf("instructions processed: %v: they grow with the frames", processed)
	}
}
