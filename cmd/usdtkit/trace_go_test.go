package main

import (
	"bytes"
	"debug/elf"
	"encoding/json"
	"fmt"
	"os/exec"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/usdtkit/usdtkit/internal/testutil"
)

// goTarget is testdata/gofuncs running, waiting for a line.
type goTarget struct{ *testutil.Tracee }

func startGoTarget(t *testing.T, bin string) *goTarget {
	t.Helper()
	g := &goTarget{testutil.StartCmd(t, exec.Command(bin))}
	if l := g.Line(t); !strings.HasPrefix(l, "ready ") {
		t.Fatalf("gofuncs: want ready, have %q", l)
	}
	return g
}

// calls makes the target call its functions and returns the JSON lines it
// printed, one per call.
func (g *goTarget) calls(t *testing.T) []string {
	t.Helper()
	return g.Do(t, "go")
}

// decodeJSON decodes s keeping numbers exact.
func decodeJSON(t *testing.T, s string) map[string]any {
	t.Helper()
	d := json.NewDecoder(strings.NewReader(s))
	d.UseNumber()
	var m map[string]any
	if err := d.Decode(&m); err != nil {
		t.Fatalf("%v in %s", err, s)
	}
	return m
}

// normalize turns usdtkit's JSON values into what gofuncs prints: slices
// as their data or elements, a non-nil interface as its dynamic type
// (which a PIE's symbols cannot name: there any type will do).
func normalize(v any, pie bool) any {
	m, ok := v.(map[string]any)
	if !ok {
		return v
	}
	if d, ok := m["data"].(string); ok {
		if typ, isIface := m["type"].(string); isIface {
			if pie {
				return "some type"
			}
			return typ
		}
		return d
	}
	if e, ok := m["elems"]; ok {
		return e
	}
	return v
}

// TestTraceGoFunctions traces entry and return of functions of many
// signatures by PID and compares every value with what the program says
// it passed and got.
func TestTraceGoFunctions(t *testing.T) {
	testutil.RequireBPF(t)
	for _, build := range []struct {
		name  string
		flags []string
	}{
		{"default", nil},
		{"noopt", []string{"-gcflags=all=-N -l"}},
		{"pie", []string{"-buildmode=pie"}},
	} {
		t.Run(build.name, func(t *testing.T) {
			bin := testutil.BuildGo(t, "testdata/gofuncs", build.flags...)
			g := startGoTarget(t, bin)
			pid := strconv.Itoa(g.PID())
			tr := startTrace(t, "trace", "-p", pid, "-o", "json",
				"uprobe::main.[A-Z]*", "uprobe::main.(*Server).Handle",
				"uretprobe::main.[A-Z]*", "uretprobe::main.(*Server).Handle",
				"--field", "s.hits", "--field", "s.next.hits")
			calls := g.calls(t)
			g.Stdin().Close()
			code, stdout, stderr := tr.wait(t)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			var events []map[string]any
			for _, line := range strings.Split(strings.TrimSpace(stdout), "\n") {
				events = append(events, decodeJSON(t, line))
			}
			if len(events) != 2*len(calls) {
				t.Fatalf("%d events for %d calls:\n%s\n%s", len(events), len(calls), stdout, stderr)
			}
			if !strings.Contains(stderr, fmt.Sprintf("%d events, 0 lost.", len(events))) {
				t.Errorf("stderr: %s", stderr)
			}
			for i, line := range calls {
				want := decodeJSON(t, line)
				entry, ret := events[2*i], events[2*i+1]
				fn := want["func"].(string)
				if entry["probe"] != "uprobe:"+fn || ret["probe"] != "uretprobe:"+fn {
					t.Errorf("call %d %s: probes %v, %v", i, fn, entry["probe"], ret["probe"])
					continue
				}
				if entry["goid"] != ret["goid"] || entry["goid"] == json.Number("0") {
					t.Errorf("call %d %s: goid %v at entry, %v at return", i, fn, entry["goid"], ret["goid"])
				}
				for _, part := range []struct {
					key   string
					event map[string]any
				}{{"args", entry}, {"results", ret}} {
					have, _ := part.event[part.key].(map[string]any)
					wantVals := want[part.key].(map[string]any)
					for name, w := range wantVals {
						h, ok := have[name]
						if !ok {
							t.Errorf("call %d %s: %s %s missing in %s", i, fn, part.key, name, mustJSON(part.event))
							continue
						}
						pie := build.name == "pie"
						if w == "*errors.errorString" && pie {
							w = "some type"
						}
						if h, w := normalize(h, pie), normalize(w, pie); !reflect.DeepEqual(h, w) {
							t.Errorf("call %d %s: %s %s = %v, want %v", i, fn, part.key, name, h, w)
						}
					}
					if fn != "main.(*Server).Handle" && fn != "main.Ptr" && len(have) != len(wantVals) {
						t.Errorf("call %d %s: %s %v, want %v", i, fn, part.key, have, wantVals)
					}
				}
			}
		})
	}
}

func mustJSON(v any) string {
	var b bytes.Buffer
	json.NewEncoder(&b).Encode(v)
	return b.String()
}

// runGoTrace traces one round of gofuncs with args and returns stdout.
func runGoTrace(t *testing.T, bin string, args ...string) (string, string) {
	t.Helper()
	g := startGoTarget(t, bin)
	pid := strconv.Itoa(g.PID())
	tr := startTrace(t, append([]string{"trace", "-p", pid}, args...)...)
	g.calls(t)
	g.Stdin().Close()
	code, stdout, stderr := tr.wait(t)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	return stdout, stderr
}

// TestTraceGoByName uses Go values by name in filters, histograms,
// formats and the latency pairing.
func TestTraceGoByName(t *testing.T) {
	testutil.RequireBPF(t)
	bin := testutil.BuildGo(t, "testdata/gofuncs")
	handle := "uprobe::main.(*Server).Handle"
	t.Run("filter", func(t *testing.T) {
		stdout, _ := runGoTrace(t, bin, "-o", "json", handle, "--filter", "n == 2", "--filter", "s.hits >= 40")
		if n := strings.Count(stdout, `"probe":"uprobe:main.(*Server).Handle"`); n != 1 {
			t.Errorf("n == 2: %d events, want 1:\n%s", n, stdout)
		}
		stdout, stderr := runGoTrace(t, bin, "-o", "json", handle, "--filter", "n > 2")
		if strings.TrimSpace(stdout) != "" || !strings.Contains(stderr, "0 events, 0 lost") {
			t.Errorf("n > 2: want no events, have %s\n%s", stdout, stderr)
		}
		// Signed: -1 is n of the second Str call's result.
		stdout, _ = runGoTrace(t, bin, "-o", "json", "uretprobe::main.Str", "--filter", "n < 0")
		if c := strings.Count(stdout, `"n":-1`); c != 1 || strings.Count(stdout, "\n") != 1 {
			t.Errorf("n < 0 on results: want the one event with n -1, have %s", stdout)
		}
	})
	t.Run("hist", func(t *testing.T) {
		stdout, _ := runGoTrace(t, bin, handle, "--hist", "n")
		if !strings.Contains(stdout, ":main.(*Server).Handle]: \n") || !strings.Contains(stdout, "[2, 4)") {
			t.Errorf("hist n: %s", stdout)
		}
	})
	t.Run("format", func(t *testing.T) {
		stdout, _ := runGoTrace(t, bin, handle, "-F", `"path=%s n=%d hits=%d", path, n, s.hits`)
		if !strings.Contains(stdout, "path=/index n=2 hits=40") {
			t.Errorf("format: %s", stdout)
		}
	})
	t.Run("latency", func(t *testing.T) {
		stdout, _ := runGoTrace(t, bin, "-o", "json", "uprobe::main.Str", "uretprobe::main.Str",
			"--latency", "uprobe:main.Str,uretprobe:main.Str")
		// bpftrace's -f json: {"type": "hist", "data": {"@latency_ns": {PROBE: [{"min": …, "max": …, "count": …}…]}}}.
		var h struct {
			Data map[string]map[string][]struct{ Count uint64 } `json:"data"`
		}
		if err := json.Unmarshal([]byte(strings.TrimSpace(stdout)), &h); err != nil {
			t.Fatalf("%v: %s", err, stdout)
		}
		total := uint64(0)
		for _, buckets := range h.Data["@latency_ns"] {
			for _, b := range buckets {
				total += b.Count
			}
		}
		if total != 2 {
			t.Errorf("latency: %d samples, want the 2 calls of main.Str: %s", total, stdout)
		}
	})
	t.Run("errors", func(t *testing.T) {
		g := startGoTarget(t, bin)
		pid := strconv.Itoa(g.PID())
		for _, tt := range []struct {
			args []string
			want string
		}{
			{[]string{handle, "--filter", "nope > 1"}, `has no parameter "nope"`},
			{[]string{handle, "--filter", "path > 1"}, "filters and histograms take integers"},
			{[]string{"uretprobe::main.Str", "--hist", "s"}, `has no result "s"`},
			{[]string{handle, "--field", "s.nope"}, "has no field nope"},
			{[]string{"uprobe::main.Str+4", "--filter", "n > 1"}, "Go functions only"},
		} {
			var out, errb bytes.Buffer
			code := run(t.Context(), append([]string{"trace", "-p", pid}, tt.args...), &out, &errb)
			if code == 0 || !strings.Contains(errb.String(), tt.want) {
				t.Errorf("%v: exit %d, stderr %q; want an error with %q", tt.args, code, errb.String(), tt.want)
			}
		}
	})
}

// TestTraceGoStripped traces a Go binary without DWARF: entry and RETs are
// found through .gopclntab and the code, and the user is told why there
// are no names.
func TestTraceGoStripped(t *testing.T) {
	testutil.RequireBPF(t)
	bin := testutil.BuildGo(t, "testdata/gofuncs", "-ldflags=-s -w")
	stdout, stderr := runGoTrace(t, bin, "uprobe::main.Str", "uretprobe::main.Str", "--count")
	counts := goCounts(t, stdout)
	for _, probe := range []string{"uprobe:main.Str", "uretprobe:main.Str"} {
		if counts[probe] != 2 {
			t.Errorf("%s: %d hits, want 2:\n%s", probe, counts[probe], stdout)
		}
	}
	if !strings.Contains(stderr, "has no DWARF") || strings.Contains(stderr, "Warning: no debug info") {
		t.Errorf("stderr: %s", stderr)
	}
}

// TestTraceGoTextAndKeys prints Go functions' events as text lines (the
// goroutine id, then each value by name as Go writes it), counts by PID
// as the flags always printed them, and selects a Go function by its
// address.
func TestTraceGoTextAndKeys(t *testing.T) {
	testutil.RequireBPF(t)
	bin := testutil.BuildGo(t, "testdata/gofuncs")
	t.Run("text", func(t *testing.T) {
		stdout, _ := runGoTrace(t, bin, "uprobe::main.(*Server).Handle", "uprobe::main.Sum", "uprobe::main.Str", "--field", "s.hits")
		for _, want := range []*regexp.Regexp{
			regexp.MustCompile(`(?m) uprobe:main\.\(\*Server\)\.Handle goid=[1-9][0-9]* s=0x[0-9a-f]+ path="/index" n=2 s\.hits=40$`),
			regexp.MustCompile(`(?m) uprobe:main\.Sum goid=[1-9][0-9]* xs=\[3\]\[5 -6 7\]$`),
			regexp.MustCompile(`(?m) uprobe:main\.Str goid=[1-9][0-9]* s="héllo, world" b=\[8\]"bytes\\x00in" ok=true$`),
			regexp.MustCompile(`(?m) uprobe:main\.Str goid=[1-9][0-9]* s="" b=\[0\]"" ok=false$`),
		} {
			if !want.MatchString(stdout) {
				t.Errorf("stdout has no line matching %s:\n%s", want, stdout)
			}
		}
	})
	t.Run("count by pid", func(t *testing.T) {
		g := startGoTarget(t, bin)
		pid := strconv.Itoa(g.PID())
		tr := startTrace(t, "trace", "-p", pid, "uprobe::main.Str", "--count", "--by", "pid", "-o", "json")
		g.calls(t)
		g.Stdin().Close()
		code, stdout, stderr := tr.wait(t)
		// bpftrace's -f json: {"type": "map", "data": {"@": {"PROBE,PID": N}}}.
		var m struct {
			Data map[string]map[string]uint64 `json:"data"`
		}
		if err := json.Unmarshal([]byte(strings.TrimSpace(stdout)), &m); code != 0 || err != nil {
			t.Fatalf("exit %d, %v: stdout %q\n%s", code, err, stdout, stderr)
		}
		if len(m.Data["@"]) != 1 {
			t.Fatalf("stdout %q, want one key", stdout)
		}
		for k, n := range m.Data["@"] {
			if !strings.HasPrefix(k, "uprobe:") || !strings.HasSuffix(k, ":main.Str,"+pid) || n != 2 {
				t.Errorf("@[%s] = %d, want @[uprobe:PATH:main.Str,%s] = 2", k, n, pid)
			}
		}
	})
	t.Run("address", func(t *testing.T) {
		f, err := elf.Open(bin)
		if err != nil {
			t.Fatal(err)
		}
		syms, err := f.Symbols()
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		var addr uint64
		for _, s := range syms {
			if s.Name == "main.Str" {
				addr = s.Value
			}
		}
		stdout, _ := runGoTrace(t, bin, "uprobe:"+bin+":0x"+strconv.FormatUint(addr, 16), "--count")
		if counts := goCounts(t, stdout); len(counts) != 1 || counts["uprobe:main.Str"] != 2 {
			t.Errorf("stdout %q, want the 2 calls of main.Str", stdout)
		}
	})
}

// goCounts reads the text of a --count map ("@[uprobe:PATH:main.F]: N"
// lines, as bpftrace prints them), keyed by the probe without its path
// (uprobe:main.F).
func goCounts(t *testing.T, stdout string) map[string]uint64 {
	t.Helper()
	counts := map[string]uint64{}
	for _, line := range nonEmptyLines(stdout) {
		key, n, ok := strings.Cut(strings.TrimPrefix(line, "@["), "]: ")
		v, err := strconv.ParseUint(n, 10, 64)
		if !ok || err != nil {
			t.Fatalf("count line %q", line)
		}
		kind, rest, _ := strings.Cut(key, ":")
		_, fn, _ := strings.Cut(rest, ":")
		counts[kind+":"+fn] += v
	}
	return counts
}
