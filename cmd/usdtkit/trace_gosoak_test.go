package main

import (
	"cmp"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/usdtkit/usdtkit/internal/testutil"
)

// soakFuncs are testdata/gosoak's traced functions.
var soakFuncs = []string{"main.Recurse", "main.Sleepy", "main.Rescue"}

// soakProbes returns the selectors of the entries and returns of soakFuncs.
func soakProbes() []string {
	var probes []string
	for _, fn := range soakFuncs {
		probes = append(probes, "uprobe::"+fn, "uretprobe::"+fn)
	}
	return probes
}

// soakReport is what testdata/gosoak prints at the end.
type soakReport struct {
	Calls         map[string]uint64 `json:"calls"`
	Recovered     uint64            `json:"recovered"`
	Migrations    uint64            `json:"migrations"`
	StackMoves    uint64            `json:"stack_moves"`
	MaxStackBytes uint64            `json:"max_stack_bytes"`
	GCs           uint32            `json:"gcs"`
	Goroutines    int               `json:"goroutines"`
	GOMAXPROCS    int               `json:"gomaxprocs"`
	Seconds       float64           `json:"seconds"`
}

// soakTarget is testdata/gosoak started with -wait: it has printed its
// ready line and runs once go is called.
type soakTarget struct {
	*testutil.Tracee
	mu     sync.Mutex
	stderr strings.Builder
}

func startSoak(t *testing.T, bin string, env []string, args ...string) *soakTarget {
	t.Helper()
	s := &soakTarget{}
	cmd := exec.Command(bin, append([]string{"-wait"}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stderr = writerFunc(func(p []byte) (int, error) {
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.stderr.Write(p)
	})
	s.Tracee = testutil.StartCmd(t, cmd)
	if l, _ := s.Next(); !strings.HasPrefix(l, "ready ") {
		t.Fatalf("gosoak: want ready, have %q; stderr: %s", l, s.errText())
	}
	return s
}

func (s *soakTarget) errText() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stderr.String()
}

// run lets the program go, waits for it to exit and returns its report.
// Any crash (a nonzero exit) fails the test with the program's stderr.
func (s *soakTarget) run(t *testing.T) soakReport {
	t.Helper()
	s.Send(t, "go")
	var lines []string
	for l, ok := s.Next(); ok; l, ok = s.Next() {
		lines = append(lines, l)
	}
	if err := s.Cmd.Wait(); err != nil {
		t.Fatalf("gosoak: %v; stdout %q; stderr:\n%.20000s", err, lines, s.errText())
	}
	var r soakReport
	if len(lines) != 1 {
		t.Fatalf("gosoak printed %q, want one report line", lines)
	}
	if err := json.Unmarshal([]byte(lines[0]), &r); err != nil {
		t.Fatalf("gosoak report %q: %v", lines[0], err)
	}
	return r
}

// waitFor is traceRun.wait with a longer limit, for traces of a long run.
func (tr *traceRun) waitFor(t *testing.T, limit time.Duration) (int, string, string) {
	t.Helper()
	var code int
	select {
	case code = <-tr.done:
		tr.done <- code
	case <-time.After(limit):
		t.Fatalf("trace did not end within %v of its process", limit)
	}
	<-tr.errDone
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return code, tr.stdout.String(), tr.stderr.String()
}

// checkStacks asserts what every run of gosoak must show: threads changed
// under goroutines, and stacks grew (moved) and got deep. Recurse's frames
// are 512 bytes; the starting stack is 8 KiB, so 64 KiB is three copies.
func checkStacks(t *testing.T, r soakReport) {
	t.Helper()
	if r.Migrations == 0 {
		t.Errorf("no goroutine changed threads in Sleepy: %+v", r)
	}
	if r.StackMoves == 0 {
		t.Errorf("no stack moved during a call of Recurse: %+v", r)
	}
	if r.MaxStackBytes < 64<<10 {
		t.Errorf("deepest stack %d bytes, want at least 64 KiB: %+v", r.MaxStackBytes, r)
	}
}

// TestTraceGoSoak is issue 5's soak test: thousands of goroutines recurse
// deeply (growing and copying their stacks while probes are attached),
// sleep (changing threads), recover panics (returning through
// deferreturn) and return several results, for 30 s (3 s with -short),
// traced at entry and every return in count mode. The program must not
// crash, and each function's entry and return counts must equal the
// number of calls the program counted itself.
func TestTraceGoSoak(t *testing.T) {
	testutil.RequireBPF(t)
	for _, tc := range []struct {
		name       string
		flags      []string
		long, fast time.Duration
	}{
		{"default", nil, 30 * time.Second, 3 * time.Second},
		{"noopt", []string{"-gcflags=all=-N -l"}, 3 * time.Second, 2 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := tc.long
			if testing.Short() {
				d = tc.fast
			}
			bin := testutil.BuildGo(t, "testdata/gosoak", tc.flags...)
			s := startSoak(t, bin, nil, "-d", d.String())
			tr := startTrace(t, append([]string{"trace", "-p", strconv.Itoa(s.PID()), "--count"}, soakProbes()...)...)
			r := s.run(t)
			code, stdout, stderr := tr.waitFor(t, time.Minute)
			if code != 0 {
				t.Fatalf("trace exit %d: %s", code, stderr)
			}
			counts := goCounts(t, stdout)
			for _, fn := range soakFuncs {
				want := r.Calls[fn]
				if want == 0 {
					t.Errorf("%s: the program did not call it: %+v", fn, r)
				}
				if have := counts["uprobe:"+fn]; have != want {
					t.Errorf("%s: %d entries traced, want %d", fn, have, want)
				}
				if have := counts["uretprobe:"+fn]; have != want {
					t.Errorf("%s: %d returns traced, want %d", fn, have, want)
				}
			}
			if r.Recovered == 0 {
				t.Errorf("no panic recovered: %+v", r)
			}
			if strings.Contains(stdout+stderr, "map updates failed") {
				t.Errorf("map updates failed: %s", stdout+stderr)
			}
			checkStacks(t, r)
			t.Logf("%.1fs, %d goroutines, GOMAXPROCS %d: calls %v (%.0f traced calls/s), %d recovered, %d thread changes, %d stack moves, deepest stack %d KiB, %d GCs",
				r.Seconds, r.Goroutines, r.GOMAXPROCS, r.Calls, float64(r.Calls["main.Recurse"]+r.Calls["main.Sleepy"]+r.Calls["main.Rescue"])/r.Seconds,
				r.Recovered, r.Migrations, r.StackMoves, r.MaxStackBytes>>10, r.GCs)
		})
	}
}

// soakEvent is a Go function's event of `trace -o json`.
type soakEvent struct {
	TS      uint64                     `json:"ts"`
	TID     int                        `json:"tid"`
	Probe   string                     `json:"probe"`
	GoID    uint64                     `json:"goid"`
	Args    map[string]json.RawMessage `json:"args"`
	Results map[string]json.RawMessage `json:"results"`
}

// num returns the integer value name of vals, or -1 if it is missing or
// not an integer.
func num(vals map[string]json.RawMessage, name string) int64 {
	n, err := strconv.ParseInt(string(vals[name]), 10, 64)
	if err != nil {
		return -1
	}
	return n
}

// TestTraceGoSoakEvents runs gosoak briefly, smaller, with every event
// printed, and follows each goroutine by the goid the tracer read: every
// entry pairs with a return of the same function on the same goroutine
// (Recurse nesting one level shallower each time), even when Sleepy
// changed threads in between. With async preemption off a goroutine
// cannot change threads between Sleepy's entry probe and its first gettid
// (an inlined NOSPLIT system call) nor between its last gettid and its
// RET, so the events' thread ids equal the results Sleepy returns, and its
// id argument, the goroutine id the program read from runtime.Stack,
// equals the event's goid.
func TestTraceGoSoakEvents(t *testing.T) {
	testutil.RequireBPF(t)
	d := 2 * time.Second
	if testing.Short() {
		d = time.Second
	}
	bin := testutil.BuildGo(t, "testdata/gosoak")
	s := startSoak(t, bin, []string{"GODEBUG=asyncpreemptoff=1"},
		"-d", d.String(), "-g", "32", "-depth", "12", "-sleep", "40ms")
	tr := startTrace(t, append([]string{"trace", "-p", strconv.Itoa(s.PID()), "-o", "json"}, soakProbes()...)...)
	r := s.run(t)
	code, stdout, stderr := tr.waitFor(t, time.Minute)
	if code != 0 {
		t.Fatalf("trace exit %d: %s", code, stderr)
	}
	lines := nonEmptyLines(stdout)
	// Pairing needs every event: the rate is kept low enough (about 20000
	// events/s) for the reader of a -race build.
	if !strings.Contains(stderr, fmt.Sprintf("%d events, 0 lost.", len(lines))) {
		t.Fatalf("stderr does not report %d events, 0 lost: %s", len(lines), stderr)
	}
	evs := make([]soakEvent, len(lines))
	for i, line := range lines {
		if err := json.Unmarshal([]byte(line), &evs[i]); err != nil {
			t.Fatalf("event %q: %v", line, err)
		}
	}
	// One goroutine's events are in time order, whatever CPUs it ran on.
	slices.SortStableFunc(evs, func(a, b soakEvent) int { return cmp.Compare(a.TS, b.TS) })

	// open is each goroutine's stack of entries not yet returned from.
	open := make(map[uint64][]*soakEvent)
	entries, returns := make(map[string]uint64), make(map[string]uint64)
	var moved, moves uint64
	bad := 0
	fail := func(format string, args ...any) {
		if bad++; bad <= 10 {
			t.Errorf(format, args...)
		}
	}
	for i := range evs {
		ev := &evs[i]
		kind, fn, _ := strings.Cut(ev.Probe, ":")
		if ev.GoID == 0 {
			fail("event without goid: %+v", ev)
			continue
		}
		stack := open[ev.GoID]
		if kind == "uprobe" {
			entries[fn]++
			if fn == "main.Recurse" && len(stack) > 0 {
				if parent := stack[len(stack)-1]; parent.Probe == ev.Probe && num(ev.Args, "depth") != num(parent.Args, "depth")-1 {
					fail("goroutine %d: Recurse depth %s called from depth %s", ev.GoID, ev.Args["depth"], parent.Args["depth"])
				}
			}
			if fn == "main.Sleepy" && num(ev.Args, "id") != int64(ev.GoID) {
				fail("Sleepy's id argument %s, event goid %d", ev.Args["id"], ev.GoID)
			}
			open[ev.GoID] = append(stack, ev)
			continue
		}
		returns[fn]++
		if len(stack) == 0 || stack[len(stack)-1].Probe != "uprobe:"+fn {
			fail("goroutine %d: return of %s at %d, open entries %d", ev.GoID, fn, ev.TS, len(stack))
			continue
		}
		entry := stack[len(stack)-1]
		open[ev.GoID] = stack[:len(stack)-1]
		if fn != "main.Sleepy" {
			continue
		}
		before, after := num(ev.Results, "before"), num(ev.Results, "after")
		if before != int64(entry.TID) || after != int64(ev.TID) {
			fail("goroutine %d: Sleepy on threads %d → %d returned %s, %s", ev.GoID, entry.TID, ev.TID, ev.Results["before"], ev.Results["after"])
		}
		if entry.TID != ev.TID {
			moved++
		}
		if before != after {
			moves++
		}
	}
	for id, stack := range open {
		if len(stack) > 0 {
			fail("goroutine %d: %d entries without a return, the last %+v", id, len(stack), stack[len(stack)-1])
		}
	}
	for _, fn := range soakFuncs {
		if entries[fn] != r.Calls[fn] || returns[fn] != r.Calls[fn] || r.Calls[fn] == 0 {
			t.Errorf("%s: %d entries and %d returns traced, want %d", fn, entries[fn], returns[fn], r.Calls[fn])
		}
	}
	if moves != r.Migrations || moved != r.Migrations {
		t.Errorf("Sleepy changed threads %d times by the events' tids, %d by its results, %d by the program's count", moved, moves, r.Migrations)
	}
	if r.Migrations == 0 {
		t.Errorf("no goroutine changed threads in Sleepy: %+v", r)
	}
	t.Logf("%d events from %d goroutines: calls %v, %d Sleepy calls changed threads, %d stack moves",
		len(evs), len(open), r.Calls, r.Migrations, r.StackMoves)
}
