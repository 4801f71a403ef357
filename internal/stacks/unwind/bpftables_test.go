package unwind

import (
	"debug/elf"
	"errors"
	"slices"
	"sort"
	"strings"
	"testing"
	"unsafe"

	"github.com/cilium/ebpf"
	"github.com/usdtkit/usdtkit/internal/bpf/stackcap"
	"github.com/usdtkit/usdtkit/internal/bpf/stackcap/stacktest"
	"github.com/usdtkit/usdtkit/internal/proc/procfs"
	"github.com/usdtkit/usdtkit/internal/testutil"
	"golang.org/x/sys/unix"
)

// TestRowBPFLayout: a Row is the row the walk in the program reads
// (stackcap's offsets and values).
func TestRowBPFLayout(t *testing.T) {
	var r Row
	for _, c := range []struct {
		name       string
		have, want uintptr
	}{
		{"size", unsafe.Sizeof(r), stackcap.CFIRowSize},
		{"PC", unsafe.Offsetof(r.PC), stackcap.CFIRowPC},
		{"CFAOffset", unsafe.Offsetof(r.CFAOffset), stackcap.CFIRowCFAOffset},
		{"RAOffset", unsafe.Offsetof(r.RAOffset), stackcap.CFIRowRAOffset},
		{"FPOffset", unsafe.Offsetof(r.FPOffset), stackcap.CFIRowFPOffset},
		{"Kind", unsafe.Offsetof(r.Kind), stackcap.CFIRowKind},
		{"Arg", unsafe.Offsetof(r.Arg), stackcap.CFIRowArg},
		{"RA", unsafe.Offsetof(r.RA), stackcap.CFIRowRA},
		{"FP", unsafe.Offsetof(r.FP), stackcap.CFIRowFP},
		{"KindNone", uintptr(KindNone), stackcap.CFIKindNone},
		{"KindEnd", uintptr(KindEnd), stackcap.CFIKindEnd},
		{"KindSP", uintptr(KindSP), stackcap.CFIKindSP},
		{"KindFP", uintptr(KindFP), stackcap.CFIKindFP},
		{"KindPLT", uintptr(KindPLT), stackcap.CFIKindPLT},
		{"RAAtCFA", uintptr(RAAtCFA), stackcap.CFIRAAtCFA},
		{"FPSame", uintptr(FPSame), stackcap.CFIFPSame},
		{"FPAtCFA", uintptr(FPAtCFA), stackcap.CFIFPAtCFA},
		{"MaxTableRows", MaxTableRows, stackcap.CFIMaxTableRows},
	} {
		if c.have != c.want {
			t.Errorf("%s: unwind has %d, stackcap %d", c.name, c.have, c.want)
		}
	}
}

// loadedChain starts chain.c built with flags and returns its Space and
// an Unwinder with its objects loaded.
func loadedChain(t *testing.T, flags ...string) (*testutil.Tracee, *Space, *Unwinder) {
	t.Helper()
	testutil.RequireBPF(t)
	tr := testutil.StartTracee(t, stacktest.BuildChain(t, flags...))
	tr.WaitReady(t)
	var spaces Spaces
	sp, err := spaces.Get(tr.PID())
	if err != nil {
		t.Fatal(err)
	}
	u, err := New(&Options{MaxDepth: stackcap.DefaultMaxFrames})
	if err != nil {
		t.Fatal(err)
	}
	if err := u.Load(sp); err != nil {
		t.Fatal(err)
	}
	return tr, sp, u
}

// processTables returns the Space of process pid, an Unwinder with
// opts, and BPF tables holding the process's objects, closed when tb
// ends.
func processTables(tb testing.TB, pid int, opts *Options) (*Space, *Unwinder, *BPFTables) {
	tb.Helper()
	var spaces Spaces
	sp, err := spaces.Get(pid)
	if err != nil {
		tb.Fatal(err)
	}
	u, err := New(opts)
	if err != nil {
		tb.Fatal(err)
	}
	tabs, err := NewBPFTables(u, nil)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { tabs.Close() })
	if err := tabs.AddProcess(sp); err != nil {
		tb.Fatal(err)
	}
	return sp, u, tabs
}

// tableRows returns the rows map values each object with a Table sp
// maps takes (its rows and page index), by device and inode.
func tableRows(t *testing.T, sp *Space, u *Unwinder) map[fileID]int {
	t.Helper()
	rows := map[fileID]int{}
	for _, m := range sp.exec {
		if !m.FileBacked() {
			continue
		}
		if tab, err := u.Table(sp, m); err == nil && len(tab.Rows) > 0 {
			x := newPageIndex(tab.Rows)
			rows[fileID{m.Major, m.Minor, m.Inode}] = x.slots() + len(tab.Rows)
		}
	}
	if len(rows) < 2 {
		t.Fatalf("tables of %d objects, want the executable's, libc's and ld.so's", len(rows))
	}
	return rows
}

// TestBPFTablesFull: a process whose tables do not fit is added with
// an error wrapping ErrTablesFull; tables of removed processes make room
// for others, least recently used first, and those in use are kept.
func TestBPFTablesFull(t *testing.T) {
	_, sp1, u := loadedChain(t, "-O2", "-fomit-frame-pointer")
	tr2, _, _ := loadedChain(t, "-O0")
	var spaces Spaces
	sp2, err := spaces.Get(tr2.PID())
	if err != nil {
		t.Fatal(err)
	}
	rows1, rows2 := tableRows(t, sp1, u), tableRows(t, sp2, u)
	total1 := 0
	for _, n := range rows1 {
		total1 += n
	}
	var only1, only2 []fileID
	for id := range rows1 {
		if _, ok := rows2[id]; !ok {
			only1 = append(only1, id)
		}
	}
	for id := range rows2 {
		if _, ok := rows1[id]; !ok {
			only2 = append(only2, id)
		}
	}
	if len(only1) != 1 || len(only2) != 1 || rows2[only2[0]] > rows1[only1[0]] {
		t.Fatalf("executables' tables: %v of %v and %v of %v; want one each, the second no larger", only1, rows1, only2, rows2)
	}

	t.Run("too small", func(t *testing.T) {
		b, err := NewBPFTables(u, &BPFTablesOptions{Rows: total1 - 1})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { b.Close() })
		if err := b.AddProcess(sp1); !errors.Is(err, ErrTablesFull) {
			t.Fatalf("have %v, want %v", err, ErrTablesFull)
		}
		if err := b.AddProcess(sp2); !errors.Is(err, ErrTablesFull) {
			t.Fatalf("second process: have %v, want %v (the first one's tables are in use)", err, ErrTablesFull)
		}
	})
	t.Run("eviction", func(t *testing.T) {
		b, err := NewBPFTables(u, &BPFTablesOptions{Rows: total1})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { b.Close() })
		if err := b.AddProcess(sp1); err != nil {
			t.Fatal(err)
		}
		if err := b.RemoveProcess(sp1.PID); err != nil {
			t.Fatal(err)
		}
		if len(b.objs) != len(rows1) {
			t.Fatalf("%d tables kept after the process left, want %d", len(b.objs), len(rows1))
		}
		if err := b.AddProcess(sp2); err != nil {
			t.Fatal(err)
		}
		if _, ok := b.objs[only1[0]]; ok {
			t.Errorf("the first executable's table is still there")
		}
		for id := range rows2 {
			if bt := b.objs[id]; bt == nil || bt.refs != 1 {
				t.Errorf("table %v: %+v, want one reference", id, bt)
			}
		}
		if err := b.AddProcess(sp1); !errors.Is(err, ErrTablesFull) {
			t.Fatalf("first process again: have %v, want %v", err, ErrTablesFull)
		}
		if err := b.Close(); err != nil {
			t.Fatal(err)
		}
		if err := b.Close(); err != nil {
			t.Fatalf("second Close: %v", err)
		}
	})
}

// TestBPFWalkMatchesTables: the walk with call frame information in the
// program (stackcap.EmitCFIWalkID, on the maps of a BPFTables) finds the
// frames UnwindTables finds in a stack copy of the same hit, at leaf's
// entry in chain.c built -O2 -fomit-frame-pointer: whole stacks, through
// libc's qsort, to main and beyond it to the outermost frame. Where the
// stack is deeper than the copy (deep 40's 41 frames of 1.2 KiB), the
// program, which reads the stack itself, goes on; it keeps MaxFrames
// frames (deep 200). CFIWalkOptions.Entry changes nothing where tables
// cover the function.
func TestBPFWalkMatchesTables(t *testing.T) {
	tr, sp, u := loadedChain(t, "-O2", "-fomit-frame-pointer")
	exe := sp.exec[0].Path
	b, err := NewBPFTables(u, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	if err := b.AddProcess(sp); err != nil {
		t.Fatal(err)
	}
	ref := stacktest.Attach(t, exe, "leaf", &stacktest.Options{Mode: stacktest.Copy, Entry: true, PID: tr.PID()})
	walk := stacktest.Attach(t, exe, "leaf", &stacktest.Options{Mode: stacktest.CFIWalk, Entry: true, PID: tr.PID(), CFIMaps: b.Maps()})
	// At a function's entry the table's row (CFA = SP+8) unwinds frame
	// 0; Entry matters only where the walk steps by frame pointer.
	noEntry := stacktest.Attach(t, exe, "leaf", &stacktest.Options{Mode: stacktest.CFIWalk, PID: tr.PID(), CFIMaps: b.Maps()})
	n := stacktest.NewNamer(t, tr.PID())
	libc := ""
	// sort calls leaf once per comparison: it goes last, and only its
	// first stack is read.
	for _, command := range []string{"levels", "deep 3", "deep 40", "deep 200", "sort"} {
		t.Run(command, func(t *testing.T) {
			tr.Do(t, command)
			c := ref.Next(t).Copy
			have := walk.Next(t).Frames
			if ne := noEntry.Next(t).Frames; !slices.Equal(ne, have) {
				t.Errorf("without Entry: %x\nwith Entry: %x", ne, have)
			}
			want, err := u.UnwindTables(sp, elf.EM_X86_64, Regs{PC: c.IP, SP: c.SP, FP: c.FP, Entry: true}, Stack{Base: c.Base, Data: c.Stack})
			if err != nil {
				t.Fatal(err)
			}
			var wantPCs []uint64
			for _, f := range want.Frames {
				wantPCs = append(wantPCs, f.PC)
			}
			var names []string
			for _, pc := range have {
				names = append(names, n.Name(t, pc, exe))
			}
			t.Logf("frames %v; tables: stop %v (%v)", names, want.Stop, want.Err)
			if want.Stop == StopOutsideCopy && strings.HasPrefix(command, "deep ") {
				if len(have) <= len(wantPCs) || !slices.Equal(have[:len(wantPCs)], wantPCs) {
					t.Fatalf("program: %x\ntables (to the copy's end): %x", have, wantPCs)
				}
			} else if !slices.Equal(have, wantPCs) || want.Stop != StopEnd {
				t.Fatalf("program: %x\ntables (stop %v): %x", have, want.Stop, wantPCs)
			}
			if command == "deep 200" {
				if len(names) != stackcap.DefaultMaxFrames || names[0] != "leaf" || slices.ContainsFunc(names[1:], func(s string) bool { return s != "deep" }) {
					t.Errorf("have %d frames %v, want leaf and %d deep", len(names), names, stackcap.DefaultMaxFrames-1)
				}
				return
			}
			var chain []string
			switch command {
			case "levels":
				chain = []string{"leaf", "level3", "level2", "level1", "main"}
			case "deep 3", "deep 40":
				chain = append([]string{"leaf"}, slices.Repeat([]string{"deep"}, map[string]int{"deep 3": 4, "deep 40": 41}[command])...)
				chain = append(chain, "main")
			case "sort":
				if libc = n.Object(have[2]); libc == "" {
					t.Fatalf("frame 2 (qsort) %#x is in no object", have[2])
				}
				chain = []string{"leaf", "cmp"}
				i := 2
				for i < len(names) && n.Object(have[i]) == libc {
					chain = append(chain, names[i])
					i++
				}
				if i == 2 {
					t.Fatalf("have %v: no libc frames after cmp", names)
				}
				chain = append(chain, "sort_them", "main")
			}
			if len(names) <= len(chain) || !slices.Equal(names[:len(chain)], chain) {
				t.Fatalf("have %v, want %v then __libc_start_call_main", names, chain)
			}
			// Beyond main: libc's start (__libc_start_call_main,
			// __libc_start_main) and _start.
			if obj := n.Object(have[len(chain)]); obj == "" || obj == exe {
				t.Errorf("frame after main %#x is in %q, want libc", have[len(chain)], obj)
			}
		})
	}
}

// BenchmarkCFIWalk attaches four capture programs to the entry of
// chain.c's leaf, built -O2 -fno-omit-frame-pointer, each keeping
// cfiWalkFrames frames, and runs `loop 1000 12` per iteration (leaf
// under 13 calls of nest, every frame in the executable): an empty
// record (the floor), the frame-pointer walk (stackcap.EmitWalkID), the
// walk with call frame information on the process's tables, and the same
// walk without tables (every step by frame pointer: the cost of the loop
// without the searches). Both walks find the same cfiWalkFrames frames
// (the benchmark fails otherwise). It reports each program's BPF run
// time per hit (kernel run-time statistics) and the ratios to the floor
// and to the frame-pointer walk (cfi/fp: the walk's cost per hit beside
// the frame-pointer walk's on the same frames).
func BenchmarkCFIWalk(b *testing.B) {
	const cfiWalkFrames = 10
	testutil.RequireBPF(b)
	st, err := ebpf.EnableStats(uint32(unix.BPF_STATS_RUN_TIME))
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	exe := stacktest.BuildChain(b, "-O2", "-fno-omit-frame-pointer")
	tr := testutil.StartTracee(b, exe)
	tr.WaitReady(b)
	_, _, tabs := processTables(b, tr.PID(), nil)
	modes := []struct {
		name string
		opts stacktest.Options
	}{
		{"none", stacktest.Options{Mode: stacktest.None}},
		{"fp", stacktest.Options{Mode: stacktest.Walk}},
		{"cfi", stacktest.Options{Mode: stacktest.CFIWalk, CFIMaps: tabs.Maps()}},
		{"cfi-notables", stacktest.Options{Mode: stacktest.CFIWalk}},
	}
	var probes []*stacktest.Probe
	for _, m := range modes {
		o := m.opts
		o.Entry, o.PID, o.NoWakeup, o.MaxFrames = true, tr.PID(), true, cfiWalkFrames
		probes = append(probes, stacktest.Attach(b, exe, "leaf", &o))
	}
	const loop = "loop 1000 12"
	// One hit with wakeups off is read after the command's line.
	tr.Do(b, "loop 1 12")
	frames := make([][]uint64, len(modes))
	for i, p := range probes {
		frames[i] = p.Next(b).Frames
		p.DiscardAll(b)
	}
	for i := 2; i < len(modes); i++ {
		if len(frames[1]) != cfiWalkFrames || !slices.Equal(frames[i], frames[1]) {
			b.Fatalf("%s walk: %x\nfp walk: %x; want the same %d frames", modes[i].name, frames[i], frames[1], cfiWalkFrames)
		}
	}
	tr.Do(b, loop) // warm up
	before := runTimes(b, probes)
	b.ResetTimer()
	for b.Loop() {
		tr.Do(b, loop)
	}
	b.StopTimer()
	after := runTimes(b, probes)
	ns := make([]float64, len(probes))
	for i := range probes {
		ns[i] = (after[i].Runtime - before[i].Runtime).Seconds() * 1e9 / float64(max(after[i].RunCount-before[i].RunCount, 1))
	}
	for i, m := range modes {
		b.ReportMetric(ns[i], m.name+"-bpf-ns/hit")
	}
	b.ReportMetric(cfiWalkFrames, "frames")
	b.ReportMetric(ns[1]/ns[0], "fp/none")
	b.ReportMetric(ns[2]/ns[0], "cfi/none")
	b.ReportMetric(ns[2]/ns[1], "cfi/fp")
	b.ReportMetric(ns[3]/ns[1], "cfi-notables/fp")
}

func runTimes(b *testing.B, probes []*stacktest.Probe) []*ebpf.ProgramStats {
	var out []*ebpf.ProgramStats
	for _, p := range probes {
		s, err := p.Program().Stats()
		if err != nil {
			b.Fatal(err)
		}
		out = append(out, s)
	}
	return out
}

// TestRowSpans: rows are taken first fit and given back merged with
// their free neighbours.
func TestRowSpans(t *testing.T) {
	b := &BPFTables{free: []rowSpan{{0, 100}}}
	take := func(n uint32, want uint32, ok bool) {
		t.Helper()
		first, have := b.alloc(n)
		if have != ok || ok && first != want {
			t.Fatalf("alloc(%d): %d, %v; want %d, %v (free %v)", n, first, have, want, ok, b.free)
		}
	}
	take(30, 0, true)
	take(30, 30, true)
	take(40, 60, true)
	take(1, 0, false)
	b.freeRows(rowSpan{30, 30})
	take(31, 0, false)
	b.freeRows(rowSpan{0, 30})
	if want := []rowSpan{{0, 60}}; !slices.Equal(b.free, want) {
		t.Fatalf("free %v, want %v", b.free, want)
	}
	b.freeRows(rowSpan{60, 40})
	if want := []rowSpan{{0, 100}}; !slices.Equal(b.free, want) {
		t.Fatalf("free %v, want %v", b.free, want)
	}
	take(100, 0, true)
}

// TestBPFWalkAsksForProcess: a hit of a process the maps do not know
// walks by frame pointer and puts the process in the wanted map, once
// however many hits come before TakeWanted takes it; once added, its
// hits walk with its tables and ask for nothing. A process whose
// mappings do not hold the instruction pointer (they changed, as after
// an exec) walks by frame pointer from frame 0 and asks again.
func TestBPFWalkAsksForProcess(t *testing.T) {
	tr, sp, u := loadedChain(t, "-O2", "-fomit-frame-pointer")
	exe := sp.exec[0].Path
	b, err := NewBPFTables(u, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	walk := stacktest.Attach(t, exe, "leaf", &stacktest.Options{Mode: stacktest.CFIWalk, Entry: true, PID: tr.PID(), CFIMaps: b.Maps()})
	fp := stacktest.Attach(t, exe, "leaf", &stacktest.Options{Mode: stacktest.Walk, Entry: true, PID: tr.PID()})
	n := stacktest.NewNamer(t, tr.PID())
	names := func(pcs []uint64) []string {
		var s []string
		for _, pc := range pcs {
			s = append(s, n.Name(t, pc, exe))
		}
		return s
	}
	wanted := func(want []int) {
		t.Helper()
		have, err := b.TakeWanted(16)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(have, want) {
			t.Fatalf("wanted %v, want %v", have, want)
		}
	}
	pid := tr.PID()
	wanted(nil)
	byFP := func(what string) {
		t.Helper()
		tr.Do(t, "levels")
		tr.Do(t, "levels")
		for range 2 {
			have, want := walk.Next(t).Frames, fp.Next(t).Frames
			if !slices.Equal(have, want) {
				t.Fatalf("%s: the walk found %v, the frame-pointer walk %v", what, names(have), names(want))
			}
		}
		wanted([]int{pid})
	}
	byFP("unknown")

	if err := b.AddProcess(sp); err != nil {
		t.Fatal(err)
	}
	tr.Do(t, "levels")
	fp.Next(t)
	have := names(walk.Next(t).Frames)
	if chain := []string{"leaf", "level3", "level2", "level1", "main"}; len(have) <= len(chain) || !slices.Equal(have[:len(chain)], chain) {
		t.Fatalf("added: have %v, want %v then libc's start", have, chain)
	}
	wanted(nil)

	// Mappings that are not the process's: its C library alone.
	var libc []procfs.Mapping
	for _, m := range sp.all {
		if m.Path != exe {
			libc = append(libc, m)
		}
	}
	if err := b.AddProcess(NewSpace(pid, libc)); err != nil {
		t.Fatal(err)
	}
	byFP("stale")
}

// TestPageIndex: for every address, the rows the walk searches (its
// page's entry in the page index) hold the row Table.Lookup finds, and
// the index stays within a page per indexRowsPerPage rows: on rows
// spread over many pages, rows two bytes apart (the smallest pages), on
// one page, on a span too wide for 4 KiB pages, at the top of the
// 32-bit addresses, and on a single row.
func TestPageIndex(t *testing.T) {
	rowsAt := func(pcs ...uint32) []Row {
		var rows []Row
		for _, pc := range pcs {
			rows = append(rows, Row{PC: pc, Kind: KindSP, CFAOffset: int32(pc % 97)})
		}
		rows[len(rows)-1].Kind = KindNone
		return rows
	}
	var spread, wide, dense []uint32
	for pc := uint32(0x1234); pc < 0x9000; pc += 0x10 + pc%0x70 {
		spread = append(spread, pc)
	}
	for pc := uint32(0x1001); pc < 0x1201; pc += 2 {
		dense = append(dense, pc)
	}
	for i := range uint32(64) {
		wide = append(wide, 0x400000+i*i*0x3000)
	}
	for _, tc := range []struct {
		name string
		rows []Row
	}{
		{"spread", rowsAt(spread...)},
		{"dense", rowsAt(dense...)},
		{"one page", rowsAt(0x2010, 0x2040, 0x2100, 0x2ff0)},
		{"wide", rowsAt(wide...)},
		{"one row", rowsAt(0x1000)},
		{"top", rowsAt(0xfffff000, 0xfffffff0)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tab := &Table{Rows: tc.rows}
			x := newPageIndex(tc.rows)
			if len(x.pages) > max(1, len(tc.rows)/indexRowsPerPage) {
				t.Fatalf("%d pages for %d rows", len(x.pages), len(tc.rows))
			}
			// search is the walk's: the last row at most pc among
			// the page's, or none.
			search := func(pc uint32) (Row, bool) {
				if pc < x.base {
					return Row{}, false
				}
				p := min(uint64(pc-x.base)>>x.shift, uint64(len(x.pages)-1))
				e := x.pages[p]
				if int(e[0]+e[1]) > len(tc.rows) {
					t.Fatalf("page %d: rows %d+%d of %d", p, e[0], e[1], len(tc.rows))
				}
				rows := tc.rows[e[0] : e[0]+e[1]]
				i := sort.Search(len(rows), func(i int) bool { return rows[i].PC > pc })
				if i == 0 {
					return Row{}, false
				}
				return rows[i-1], true
			}
			first, last := uint64(tc.rows[0].PC), uint64(tc.rows[len(tc.rows)-1].PC)
			for a := first - min(first, 0x2000); a <= min(last+0x2000, 1<<32-1); a += 1 + a%29 {
				pc := uint32(a)
				want := tab.Lookup(pc)
				have, ok := search(pc)
				if !ok {
					if want.Kind != KindNone || pc >= tc.rows[0].PC {
						t.Fatalf("%#x: no row, want %+v", pc, want)
					}
					continue
				}
				if have != want {
					t.Fatalf("%#x: have %+v, want %+v", pc, have, want)
				}
			}
		})
	}
}
