package trace_test

import (
	"bytes"
	"context"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/usdtkit/usdtkit/internal/testutil"
	"github.com/usdtkit/usdtkit/trace"
)

// deepStacks is how many distinct stacks TestStacksSlots makes through
// deep(): enough that some likely share a stack slot, and fewer frames
// than ustack keeps. Some may also share a bucket of the kernel's stack
// map, which then refuses all but the first (-EEXIST, as in bpftrace).
const deepStacks = 100

// runSlots traces src (BIN: testdata/stackslots.c built -O0
// -fno-omit-frame-pointer) in the program's process, runs "two 3 5" and
// "deep deepStacks 2", lets it exit, and returns the ended Tracer and
// what it printed, and the program's pid. With everyProcess the probes
// are attached for every process (the pid is read at each hit), else for
// the program's.
func runSlots(t *testing.T, src string, everyProcess bool) (*trace.Tracer, string, int) {
	t.Helper()
	testutil.RequireBPF(t)
	gcc := testutil.RequireTool(t, "gcc")
	bin := filepath.Join(t.TempDir(), "stackslots")
	if out, err := exec.Command(gcc, "-O0", "-fno-omit-frame-pointer", "-o", bin, filepath.Join("testdata", "stackslots.c")).CombinedOutput(); err != nil {
		t.Fatalf("gcc: %v\n%s", err, out)
	}
	tr := testutil.StartTracee(t, bin)
	prog, err := trace.Compile("t.bt", strings.ReplaceAll(src, "BIN", bin), &trace.CompileOptions{PID: tr.PID()})
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	opts := &trace.Options{PID: tr.PID(), Stdout: &out}
	if everyProcess {
		opts.PID = 0
	}
	tracer, err := trace.Start(prog, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tracer.Close() })
	if !everyProcess {
		tr.Do(t, "two 3 5")
		tr.Do(t, "deep "+strconv.Itoa(deepStacks)+" 2")
		tr.Quit(t)
		if err := tracer.Run(context.Background()); err != nil {
			t.Fatal(err)
		}
		return tracer, out.String(), tr.PID()
	}
	// Run waits for no process: it ends with ctx, while the program
	// still runs (so that it symbolizes), and prints the maps.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- tracer.Run(ctx) }()
	tr.Do(t, "two 3 5")
	tr.Do(t, "deep "+strconv.Itoa(deepStacks)+" 2")
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	tr.Quit(t)
	return tracer, out.String(), tr.PID()
}

// TestStacksSlots: `@[ustack] = count()` at the entry of a function without
// a frame pointer counts most hits in stack slots and the rest in its
// hash (see btgen's stack.go), and every count is right: the two callers
// of one frame-pointer walk (one slot, then the hash) are two entries of 3
// and 5, each of deepStacks stacks (some sharing a slot) counts 2, both
// through Tracer.Stacks and as the map prints, one entry per stack; with
// one traced process the pid is the loader's constant, else read per hit.
func TestStacksSlots(t *testing.T) {
	for _, every := range []bool{false, true} {
		t.Run(map[bool]string{false: "one process", true: "every process"}[every], func(t *testing.T) {
			testSlots(t, every)
		})
	}
}

func testSlots(t *testing.T, everyProcess bool) {
	tracer, out, pid := runSlots(t, `uprobe:BIN:nofp { @[ustack] = count(); }`, everyProcess)
	stacks, err := tracer.Stacks()
	if err != nil {
		t.Fatal(err)
	}
	var two []uint64
	var callers []uint64
	deep := map[int]uint64{}
	lost := uint64(0) // hits of stacks bpf_get_stackid could not store
	var sum uint64
	for _, s := range stacks {
		sum += s.Value
		if s.PID != pid {
			t.Errorf("stack of pid %d, want %d", s.PID, pid)
		}
		syms := symbols(s.Frames)
		switch {
		case len(s.Frames) == 0:
			// A stack map collision (-EEXIST), as in bpftrace: the
			// stacks' hits count under the error.
			lost += s.Value
		case len(syms) >= 3 && slices.Equal(syms[:3], []string{"nofp", "two", "main"}):
			two = append(two, s.Value)
			callers = append(callers, s.Frames[1].Addr)
		case len(syms) >= 2 && syms[0] == "nofp" && syms[1] == "deep":
			n := 0
			for _, f := range syms[1:] {
				if f == "deep" {
					n++
				}
			}
			if _, dup := deep[n]; dup {
				t.Errorf("two entries for the stack with %d deep frames", n)
			}
			deep[n] = s.Value
		default:
			t.Errorf("unexpected stack %q: %d", syms, s.Value)
		}
	}
	if want := uint64(3 + 5 + 2*deepStacks); sum != want {
		t.Errorf("%d hits counted, want %d", sum, want)
	}
	slices.Sort(two)
	if !slices.Equal(two, []uint64{3, 5}) || callers[0] == callers[1] {
		t.Errorf("two(): counts %v at callers %#x, want [3 5] at two call sites", two, callers)
	}
	if len(deep)+int(lost/2) != deepStacks || len(deep) < deepStacks/2 {
		t.Errorf("%d deep() stacks and %d hits of stacks not stored, want %d stacks", len(deep), lost, deepStacks)
	}
	for n, v := range deep {
		if v != 2 {
			t.Errorf("stack with %d deep frames: count %d, want 2", n, v)
		}
	}
	// As printed: one entry per stack, "]: 3" and "]: 5" for two().
	if n := strings.Count(out, "]: "); n != len(stacks) {
		t.Errorf("%d map entries printed, want %d:\n%s", n, len(stacks), out)
	}
	for _, want := range []string{"]: 3\n", "]: 5\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in\n%s", want, out)
		}
	}
}

// TestStacksSlotsClear: clear() and zero() in END reach the counts in the
// stack slots as well as the hash: nothing prints after clear(), every
// stack prints 0 after zero().
func TestStacksSlotsClear(t *testing.T) {
	_, out, _ := runSlots(t, `uprobe:BIN:nofp { @[ustack] = count(); } END { clear(@); }`, false)
	if strings.Contains(out, "]: ") {
		t.Errorf("entries after clear():\n%s", out)
	}
	_, out, _ = runSlots(t, `uprobe:BIN:nofp { @[ustack] = count(); } END { zero(@); }`, false)
	if n, zeros := strings.Count(out, "]: "), strings.Count(out, "]: 0\n"); n < 2+deepStacks/2 || zeros != n {
		t.Errorf("after zero(): %d entries, %d of them 0; want every stack, all 0:\n%s", n, zeros, out)
	}
}
