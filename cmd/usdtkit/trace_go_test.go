package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os/exec"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/usdtkit/usdtkit/internal/testutil"
)

// goTarget is testdata/gofuncs running, waiting for a line.
type goTarget struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	out   *bufio.Scanner
}

func startGoTarget(t *testing.T, bin string) *goTarget {
	t.Helper()
	cmd := exec.Command(bin)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	g := &goTarget{cmd: cmd, stdin: stdin, out: bufio.NewScanner(stdout)}
	if !g.out.Scan() || !strings.HasPrefix(g.out.Text(), "ready ") {
		t.Fatalf("gofuncs: want ready, have %q", g.out.Text())
	}
	return g
}

// calls makes the target call its functions and returns the JSON lines it
// printed, one per call.
func (g *goTarget) calls(t *testing.T) []string {
	t.Helper()
	if _, err := io.WriteString(g.stdin, "go\n"); err != nil {
		t.Fatal(err)
	}
	var lines []string
	for g.out.Scan() && g.out.Text() != "done" {
		lines = append(lines, g.out.Text())
	}
	return lines
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
// as their data or elements, a non-nil interface as "non-nil".
func normalize(v any) any {
	m, ok := v.(map[string]any)
	if !ok {
		return v
	}
	if d, ok := m["data"].(string); ok {
		if _, isIface := m["type"]; isIface {
			return "non-nil"
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
			pid := strconv.Itoa(g.cmd.Process.Pid)
			tr := startTrace(t, "trace", "-p", pid, "-o", "json",
				"uprobe::main.[A-Z]*", "uprobe::main.(*Server).Handle",
				"uretprobe::main.[A-Z]*", "uretprobe::main.(*Server).Handle",
				"--field", "s.hits", "--field", "s.next.hits")
			calls := g.calls(t)
			g.stdin.Close()
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
						if h, w := normalize(h), normalize(w); !reflect.DeepEqual(h, w) {
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
