package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/usdtkit/usdtkit/internal/testutil"
	"github.com/usdtkit/usdtkit/trace"
)

// flagMaps decodes the maps bpftrace's -f json prints at exit: map name →
// key → value (a count, or a histogram's buckets).
func flagMaps(t *testing.T, out string) map[string]map[string]json.RawMessage {
	t.Helper()
	maps := make(map[string]map[string]json.RawMessage)
	for _, l := range nonEmptyLines(out) {
		var m struct {
			Type string                                `json:"type"`
			Data map[string]map[string]json.RawMessage `json:"data"`
		}
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("line %.200q: %v", l, err)
		}
		for name, entries := range m.Data {
			maps[name] = entries
		}
	}
	return maps
}

// counts returns the @ map's counts by key.
func counts(t *testing.T, out string) map[string]uint64 {
	t.Helper()
	c := make(map[string]uint64)
	for k, v := range flagMaps(t, out)["@"] {
		var n uint64
		if err := json.Unmarshal(v, &n); err != nil {
			t.Fatalf("@[%s]: %s: %v", k, v, err)
		}
		c[k] = n
	}
	return c
}

// runFlagTrace traces the tracee with args (-o json added) while it runs
// "run N", and returns what the trace printed.
func runFlagTrace(t *testing.T, tc *testutil.Tracee, n int, args ...string) string {
	t.Helper()
	tr := startTrace(t, append([]string{"trace", "-p", strconv.Itoa(tc.PID()), "-o", "json"}, args...)...)
	tc.Do(t, "run "+strconv.Itoa(n))
	tc.Quit(t)
	code, out, errs := tr.wait(t)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	return out
}

// TestFlagHistByPID keys --hist arg1 of tracee.c's str probe (arg1 is
// the loop's k) by pid, over two processes of one executable traced
// through the file: each process has its own histogram of its own hits.
func TestFlagHistByPID(t *testing.T) {
	bin := testutil.BuildTracee(t, "-O2")
	a, b := testutil.StartTracee(t, bin), testutil.StartTracee(t, bin)
	probe := "usdt:" + bin + ":tracee:str"
	tr := startTrace(t, "trace", "-o", "json", probe, "--hist", "arg1", "--by", "pid")
	a.Do(t, "run 2") // k = 0, 1
	b.Do(t, "run 3") // k = 0, 1, 2
	tr.stop()
	code, out, errs := tr.wait(t)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	// bpftrace's -f json writes a tuple key's parts joined by ",".
	type bucket struct{ Min, Max, Count int64 }
	want := map[string][]bucket{
		fmt.Sprintf("%s,%d", probe, a.PID()): {{0, 0, 1}, {1, 1, 1}},
		fmt.Sprintf("%s,%d", probe, b.PID()): {{0, 0, 1}, {1, 1, 1}, {2, 3, 1}},
	}
	have := flagMaps(t, out)["@"]
	if len(have) != len(want) {
		t.Fatalf("keys %v, want %v; output %q", have, want, out)
	}
	for k, w := range want {
		var h []bucket
		if err := json.Unmarshal(have[k], &h); err != nil {
			t.Fatalf("@[%s]: %s: %v (output %q)", k, have[k], err, out)
		}
		if fmt.Sprint(h) != fmt.Sprint(w) {
			t.Errorf("@[%s] = %v, want %v", k, h, w)
		}
	}
}

// TestFlagStringFilter filters tracee.c's str probe on its string, as
// str(arg0) and as arg0 read by --str, and counts by the string.
func TestFlagStringFilter(t *testing.T) {
	bin := testutil.BuildTracee(t, "-O2")
	probe := "usdt:" + bin + ":tracee:str"
	for _, tt := range []struct {
		name string
		args []string
		want map[string]uint64
	}{
		{"str(arg0) ==", []string{"--filter", `str(arg0) == "hello-1"`, "--by", "str(arg0)"},
			map[string]uint64{probe + ",hello-1": 1}},
		{"--str arg0 !=", []string{"--str", "0", "--filter", `arg0 != "hello-1"`, "--by", "arg0"},
			map[string]uint64{probe + ",hello-0": 1, probe + ",hello-2": 1, probe + ",hello-3": 1}},
		{"string and integer", []string{"--filter", `str(arg0) != "hello-0"`, "--filter", "arg1 < 3"},
			map[string]uint64{probe: 2}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tc := testutil.StartTracee(t, bin)
			out := runFlagTrace(t, tc, 4, append([]string{"--count", probe}, tt.args...)...)
			if have := counts(t, out); fmt.Sprint(have) != fmt.Sprint(tt.want) {
				t.Errorf("counts %v, want %v", have, tt.want)
			}
		})
	}
}

// TestFlagPerProbeFilter applies a filter to one of two probes only
// (PROVIDER:NAME=EXPR) and another to both.
func TestFlagPerProbeFilter(t *testing.T) {
	bin := testutil.BuildTracee(t, "-O2")
	tc := testutil.StartTracee(t, bin)
	str, consts := "usdt:"+bin+":tracee:str", "usdt:"+bin+":tracee:consts"
	// consts fires with 42, -7, 200, -1; str with hello-k, k.
	out := runFlagTrace(t, tc, 4, "--count", str, consts, "--filter", "tracee:str=arg1 >= 2", "--filter", "arg0 != 0")
	want := map[string]uint64{str: 2, consts: 4}
	if have := counts(t, out); fmt.Sprint(have) != fmt.Sprint(want) {
		t.Errorf("counts %v, want %v", have, want)
	}
}

// TestFlagMixUSDTAndUprobe counts a USDT probe and a function of the
// same executable in one flag trace, and prints their events in another:
// tracee.c's run() fires str once.
func TestFlagMixUSDTAndUprobe(t *testing.T) {
	bin := testutil.BuildTracee(t, "-O0")
	str, run := "usdt:"+bin+":tracee:str", "uprobe:"+bin+":run"
	tc := testutil.StartTracee(t, bin)
	out := runFlagTrace(t, tc, 3, "--count", str, run, "--filter", "arg0 != 99")
	want := map[string]uint64{str: 3, run: 3}
	if have := counts(t, out); fmt.Sprint(have) != fmt.Sprint(want) {
		t.Errorf("counts %v, want %v", have, want)
	}

	tc = testutil.StartTracee(t, bin)
	out = runFlagTrace(t, tc, 3, str, run, "--str", "tracee:str=0")
	var have []string
	for _, ev := range parseEvents(t, out) {
		if ev.PID != tc.PID() {
			t.Errorf("event %+v of another process", ev)
		}
		have = append(have, fmt.Sprint(ev.Probe, " ", ev.Args[0]))
	}
	// run(k) is entered, then fires str with "hello-k".
	wantEvents := []string{"uprobe:run 0", "tracee:str hello-0", "uprobe:run 1", "tracee:str hello-1", "uprobe:run 2", "tracee:str hello-2"}
	if fmt.Sprint(have) != fmt.Sprint(wantEvents) {
		t.Errorf("events %q, want %q", have, wantEvents)
	}
}

// TestFlagsPrintAsProgram checks that flag shorthands print exactly what
// the programs they stand for print, text and JSON.
func TestFlagsPrintAsProgram(t *testing.T) {
	bin := testutil.BuildTracee(t, "-O2")
	str := "usdt:" + bin + ":tracee:str"
	inl := "usdt:" + bin + ":tracee:inl"
	for _, tt := range []struct {
		name    string
		flags   []string
		program string
	}{
		{"count", []string{"--count", str, inl},
			str + "," + inl + " { @[probe] = count(); }"},
		{"hist by comm", []string{"--hist", "arg1", "--by", "comm", str},
			str + " { @[probe, comm] = hist(arg1); }"},
		{"format", []string{"-F", `"%s got %d", str(arg0), arg1`, "--filter", "arg1 > 0", str},
			str + ` /arg1 > 0/ { printf("%s got %lld\n", str(arg0), arg1); }`},
		{"latency", []string{"--latency", "str,inl", str, inl},
			str + " { @start[tid] = nsecs; } " + inl + " /@start[tid]/ { @latency_ns[probe] = hist(nsecs - @start[tid]); delete(@start[tid]); }"},
	} {
		for _, output := range []string{"text", "json"} {
			t.Run(tt.name+"/"+output, func(t *testing.T) {
				var outs []string
				for _, args := range [][]string{tt.flags, {"-e", tt.program}} {
					tc := testutil.StartTracee(t, bin)
					tr := startTrace(t, append([]string{"trace", "-p", strconv.Itoa(tc.PID()), "-o", output}, args...)...)
					tc.Do(t, "run 3")
					tc.Quit(t)
					code, out, errs := tr.wait(t)
					if code != 0 {
						t.Fatalf("%q: exit %d: %s", args, code, errs)
					}
					if tt.name == "latency" {
						// Nanoseconds differ from run to run: compare the
						// keys and counts.
						out = latencyShape(out)
					}
					outs = append(outs, out)
				}
				if outs[0] != outs[1] || outs[0] == "" {
					t.Errorf("flags print\n%s\nthe program prints\n%s", outs[0], outs[1])
				}
			})
		}
	}
}

// latencyShape keeps what does not depend on time of a --latency
// trace's output: each line but a histogram's buckets, and the sum of the
// buckets' counts ("[4K, 8K) 1 |@@@|" in text, "count": 1 in JSON).
func latencyShape(out string) string {
	var b strings.Builder
	n := 0
	for _, l := range strings.Split(out, "\n") {
		switch {
		case strings.HasPrefix(l, "["):
			if f := strings.Fields(l[strings.IndexByte(l, ')')+1:]); len(f) > 0 {
				k, _ := strconv.Atoi(f[0])
				n += k
			}
		case strings.HasPrefix(l, "{"):
			for _, p := range strings.Split(l, `"count": `)[1:] {
				k, _ := strconv.Atoi(p[:strings.IndexByte(p, '}')])
				n += k
			}
			fmt.Fprintf(&b, "%s\n", l[:strings.Index(l, ": [")])
		default:
			b.WriteString(l + "\n")
		}
	}
	fmt.Fprintf(&b, "%d hits\n", n)
	return b.String()
}

// injectSource defines two functions whose symbols look like program text:
// one with a '"', which no probe of a program can name, one without.
const injectSource = `#include <stdio.h>
__attribute__((noinline)) int quoted(int x) __asm__("\"q\\\"} BEGIN { exit(); } uprobe:\\\"x:y\"");
__attribute__((noinline)) int quoted(int x) { return x + 1; }
__attribute__((noinline)) int braces(int x) __asm__("\"b} BEGIN { exit(); } i:s:1 {\"");
__attribute__((noinline)) int braces(int x) { return x + 2; }
/* gas takes the escaped quote in a symbol's definition, not in a call. */
int (*volatile callQuoted)(int) = quoted;
int main(void) {
	char l[8];
	printf("READY\n");
	fflush(stdout);
	while (fgets(l, sizeof l, stdin)) {
		printf("%d\nDONE\n", callQuoted(1) + braces(1));
		fflush(stdout);
	}
	return 0;
}
`

// TestFlagProbeNameInjection traces functions whose names hold program
// text, selected by globs: each is counted under its own name, and the
// "exit()" in them never runs (the trace ends with the process).
// Selectors with a '"' or a newline, escaped or not, which no program
// can hold, are refused before anything is attached.
func TestFlagProbeNameInjection(t *testing.T) {
	gcc := testutil.RequireTool(t, "gcc")
	dir := t.TempDir()
	src := filepath.Join(dir, "inject.c")
	if err := os.WriteFile(src, []byte(injectSource), 0o600); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "inject")
	if out, err := exec.Command(gcc, "-O0", "-o", bin, src).CombinedOutput(); err != nil {
		t.Fatalf("gcc: %v\n%s", err, out)
	}
	for _, sel := range []string{
		`uprobe:` + bin + `:q\x22*`,
		"usdt:" + bin + ":p:n\"{",
		"p:n\n{",
	} {
		_, err := trace.FlagProgram(&trace.Flags{Probes: []string{sel}, Count: true}, nil)
		var fe *trace.FlagError
		if !errors.As(err, &fe) {
			t.Errorf("%q: error %v, want a *trace.FlagError", sel, err)
		}
		var outb, errb bytes.Buffer
		if code := run(context.Background(), []string{"trace", "--count", sel}, &outb, &errb); code != 1 || outb.Len() != 0 {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want it refused", sel, code, outb.String(), errb.String())
		}
	}

	testutil.RequireBPF(t)
	target := testutil.StartCmd(t, exec.Command(bin))
	target.Expect(t, "READY")
	tr := startTrace(t, "trace", "-p", strconv.Itoa(target.PID()), "-o", "json", "--count", "uprobe:"+bin+":b*", "uprobe:"+bin+":q*")
	for range 2 {
		target.Send(t, "go")
	}
	target.Stdin().Close()
	code, out, errs := tr.wait(t)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	want := map[string]uint64{
		"uprobe:" + bin + ":b} BEGIN { exit(); } i:s:1 {":      2,
		"uprobe:" + bin + `:q"} BEGIN { exit(); } uprobe:"x:y`: 2,
	}
	if have := counts(t, out); fmt.Sprint(have) != fmt.Sprint(want) {
		t.Errorf("counts %v, want %v (output %q)", have, want, out)
	}
}

// TestFlagTwoPIDs traces two processes of one executable, and not a
// third, with two -p, counting by pid and printing events: each traced
// process's hits and only those; the trace ends when both have exited.
func TestFlagTwoPIDs(t *testing.T) {
	bin := testutil.BuildTracee(t, "-O2")
	for _, mode := range []string{"count", "events"} {
		t.Run(mode, func(t *testing.T) {
			a, b, other := testutil.StartTracee(t, bin), testutil.StartTracee(t, bin), testutil.StartTracee(t, bin)
			args := []string{"trace", "-p", strconv.Itoa(a.PID()), "-p", strconv.Itoa(b.PID()), "-o", "json", "usdt::tracee:str"}
			if mode == "count" {
				args = append(args, "--count", "--by", "pid")
			} else {
				args = append(args, "--str", "0")
			}
			tr := startTrace(t, args...)
			a.Do(t, "run 2")
			b.Do(t, "run 3")
			other.Do(t, "run 4")
			a.Quit(t)
			b.Quit(t)
			code, out, errs := tr.wait(t)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errs)
			}
			have := make(map[string]uint64)
			if mode == "count" {
				for k, n := range counts(t, out) {
					_, pid, _ := strings.Cut(k, ",")
					have[pid] += n
				}
			} else {
				for _, ev := range parseEvents(t, out) {
					if len(ev.Args) != 2 || !strings.HasPrefix(fmt.Sprint(ev.Args[0]), "hello-") {
						t.Errorf("event %+v, want tracee:str's hello-K, K", ev)
					}
					have[strconv.Itoa(ev.PID)]++
				}
			}
			want := map[string]uint64{strconv.Itoa(a.PID()): 2, strconv.Itoa(b.PID()): 3}
			if fmt.Sprint(have) != fmt.Sprint(want) {
				t.Errorf("hits by pid %v, want %v (output %q)", have, want, out)
			}
		})
	}
}
