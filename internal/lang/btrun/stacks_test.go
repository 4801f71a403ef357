package btrun

import (
	"github.com/cilium/ebpf"

	"debug/elf"
	"os"
	"reflect"
	"slices"
	"testing"

	"github.com/usdtkit/usdtkit/internal/bpf/stackcap"
	"github.com/usdtkit/usdtkit/internal/bpf/stackcap/stacktest"
	"github.com/usdtkit/usdtkit/internal/lang/btgen"
	"github.com/usdtkit/usdtkit/internal/lang/btlang"
	"github.com/usdtkit/usdtkit/internal/lang/btprint"
	"github.com/usdtkit/usdtkit/internal/lang/layout"
	"github.com/usdtkit/usdtkit/internal/proc/procfs"
	"github.com/usdtkit/usdtkit/internal/stacks/symbolize"
	"github.com/usdtkit/usdtkit/internal/stacks/unwind"
	"github.com/usdtkit/usdtkit/internal/testutil"
)

// TestMergeStackKeys: entries whose keys print alike (stacks differing
// only in the frame that ustack(N) dropped to keep the caller) are one
// entry; the others are kept, and maps of other aggregations untouched.
func TestMergeStackKeys(t *testing.T) {
	stack := &btgen.StackInfo{Frames: 2, Map: "stacks2"}
	mi := &btgen.MapInfo{KeyStacks: []*btgen.StackInfo{stack, nil}}
	keys := []layout.KeyField{{Kind: layout.KeyStack}, {Kind: layout.KeyString, Size: 16}}
	entries := func() []btprint.MapEntry {
		return []btprint.MapEntry{
			{Key: []btprint.Key{{Int: 7, Str: "\n    leaf+0\n    level3+21\n"}, {Str: "chain"}}, Value: 2},
			{Key: []btprint.Key{{Int: 3, Str: "\n    leaf+0\n    level3+21\n"}, {Str: "chain"}}, Value: 5},
			{Key: []btprint.Key{{Int: 4, Str: "\n    leaf+0\n    level3+21\n"}, {Str: "other"}}, Value: 1},
			{Key: []btprint.Key{{Int: 9, Str: "\n    leaf+0\n    cmp+44\n"}, {Str: "chain"}}, Value: 4},
		}
	}
	tests := []struct {
		agg  btprint.Agg
		want []uint64 // values in order
		ids  []int64
	}{
		{btprint.AggCount, []uint64{7, 1, 4}, []int64{3, 4, 9}},
		{btprint.AggSum, []uint64{7, 1, 4}, []int64{3, 4, 9}},
		{btprint.AggMax, []uint64{2, 5, 1, 4}, []int64{7, 3, 4, 9}},
	}
	for _, tt := range tests {
		m := &btprint.Map{Name: "@", Keys: keys, Agg: tt.agg, Entries: entries()}
		mergeStackKeys(mi, m)
		var got []uint64
		var ids []int64
		for _, e := range m.Entries {
			got = append(got, e.Value)
			ids = append(ids, e.Key[0].Int)
		}
		if !slices.Equal(got, tt.want) || !slices.Equal(ids, tt.ids) {
			t.Errorf("%v: values %v ids %v, want %v %v", tt.agg, got, ids, tt.want, tt.ids)
		}
	}
}

// TestOnlyPID: the pid the loader makes a constant (btgen.MapStackConf) is
// the one process every probe site is attached for, whether by its own
// Site.PID or by Options.PIDs; none when a site traces every process or
// sites trace different ones. BEGIN, END and interval blocks, run by the
// runner itself, do not count.
func TestOnlyPID(t *testing.T) {
	block := func(kind btlang.ProbeKind, pids ...int) btgen.Block {
		b := btgen.Block{Kind: kind}
		for _, p := range pids {
			b.Sites = append(b.Sites, btgen.Site{PID: p})
		}
		return b
	}
	tests := []struct {
		name   string
		blocks []btgen.Block
		pids   []int
		want   int
	}{
		{"site pids", []btgen.Block{block(0, 7, 7), block(0, 7)}, nil, 7},
		{"options pid", []btgen.Block{block(0, 0, 0)}, []int{7}, 7},
		{"site pid and options", []btgen.Block{block(0, 7, 0)}, []int{7}, 7},
		{"two processes", []btgen.Block{block(0, 0)}, []int{7, 8}, 0},
		{"two site pids", []btgen.Block{block(0, 7), block(0, 8)}, nil, 0},
		{"every process", []btgen.Block{block(0, 0)}, nil, 0},
		{"special block", []btgen.Block{block(btlang.ProbeBegin, 0), block(0, 7)}, nil, 7},
		{"no sites", nil, []int{7}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := onlyPID(&btgen.Program{Blocks: tt.blocks}, tt.pids); got != tt.want {
				t.Errorf("have %d, want %d", got, tt.want)
			}
		})
	}
}

// TestUnwindRereadsMappings: a stack copy whose instruction pointer is in
// none of the mappings read (a library mapped since, as the dynamic
// loader maps them while a command started stopped runs) makes unwind
// read the process's mappings again, at most maxRereads times.
func TestUnwindRereadsMappings(t *testing.T) {
	pid := os.Getpid()
	ip := uint64(reflect.ValueOf(TestUnwindRereadsMappings).Pointer())
	s := &stacks{copies: true}
	s.init()
	t.Cleanup(s.close)
	s.procs[pid] = nil
	s.spaces[pid] = unwind.NewSpace(pid, nil)
	info := &btgen.StackInfo{Frames: 127, Machine: elf.EM_X86_64}
	pcs := s.unwind(pid, info, stackcap.Copy{IP: ip}, false)
	if len(pcs) == 0 || pcs[0] != ip {
		t.Errorf("unwind: %#x, want %#x first", pcs, ip)
	}
	if sp := s.spaces[pid]; sp == nil || !mapped(sp, ip) {
		t.Fatalf("the mappings were not read again: %#x is in none", ip)
	}
	if s.rereads[pid] != 1 {
		t.Errorf("%d rereads, want 1", s.rereads[pid])
	}
	// An address mapped nowhere rereads no more than maxRereads times.
	for range 2 * maxRereads {
		s.unwind(pid, info, stackcap.Copy{IP: 8}, false)
	}
	if s.rereads[pid] != maxRereads {
		t.Errorf("%d rereads, want %d", s.rereads[pid], maxRereads)
	}
}

// TestFormatEmptyStack: an empty stack (a profile sample of a kernel
// thread or the idle task) prints as nothing, as bpftrace prints it:
// "@[, swapper/0]: 4".
func TestFormatEmptyStack(t *testing.T) {
	for _, info := range []*btgen.StackInfo{{Frames: 127}, {Frames: 127, Perf: true}} {
		if have := formatStack(nil, info, 4); have != "" {
			t.Errorf("perf %v: %q, want \"\"", info.Perf, have)
		}
	}
}

// TestUnwindObjectsAfterExit: a process that exits after its mappings
// are read but before its objects' CFI is (its stacks still in the ring
// buffer) has its objects read through the files its Symbolizer opened,
// so that stacks through its libraries unwind with CFI: an object that
// cannot be opened through the process anymore is not left without CFI.
func TestUnwindObjectsAfterExit(t *testing.T) {
	bin := stacktest.BuildChain(t, "-O2", "-fomit-frame-pointer")
	tc := testutil.StartTracee(t, bin)
	tc.WaitReady(t)
	pid := tc.PID()
	s := &stacks{copies: true}
	s.init()
	t.Cleanup(s.close)
	sym, err := symbolize.New(pid, &symbolize.Options{Cache: s.cache})
	if err != nil {
		t.Fatal(err)
	}
	s.procs[pid] = sym
	maps, err := procfs.ReadMaps(pid)
	if err != nil {
		t.Fatal(err)
	}
	sp := unwind.NewSpace(pid, maps)
	tc.Quit(t)

	var objs []procfs.Mapping
	for _, m := range maps {
		if m.Exec() && m.FileBacked() {
			objs = append(objs, m)
		}
	}
	if len(objs) < 3 { // the program, libc, ld.so
		t.Fatalf("%d objects mapped executable, want the program, libc and ld.so: %v", len(objs), objs)
	}
	for _, m := range objs {
		o := procfs.Object{PID: pid, Path: m.Path, Major: m.Major, Minor: m.Minor, Inode: m.Inode, Mappings: []procfs.Mapping{m}}
		if f, err := procfs.Open(o); err == nil {
			f.Close()
			t.Fatalf("%s still opens through the exited process", m.Path)
		}
	}
	if err := s.unw.Load(sp); err != nil {
		t.Fatalf("Load after exit: %v", err)
	}
	for _, m := range objs {
		if err := s.unw.ObjectError(sp, m); err != nil {
			t.Errorf("%s: %v", m.Path, err)
		}
	}
}

// TestTableRows: the tables' rows map is sized to what the traced
// processes' objects need now, twice over, within minTableRows and
// maxTableRows: a C program with libc gets the least, not 32 MiB.
func TestTableRows(t *testing.T) {
	for _, tc := range []struct{ need, want int }{
		{0, minTableRows}, {minTableRows / 2, minTableRows}, {minTableRows, 2 * minTableRows}, {maxTableRows, maxTableRows},
	} {
		if have := tableRows(tc.need); have != tc.want {
			t.Errorf("tableRows(%d) = %d, want %d", tc.need, have, tc.want)
		}
	}
	testutil.RequireBPF(t)
	bin := stacktest.BuildChain(t, "-O2", "-fomit-frame-pointer")
	tc := testutil.StartTracee(t, bin)
	tc.WaitReady(t)
	s := &stacks{}
	spec := &ebpf.CollectionSpec{Maps: map[string]*ebpf.MapSpec{stackcap.DefaultCFIProcsMap: {}}}
	if err := s.openTables(spec, []int{tc.PID()}, nil); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.close)
	if s.tables == nil {
		t.Fatal("no tables")
	}
	if n := s.tables.Maps()[stackcap.DefaultCFIRowsMap].MaxEntries(); n != minTableRows {
		t.Errorf("%d rows for chain, libc and ld.so, want %d", n, minTableRows)
	}
}
