package trace_test

import (
	"context"
	"errors"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/usdtkit/usdtkit/internal/testutil"
	"github.com/usdtkit/usdtkit/trace"
)

// buildCFIKeys builds testdata/cfikeys.c without frame pointers.
func buildCFIKeys(t *testing.T) string {
	t.Helper()
	gcc := testutil.RequireTool(t, "gcc")
	bin := filepath.Join(t.TempDir(), "cfikeys")
	if b, err := exec.Command(gcc, "-O2", "-fomit-frame-pointer", "-o", bin, "testdata/cfikeys.c").CombinedOutput(); err != nil {
		t.Fatalf("gcc: %v\n%s", err, b)
	}
	return bin
}

// runCFIKeys traces src on a fresh cfikeys with unwind, makes it sort
// twice, lets it exit, and returns the ended Tracer (closed with the
// test), what it printed and how often cmp ran in each sort.
func runCFIKeys(t *testing.T, bin, src string, unwind trace.Unwind) (*trace.Tracer, string, []uint64) {
	t.Helper()
	tr := testutil.StartTracee(t, bin)
	// Its libraries mapped: the mappings read at Start have them.
	tr.WaitReady(t)
	tracer, out := startOn(t, tr, bin, src, &trace.CompileOptions{PID: tr.PID(), Unwind: unwind})
	var calls []uint64
	for range 2 {
		lines := tr.Do(t, "sort")
		n, err := strconv.ParseUint(strings.TrimPrefix(lines[0], "calls "), 10, 64)
		if len(lines) != 1 || err != nil {
			t.Fatalf("sort printed %q", lines)
		}
		calls = append(calls, n)
	}
	tr.Quit(t)
	if err := tracer.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	return tracer, out.String(), calls
}

// chainBelow reports whether syms (a stack's symbols, innermost first)
// is cmp, then one frame or more of the C library, then b, a and main.
func chainBelow(fs []trace.Frame, bin string) bool {
	syms := symbols(fs)
	i := slices.Index(syms, "b")
	if len(syms) < 5 || syms[0] != "cmp" || i < 2 || fs[1].Object == bin || fs[i-1].Object == bin {
		return false
	}
	return len(syms) >= i+3 && syms[i+1] == "a" && syms[i+2] == "main"
}

// TestStacksUnwindCFI: with CompileOptions.Unwind UnwindCFIBPF (the
// default) and UnwindCFI, the stacks of map keys are unwound with CFI, in
// the program or in user space, and keep every frame through the C
// library's qsort, built without frame pointers (so is the program):
// cmp, qsort's frames, b, a, main, with counts and sums that add up to
// the calls the program made; with UnwindFP the walk ends in the C
// library and no stack reaches b.
func TestStacksUnwindCFI(t *testing.T) {
	testutil.RequireBPF(t)
	bin := buildCFIKeys(t)
	const src = `uprobe:BIN:cmp { @[ustack] = count(); @s[ustack, comm, pid] = sum(2); }`
	for _, unwind := range []trace.Unwind{trace.UnwindFP, trace.UnwindCFI, trace.UnwindCFIBPF} {
		t.Run(unwind.String(), func(t *testing.T) {
			cfi := unwind != trace.UnwindFP
			tracer, out, sorts := runCFIKeys(t, bin, src, unwind)
			calls := sorts[0] + sorts[1]
			stacks, err := tracer.Stacks()
			if err != nil {
				t.Fatal(err)
			}
			sums := map[string]uint64{}
			full := map[string]int{}
			for _, s := range stacks {
				sums[s.Map] += s.Value
				if chainBelow(s.Frames, bin) {
					full[s.Map]++
				} else if cfi {
					t.Errorf("%s stack %q: want cmp, the C library, b, a, main", s.Map, symbols(s.Frames))
				}
				if slices.Contains(symbols(s.Frames), "b") && unwind == trace.UnwindFP {
					t.Errorf("%s stack %q reaches b through qsort with frame pointers", s.Map, symbols(s.Frames))
				}
				if s.Map == "@s" && (len(s.Keys) != 2 || s.Keys[0] != "cfikeys" || s.Keys[1] != strconv.Itoa(s.PID)) {
					t.Errorf("@s keys %q, want [cfikeys %d]", s.Keys, s.PID)
				}
			}
			if sums["@"] != calls || sums["@s"] != 2*calls {
				t.Errorf("@ counts %d, @s sums %d; want %d and %d (cmp's calls)", sums["@"], sums["@s"], calls, 2*calls)
			}
			if cfi && (full["@"] == 0 || full["@s"] == 0) {
				t.Errorf("no full stack: %d in @, %d in @s", full["@"], full["@s"])
			}
			// The maps printed at exit have the same stacks.
			if has := strings.Contains(out, "\n    a+"); has != cfi {
				t.Errorf("printed maps name a: %v, want %v:\n%s", has, cfi, out)
			}
			if strings.Contains(out, "Lost") || strings.Contains(out, "usdtkit:") {
				t.Errorf("losses printed:\n%s", out)
			}
		})
	}
}

// TestStacksUnwindCFIRefused: what UnwindCFI does not count is refused
// at compile time with the position of the map or call.
func TestStacksUnwindCFIRefused(t *testing.T) {
	bin := buildCFIKeys(t)
	// at is where the error is: the text it starts at.
	for _, tc := range []struct{ name, src, at string }{
		{"hist", `uprobe:BIN:cmp { @[ustack] = hist(arg0); }`, "@["},
		{"int value", `uprobe:BIN:cmp { @[ustack] = 1; }`, "@["},
		{"two stacks", `uprobe:BIN:cmp { @[ustack, ustack(3)] = count(); }`, "@["},
		{"delete", `uprobe:BIN:cmp { @[ustack] = count(); delete(@[ustack]); }`, "delete"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := strings.ReplaceAll(tc.src, "BIN", bin)
			pos := "t.bt:1:" + strconv.Itoa(strings.Index(src, tc.at)+1) + ": "
			_, err := trace.Compile("t.bt", src, &trace.CompileOptions{Unwind: trace.UnwindCFI})
			var list trace.CompileErrors
			if !errors.As(err, &list) || len(list) != 1 {
				t.Fatalf("error %v, want one CompileError", err)
			}
			if got := list[0].Error(); !strings.HasPrefix(got, pos) || !strings.Contains(got, "--unwind cfi") {
				t.Errorf("error %q, want at %s naming --unwind cfi", got, pos)
			}
			if _, err := trace.Compile("t.bt", src, nil); err != nil {
				t.Errorf("by default (UnwindCFIBPF): %v", err)
			}
		})
	}
}

// TestStacksUnwindCFIPrintClear: print(), clear() and zero() of a map
// counted in user space act in the order of the hits: at the second
// sort's call of a, print shows the first sort's counts, which clear or
// zero then drop, so that the maps printed at exit hold the second's.
func TestStacksUnwindCFIPrintClear(t *testing.T) {
	testutil.RequireBPF(t)
	bin := buildCFIKeys(t)
	for _, op := range []string{"clear", "zero"} {
		t.Run(op, func(t *testing.T) {
			src := `uprobe:BIN:cmp { @[ustack] = count(); } uprobe:BIN:a { print(@); ` + op + `(@); printf("---\n"); }`
			_, out, calls := runCFIKeys(t, bin, src, trace.UnwindCFI)
			parts := strings.Split(out, "---\n")
			if len(parts) != 3 {
				t.Fatalf("%d parts:\n%s", len(parts), out)
			}
			want := []uint64{0, calls[0], calls[1]}
			for i, p := range parts {
				var sum uint64
				for _, l := range strings.Split(p, "\n") {
					if n, ok := strings.CutPrefix(l, "]: "); ok {
						v, err := strconv.ParseUint(n, 10, 64)
						if err != nil {
							t.Fatalf("line %q", l)
						}
						sum += v
					}
				}
				if sum != want[i] {
					t.Errorf("part %d counts %d, want %d:\n%s", i, sum, want[i], p)
				}
			}
		})
	}
}
