package main

import (
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/usdtkit/usdtkit/internal/bpf/argread"
	"github.com/usdtkit/usdtkit/internal/testutil"
)

// mallocsTarget is testdata/mallocs.c running, waiting for a line.
type mallocsTarget struct{ *testutil.Tracee }

func startMallocs(t *testing.T) *mallocsTarget {
	t.Helper()
	testutil.RequireBPF(t)
	gcc := testutil.RequireTool(t, "gcc")
	bin := filepath.Join(t.TempDir(), "mallocs")
	if out, err := exec.Command(gcc, "-O0", "-g", "-o", bin, "testdata/mallocs.c").CombinedOutput(); err != nil {
		t.Fatalf("gcc: %v\n%s", err, out)
	}
	m := &mallocsTarget{testutil.StartCmd(t, exec.Command(bin))}
	m.Expect(t, "READY")
	return m
}

func (m *mallocsTarget) pid() string { return strconv.Itoa(m.PID()) }

// round makes the target call add3 and malloc once each, and returns the
// lines it printed, up to DONE.
func (m *mallocsTarget) round(t *testing.T) []string {
	t.Helper()
	m.Send(t, "go")
	return m.Until(t, "DONE")
}

// sizesAndPtrs parses the "SIZE n PTR p" lines of a round.
func sizesAndPtrs(t *testing.T, lines []string) (sizes, ptrs []uint64) {
	t.Helper()
	for _, l := range lines {
		var f []string
		if f = strings.Fields(l); len(f) != 4 || f[0] != "SIZE" {
			continue
		}
		n, err1 := strconv.ParseUint(f[1], 10, 64)
		p, err2 := strconv.ParseUint(f[3], 10, 64)
		if err1 != nil || err2 != nil {
			t.Fatalf("bad line %q", l)
		}
		sizes, ptrs = append(sizes, n), append(ptrs, p)
	}
	if len(sizes) != 3 {
		t.Fatalf("have %d SIZE lines, want 3: %q", len(sizes), lines)
	}
	return sizes, ptrs
}

func TestTraceUprobeMallocHist(t *testing.T) {
	m := startMallocs(t)
	tr := startTrace(t, "trace", "-p", m.pid(), "uprobe:libc:malloc", "--hist", "arg0",
		"--filter", "arg0>=70000", "--filter", "arg0<=140003", "-o", "json")
	const rounds = 3
	want := make([]uint64, argread.HistBuckets)
	for range rounds {
		sizes, _ := sizesAndPtrs(t, m.round(t))
		for _, n := range sizes {
			want[argread.HistBucket(n, false)]++
		}
	}
	m.Quit(t)
	code, out, errs := tr.wait(t)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	// bpftrace's -f json: {"type": "hist", "data": {"@": {PROBE: [{"min": …, "max": …, "count": …}…]}}}.
	var h struct {
		Type string                                                   `json:"type"`
		Data map[string]map[string][]struct{ Min, Max, Count uint64 } `json:"data"`
	}
	if err := json.Unmarshal([]byte(strings.TrimSpace(out)), &h); err != nil {
		t.Fatalf("output %q: %v", out, err)
	}
	probes := h.Data["@"]
	if h.Type != "hist" || len(h.Data) != 1 || len(probes) != 1 {
		t.Fatalf("output %q: want one hist map @ with one key", out)
	}
	for probe, buckets := range probes {
		if !strings.HasPrefix(probe, "uprobe:") || !strings.HasSuffix(probe, ":malloc") {
			t.Errorf("probe: have %q, want uprobe:PATH:malloc", probe)
		}
		have := make([]uint64, argread.HistBuckets)
		for _, b := range buckets {
			have[argread.HistBucket(b.Min, false)] += b.Count
		}
		for i := range want {
			if have[i] != want[i] {
				t.Errorf("bucket %d: have %d, want %d (all: %+v)", i, have[i], want[i], buckets)
			}
		}
	}
}

func TestTraceUprobeArgsAndRetval(t *testing.T) {
	m := startMallocs(t)
	tr := startTrace(t, "trace", "-p", m.pid(), "uretprobe:libc:malloc", "-o", "json")
	_, ptrs := sizesAndPtrs(t, m.round(t))
	m.Quit(t)
	code, out, errs := tr.wait(t)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	// Decoded with UseNumber: a float64 loses the low bits of pointers.
	seen := make(map[uint64]bool)
	for _, l := range nonEmptyLines(out) {
		var ev struct {
			Probe string        `json:"probe"`
			Args  []json.Number `json:"args"`
		}
		d := json.NewDecoder(strings.NewReader(l))
		d.UseNumber()
		if err := d.Decode(&ev); err != nil {
			t.Fatalf("line %q: %v", l, err)
		}
		if ev.Probe != "uretprobe:malloc" || len(ev.Args) != 1 {
			t.Fatalf("event %q: want uretprobe:malloc with one argument", l)
		}
		v, err := strconv.ParseUint(ev.Args[0].String(), 10, 64)
		if err != nil {
			t.Fatalf("event %q: %v", l, err)
		}
		seen[v] = true
	}
	for _, p := range ptrs {
		if !seen[p] {
			t.Errorf("returned pointer %d: no uretprobe event has it", p)
		}
	}
}

func TestTraceUprobeLocalFunc(t *testing.T) {
	m := startMallocs(t)
	tr := startTrace(t, "trace", "-p", m.pid(), "u::add3", "-F", "%d %d %d")
	lines := m.round(t)
	m.Quit(t)
	code, out, errs := tr.wait(t)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if len(lines) == 0 || lines[0] != "ADD3 22" {
		t.Fatalf("target printed %q, want ADD3 22 first", lines)
	}
	evs := nonEmptyLines(out)
	if len(evs) != 1 {
		t.Fatalf("have %d events, want 1: %q", len(evs), out)
	}
	// An int argument is the low 32 bits of its register; the System V
	// ABI leaves the upper bits unspecified, and -22 reads as 2^32-22.
	// -F prints as printf does, just the format.
	want := fmt.Sprintf("11 %d 33", uint32(0xffffffff-21))
	if evs[0] != want {
		t.Errorf("event %q, want %q", evs[0], want)
	}
}
