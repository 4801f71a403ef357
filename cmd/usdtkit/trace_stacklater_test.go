package main

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/usdtkit/usdtkit/internal/bpf/stackcap/stacktest"
	"github.com/usdtkit/usdtkit/internal/testutil"
)

// textStacks returns the keys of the last printing of map @ (a ustack
// key each, bpftrace's text) in out, their frames' symbols innermost
// first, with their counts.
func textStacks(out string) map[string]int {
	i := strings.LastIndex(out, "@[\n")
	if i < 0 {
		return nil
	}
	// Back to the start of that printing: the first key after the last
	// line that is not part of a key.
	start := i
	for {
		j := strings.LastIndex(out[:start], "\n\n")
		k := strings.LastIndex(out[:start], "@[\n")
		if k < 0 || j > k {
			break
		}
		start = k
	}
	keys := map[string]int{}
	for _, entry := range strings.Split(out[start:], "@[\n")[1:] {
		body, count, ok := strings.Cut(entry, "\n]: ")
		if !ok {
			continue
		}
		var syms []string
		for _, f := range strings.Split(body, "\n") {
			sym, _, _ := strings.Cut(strings.TrimSpace(f), "+")
			syms = append(syms, sym)
		}
		n := 0
		for _, c := range strings.TrimSpace(strings.SplitN(count, "\n", 2)[0]) {
			n = 10*n + int(c-'0')
		}
		keys[strings.Join(syms, " ")] += n
	}
	return keys
}

// whole reports whether a key's frames (textStacks) start with chain.
func whole(key string, chain ...string) bool {
	return strings.HasPrefix(key+" ", strings.Join(chain, " ")+" ")
}

var (
	levelsKey = []string{"leaf", "level3", "level2", "level1", "main"}
	sortTail  = []string{"sort_them", "main"}
)

// untilWhole sends command to tc until the trace's printing of @ has a
// key match accepts (the tables of a process are added a poll after its
// first hits).
func untilWhole(t *testing.T, run *traceRun, tc *testutil.Tracee, command string, match func(string) bool) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); {
		tc.Do(t, command)
		time.Sleep(20 * time.Millisecond) // the next interval's print
		run.mu.Lock()
		out := run.stdout.String()
		run.mu.Unlock()
		if slices.ContainsFunc(slices.Collect(mapKeys(textStacks(out))), match) {
			return
		}
	}
	run.mu.Lock()
	defer run.mu.Unlock()
	t.Fatalf("no whole stack of %q printed:\n%s\n%s", command, run.stdout.String(), run.stderr.String())
}

func mapKeys(m map[string]int) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// TestTraceStacksProcessStartedLater: a process started after the trace
// began (no -p or -c) gets whole stack keys with default flags: chain.c
// built -O2 -fomit-frame-pointer, `@[ustack] = count()` at leaf, text
// output. Its first hits are walked by frame pointer (the walk asks for
// its tables); once added, every hit's key is the whole chain to main,
// the key --unwind cfi (unwound in usdtkit) prints for the same hits.
// After the process executes itself again (the same process id, a new
// image) the tables follow: a qsort chain through the C library is whole.
func TestTraceStacksProcessStartedLater(t *testing.T) {
	bin := stacktest.BuildChain(t, "-O2", "-fomit-frame-pointer")
	prog := strings.ReplaceAll(`uprobe:BIN:leaf { @[ustack] = count(); } interval:ms:10 { print(@); }`, "BIN", bin)
	keys := map[string]map[string]int{}
	for _, unwind := range []string{"default", "cfi"} {
		t.Run(unwind, func(t *testing.T) {
			args := []string{"trace", "-e", prog}
			if unwind != "default" {
				args = append(args, "--unwind", unwind)
			}
			run := startTrace(t, args...)
			tc := testutil.StartTracee(t, bin)
			tc.WaitReady(t)
			isLevels := func(k string) bool { return whole(k, levelsKey...) }
			untilWhole(t, run, tc, "levels", isLevels)
			for range 3 {
				tc.Do(t, "levels")
			}
			tc.Do(t, "exec")
			isSort := func(k string) bool {
				return whole(k, "leaf", "cmp") && strings.Contains(k, " qsort") && strings.Contains(k, " sort_them main")
			}
			untilWhole(t, run, tc, "sort", isSort)
			tc.Do(t, "sort")
			tc.Quit(t)
			run.stop()
			run.mu.Lock()
			out, errs := run.stdout.String(), run.stderr.String()
			run.mu.Unlock()
			got := textStacks(out)
			t.Logf("keys: %v", got)
			ks := map[string]int{}
			levels, sorts := 0, 0
			for k, n := range got {
				switch {
				case isLevels(k):
					ks[k] = n
					levels++
					if n < 4 {
						t.Errorf("%d hits of the whole levels stack, want at least 4", n)
					}
				case isSort(k):
					// qsort's merge sort recurses to a depth that
					// differs by comparison: a key per depth.
					ks[k] = n
					sorts++
				case unwind == "cfi":
					t.Errorf("--unwind cfi: key %q (%d hits) is not whole", k, n)
				}
			}
			if levels != 1 || sorts == 0 {
				t.Errorf("whole keys %v, want one levels key and sort keys", ks)
			}
			keys[unwind] = ks
			if strings.Contains(errs, "Lost") || strings.Contains(errs, "warning") {
				t.Errorf("losses or warnings:\n%s", errs)
			}
		})
	}
	// The same whole keys, frame for frame (not their counts: the first
	// hits walked by frame pointer differ by run).
	a, b := slices.Sorted(mapKeys(keys["default"])), slices.Sorted(mapKeys(keys["cfi"]))
	if !slices.Equal(a, b) {
		t.Errorf("default's whole keys:\n%q\n--unwind cfi's:\n%q", a, b)
	}
}

// TestTraceProfileProcessStartedLater: profile: samples of a process
// started after the trace began get whole stacks with default flags
// once its tables are added: chain.c built -O2 -fomit-frame-pointer
// looping through level1 → level2 → level3 → leaf has samples whose key
// goes on from level1 to main and libc's start (without the tables the
// frame-pointer walk never gets there: no such key is printed).
func TestTraceProfileProcessStartedLater(t *testing.T) {
	bin := stacktest.BuildChain(t, "-O2", "-fomit-frame-pointer")
	run := startTrace(t, "trace", "-e", `profile:hz:997 /comm == "chain"/ { @[ustack] = count(); } interval:ms:10 { print(@); }`)
	tc := testutil.StartTracee(t, bin)
	tc.WaitReady(t)
	untilWhole(t, run, tc, "loop 2000000", func(k string) bool {
		return strings.Contains(k, " level1 main __libc_start_call_main")
	})
	tc.Quit(t)
}
