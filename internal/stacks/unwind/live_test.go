package unwind_test

import (
	"debug/elf"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/usdtkit/usdtkit/internal/bpf/stackcap/stacktest"
	"github.com/usdtkit/usdtkit/internal/stacks/unwind"
	"github.com/usdtkit/usdtkit/internal/testutil"
)

// captureAndUnwind runs command in chain.c built with flags, with a stack
// copy captured at leaf's entry, and returns the unwound frames' names
// (functions of the executable, "[object]" elsewhere) and methods; entry
// is Regs.Entry.
func captureAndUnwind(t *testing.T, flags []string, command string, opts *unwind.Options, entry bool) ([]string, []unwind.Method, unwind.Result) {
	t.Helper()
	testutil.RequireBPF(t)
	return captureAndUnwindExe(t, stacktest.BuildChain(t, flags...), "leaf", command, opts, entry)
}

// captureAndUnwindExe is captureAndUnwind on a built executable and a
// probed function.
func captureAndUnwindExe(t *testing.T, exe, fn, command string, opts *unwind.Options, entry bool) ([]string, []unwind.Method, unwind.Result) {
	t.Helper()
	tr := testutil.StartTracee(t, exe)
	tr.WaitReady(t)
	p := stacktest.Attach(t, exe, fn, &stacktest.Options{Mode: stacktest.Both, Entry: true, PID: tr.PID()})
	var spaces unwind.Spaces
	sp, err := spaces.Get(tr.PID())
	if err != nil {
		t.Fatal(err)
	}
	tr.Do(t, command)
	rec := p.Next(t)
	u, err := unwind.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	c := rec.Copy
	if c.Base > c.SP || c.Base%4096 != 0 || len(c.Stack)%4096 != 0 || uint64(len(c.Stack)) <= c.SP-c.Base {
		t.Fatalf("copy of %d bytes at %#x does not hold sp %#x in whole pages", len(c.Stack), c.Base, c.SP)
	}
	res, err := u.Unwind(sp, elf.EM_X86_64, unwind.Regs{PC: c.IP, SP: c.SP, FP: c.FP, Entry: entry}, unwind.Stack{Base: c.Base, Data: c.Stack})
	if err != nil {
		t.Fatal(err)
	}
	n := stacktest.NewNamer(t, tr.PID())
	var names []string
	var methods []unwind.Method
	for _, f := range res.Frames {
		names = append(names, n.Name(t, f.PC, exe))
		methods = append(methods, f.Method)
	}
	var kernel []string
	for _, pc := range rec.Frames {
		kernel = append(kernel, n.Name(t, pc, exe))
	}
	t.Logf("the kernel's frame-pointer walk of the same hit: %v", kernel)
	t.Logf("copy of %d bytes at sp-%d; frames %v; methods %v; stop %v (%v)", len(c.Stack), c.SP-c.Base, names, methods, res.Stop, res.Err)
	return names, methods, res
}

// TestUnwindWithoutFramePointers unwinds a stack copy taken at leaf's
// entry in chain.c built -O2 -fomit-frame-pointer, through libc's qsort:
// leaf, cmp, libc's frames, sort_them, main, libc's start frames, all
// from CFI, ending at the outermost frame.
func TestUnwindWithoutFramePointers(t *testing.T) {
	for _, tc := range []struct {
		name  string
		flags []string
	}{
		{"eh_frame", []string{"-O2", "-fomit-frame-pointer"}},
		// No .eh_frame for chain.c's functions: gcc writes their CFI
		// to .debug_frame instead.
		{"debug_frame", []string{"-O2", "-fomit-frame-pointer", "-fno-asynchronous-unwind-tables", "-fno-unwind-tables", "-g"}},
	} {
		t.Run(tc.name, func(t *testing.T) { testUnwindWithoutFramePointers(t, tc.flags) })
	}
}

func testUnwindWithoutFramePointers(t *testing.T, flags []string) {
	names, methods, res := captureAndUnwind(t, flags, "sort", nil, true)
	libc := "[" + filepath.Base(libcPath(t)) + "]"
	i := 0
	expect := func(name string) {
		t.Helper()
		if i >= len(names) || names[i] != name {
			t.Fatalf("frame %d: have %v, want %s", i, names, name)
		}
		i++
	}
	expect("leaf")
	expect("cmp")
	if i >= len(names) || names[i] != libc {
		t.Fatalf("frame %d: have %v, want %s (qsort)", i, names, libc)
	}
	for i < len(names) && names[i] == libc {
		i++
	}
	expect("sort_them")
	expect("main")
	expect(libc) // __libc_start_call_main
	for ; i < len(names); i++ {
		if names[i] != libc && names[i] != "_start" {
			t.Errorf("frame %d after main: have %v", i, names)
		}
	}
	if res.Stop != unwind.StopEnd {
		t.Errorf("stop: have %v (%v), want %v", res.Stop, res.Err, unwind.StopEnd)
	}
	for j, m := range methods[1:] {
		if m != unwind.MethodCFI {
			t.Errorf("frame %d (%s): method %v, want %v", j+1, names[j+1], m, unwind.MethodCFI)
		}
	}
}

// TestUnwindFramePointersOnly unwinds chain.c built with frame pointers
// with CFI turned off: leaf has no frame of its own, so at its entry the
// frame-pointer walk skips level3, as the kernel's does, unless the walk
// knows the PC is an entry; with CFI every frame is there anyway.
func TestUnwindFramePointersOnly(t *testing.T) {
	all := []string{"leaf", "level3", "level2", "level1", "main"}
	for _, tc := range []struct {
		name   string
		opts   *unwind.Options
		entry  bool
		want   []string
		method unwind.Method
	}{
		{"fp", &unwind.Options{NoCFI: true}, false, []string{"leaf", "level2", "level1", "main"}, unwind.MethodFP},
		{"fp at entry", &unwind.Options{NoCFI: true}, true, all, unwind.MethodFP},
		{"cfi", nil, false, all, unwind.MethodCFI},
	} {
		t.Run(tc.name, func(t *testing.T) {
			names, methods, _ := captureAndUnwind(t, []string{"-O0", "-fno-omit-frame-pointer"}, "levels", tc.opts, tc.entry)
			if len(names) < len(tc.want) || !slices.Equal(names[:len(tc.want)], tc.want) {
				t.Fatalf("have %v, want prefix %v", names, tc.want)
			}
			if slices.ContainsFunc(methods[1:], func(m unwind.Method) bool { return m != tc.method }) {
				t.Errorf("methods %v, want %v only", methods, tc.method)
			}
		})
	}
}

// libcPath returns the path of the libc the test's targets load.
func libcPath(t *testing.T) string {
	t.Helper()
	for _, p := range []string{"/lib/x86_64-linux-gnu/libc.so.6", "/usr/lib/x86_64-linux-gnu/libc.so.6"} {
		if r, err := filepath.EvalSymlinks(p); err == nil {
			return strings.TrimSpace(r)
		}
	}
	t.Fatal("no libc.so.6")
	return ""
}

// TestUnwindGo unwinds a stack copy of a Go program at the entry of a
// frameless leaf with its CFI (Go writes a zlib-compressed .debug_frame):
// the whole chain to runtime.goexit.
func TestUnwindGo(t *testing.T) {
	testutil.RequireBPF(t)
	exe := testutil.BuildGo(t, "../../bpf/stackcap/testdata/gochain")
	names, methods, res := captureAndUnwindExe(t, exe, "main.leaf", "levels", nil, true)
	want := []string{"main.leaf", "main.level3", "main.level2", "main.level1", "main.main", "runtime.main", "runtime.goexit.abi0"}
	if !slices.Equal(names, want) {
		t.Fatalf("have %v, want %v", names, want)
	}
	if slices.ContainsFunc(methods[1:], func(m unwind.Method) bool { return m != unwind.MethodCFI }) {
		t.Errorf("methods %v, want cfi only", methods)
	}
	if res.Stop != unwind.StopEnd {
		t.Errorf("stop: have %v (%v), want %v", res.Stop, res.Err, unwind.StopEnd)
	}
}

// loaded is chain.c built -O2 -fomit-frame-pointer, running, with stack
// copies captured at leaf's entry, its Space remembered and its objects
// loaded into an Unwinder.
type loaded struct {
	exe    string
	tr     *testutil.Tracee
	p      *stacktest.Probe
	spaces *unwind.Spaces
	sp     *unwind.Space
	u      *unwind.Unwinder
	n      *stacktest.Namer
}

func startLoaded(t *testing.T) *loaded {
	t.Helper()
	testutil.RequireBPF(t)
	l := &loaded{exe: stacktest.BuildChain(t, "-O2", "-fomit-frame-pointer"), spaces: &unwind.Spaces{}}
	l.tr = testutil.StartTracee(t, l.exe)
	l.tr.WaitReady(t)
	l.p = stacktest.Attach(t, l.exe, "leaf", &stacktest.Options{Mode: stacktest.Copy, Entry: true, PID: l.tr.PID()})
	var err error
	if l.sp, err = l.spaces.Get(l.tr.PID()); err != nil {
		t.Fatal(err)
	}
	if l.u, err = unwind.New(nil); err != nil {
		t.Fatal(err)
	}
	if err := l.u.Load(l.sp); err != nil {
		t.Fatal(err)
	}
	l.n = stacktest.NewNamer(t, l.tr.PID())
	return l
}

// TestUnwindAfterExit unwinds a stack of a process that has exited: its
// mappings were remembered and its objects loaded when it was first seen.
func TestUnwindAfterExit(t *testing.T) {
	l := startLoaded(t)
	exe, tr, p, sp, u, n := l.exe, l.tr, l.p, l.sp, l.u, l.n
	tr.Do(t, "sort")
	c := p.Next(t).Copy
	tr.Cmd.Process.Kill()
	tr.Cmd.Wait()
	spaces := l.spaces
	if _, err := spaces.Refresh(tr.PID()); err == nil {
		t.Fatal("the process still has mappings after it was killed")
	}
	sp, err := spaces.Get(tr.PID())
	if err != nil {
		t.Fatal(err)
	}
	res, err := u.Unwind(sp, elf.EM_X86_64, unwind.Regs{PC: c.IP, SP: c.SP, FP: c.FP}, unwind.Stack{Base: c.Base, Data: c.Stack})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range res.Frames {
		names = append(names, n.Name(t, f.PC, exe))
	}
	if len(names) < 2 || names[0] != "leaf" || names[1] != "cmp" || !slices.Contains(names, "sort_them") || !slices.Contains(names, "main") {
		t.Fatalf("have %v, want leaf, cmp, …, sort_them, main", names)
	}
}

// TestUnwindTablesLive unwinds stacks captured at leaf's entry in chain.c
// built -O2 -fomit-frame-pointer with the objects' tables and with their
// CFI: the same frames, methods and stop, every frame after the first
// from CFI, whole stacks to the outermost frame.
func TestUnwindTablesLive(t *testing.T) {
	l := startLoaded(t)
	exe, tr, p, sp, u, n := l.exe, l.tr, l.p, l.sp, l.u, l.n
	// sort calls leaf once per comparison: it goes last, and only its
	// first stack is read.
	for _, command := range []string{"levels", "deep 3", "sort"} {
		t.Run(command, func(t *testing.T) {
			tr.Do(t, command)
			c := p.Next(t).Copy
			regs := unwind.Regs{PC: c.IP, SP: c.SP, FP: c.FP, Entry: true}
			stack := unwind.Stack{Base: c.Base, Data: c.Stack}
			want, err := u.Unwind(sp, elf.EM_X86_64, regs, stack)
			if err != nil {
				t.Fatal(err)
			}
			have, err := u.UnwindTables(sp, elf.EM_X86_64, regs, stack)
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, f := range have.Frames {
				names = append(names, n.Name(t, f.PC, exe))
			}
			t.Logf("frames %v, stop %v (%v)", names, have.Stop, have.Err)
			if !slices.Equal(have.Frames, want.Frames) || have.Stop != want.Stop {
				t.Fatalf("tables: %+v, stop %v (%v); CFI: %+v, stop %v (%v)", have.Frames, have.Stop, have.Err, want.Frames, want.Stop, want.Err)
			}
			if have.Stop != unwind.StopEnd || !slices.Contains(names, "main") {
				t.Errorf("have %v, stop %v: want a whole stack to main and the end", names, have.Stop)
			}
			for i, f := range have.Frames[1:] {
				if f.Method != unwind.MethodCFI {
					t.Errorf("frame %d (%s): method %v, want %v", i+1, names[i+1], f.Method, unwind.MethodCFI)
				}
			}
		})
	}
}
