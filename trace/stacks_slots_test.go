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
// deep(): more than the stack slots hold without sharing a slot, likely,
// and fewer frames than ustack keeps.
const deepStacks = 100

// runSlots traces src (BIN: testdata/stackslots.c built -O0
// -fno-omit-frame-pointer) in the program's process, runs "two 3 5" and
// "deep deepStacks 2", lets it exit, and returns the ended Tracer and
// what it printed.
func runSlots(t *testing.T, src string) (*trace.Tracer, string) {
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
	tracer, err := trace.Start(prog, &trace.Options{PID: tr.PID(), Stdout: &out})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tracer.Close() })
	tr.Do(t, "two 3 5")
	tr.Do(t, "deep "+strconv.Itoa(deepStacks)+" 2")
	tr.Quit(t)
	if err := tracer.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	return tracer, out.String()
}

// TestStacksSlots: `@[ustack] = count()` at the entry of a function without
// a frame pointer counts most hits in stack slots and the rest in its
// hash (see btgen's stack.go), and every count is right: the two callers
// of one frame-pointer walk (one slot, then the hash) are two entries of 3
// and 5, each of deepStacks stacks (some sharing a slot) counts 2, both
// through Tracer.Stacks and as the map prints, one entry per stack.
func TestStacksSlots(t *testing.T) {
	tracer, out := runSlots(t, `uprobe:BIN:nofp { @[ustack] = count(); }`)
	stacks, err := tracer.Stacks()
	if err != nil {
		t.Fatal(err)
	}
	var two []uint64
	var callers []uint64
	deep := map[int]uint64{}
	for _, s := range stacks {
		syms := symbols(s.Frames)
		switch {
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
	slices.Sort(two)
	if !slices.Equal(two, []uint64{3, 5}) || callers[0] == callers[1] {
		t.Errorf("two(): counts %v at callers %#x, want [3 5] at two call sites", two, callers)
	}
	if len(deep) != deepStacks {
		t.Errorf("%d deep() stacks, want %d", len(deep), deepStacks)
	}
	for n, v := range deep {
		if v != 2 {
			t.Errorf("stack with %d deep frames: count %d, want 2", n, v)
		}
	}
	// As printed: one entry per stack, "]: 3" and "]: 5" for two().
	if n := strings.Count(out, "]: "); n != 2+deepStacks {
		t.Errorf("%d map entries printed, want %d:\n%s", n, 2+deepStacks, out)
	}
	for _, want := range []string{"]: 3\n", "]: 5\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in\n%s", want, out)
		}
	}
	if strings.Count(out, "]: 2\n") != deepStacks {
		t.Errorf("%d entries of 2, want %d:\n%s", strings.Count(out, "]: 2\n"), deepStacks, out)
	}
}

// TestStacksSlotsClear: clear() and zero() in END reach the counts in the
// stack slots as well as the hash: nothing prints after clear(), every
// stack prints 0 after zero().
func TestStacksSlotsClear(t *testing.T) {
	_, out := runSlots(t, `uprobe:BIN:nofp { @[ustack] = count(); } END { clear(@); }`)
	if strings.Contains(out, "]: ") {
		t.Errorf("entries after clear():\n%s", out)
	}
	_, out = runSlots(t, `uprobe:BIN:nofp { @[ustack] = count(); } END { zero(@); }`)
	if n, zeros := strings.Count(out, "]: "), strings.Count(out, "]: 0\n"); n != 2+deepStacks || zeros != n {
		t.Errorf("after zero(): %d entries, %d of them 0; want %d, all 0:\n%s", n, zeros, 2+deepStacks, out)
	}
}
