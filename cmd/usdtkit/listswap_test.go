package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/usdtkit/usdtkit/internal/testutil"
)

// runGuarded runs usdtkit with args in-process and fails the test if it
// has not returned within a minute (an open that blocks never returns).
func runGuarded(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	type result struct {
		code     int
		out, err string
	}
	done := make(chan result, 1)
	go func() {
		var out, errb bytes.Buffer
		code := run(context.Background(), args, &out, &errb)
		done <- result{code, out.String(), errb.String()}
	}()
	select {
	case r := <-done:
		return r.code, r.out, r.err
	case <-time.After(time.Minute):
		t.Fatalf("usdtkit %s blocked", strings.Join(args, " "))
		return 0, "", ""
	}
}

// TestListPIDSwapCLI is sdt's TestListPIDSwap through the command: list -p
// of a process that swaps its executable's directory with a symlink to a
// host directory never prints the host file's probes.
func TestListPIDSwapCLI(t *testing.T) {
	sw := testutil.StartSwap(t, testutil.SwapSymlink)
	pid := strconv.Itoa(sw.PID())
	const runs = 200
	owned, refused := 0, 0
	for i := 0; i < runs; i++ {
		code, out, errs := runGuarded(t, "list", "-o", "json", "-p", pid)
		if code != 0 {
			t.Fatalf("run %d: exit %d: %s", i, code, errs)
		}
		own := false
		for _, l := range nonEmptyLines(out) {
			var p listJSONLine
			if err := json.Unmarshal([]byte(l), &p); err != nil {
				t.Fatalf("line %q: %v", l, err)
			}
			if p.Provider == "host" {
				t.Fatalf("run %d: listed the host file's %s:%s as %s", i, p.Provider, p.Name, p.Path)
			}
			own = own || p.Provider == "own"
		}
		switch {
		case own:
			owned++
		case strings.Contains(errs, "usdtkit: warning:"):
			refused++
		default:
			t.Fatalf("run %d: own executable neither listed nor warned about; stderr %q", i, errs)
		}
	}
	t.Logf("%d runs: own file %d, refused %d", runs, owned, refused)
	if owned == 0 {
		t.Errorf("own file never listed in %d runs", runs)
	}
}

// TestListFIFOPath names a FIFO as the file to list: a quick refusal,
// not an open(2) that waits for a writer.
func TestListFIFOPath(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"list", fifo}, {"list", "--symbols", fifo}, {"list", "usdt:" + fifo + ":*"}} {
		code, _, errs := runGuarded(t, args...)
		if code != 1 || !strings.Contains(errs, "not a regular file") {
			t.Errorf("usdtkit %s: have exit %d, stderr %q, want exit 1 saying not a regular file", strings.Join(args, " "), code, errs)
		}
	}
}

// TestListPIDMalformedCLI maps a good library and a malformed ELF into a
// process: list -p prints one warning naming the malformed file and lists
// the rest.
func TestListPIDMalformedCLI(t *testing.T) {
	testutil.RequireRoot(t)
	cmd, good, bad := testutil.StartGoodAndTruncated(t, "#include <sys/sdt.h>\nvoid good(void) { DTRACE_PROBE(good, lib); }\n")

	for _, args := range [][]string{{"list", "-p", strconv.Itoa(cmd.Process.Pid)}, {"list", "--symbols", "-p", strconv.Itoa(cmd.Process.Pid)}} {
		code, out, errs := runGuarded(t, args...)
		if code != 0 {
			t.Fatalf("usdtkit %s: exit %d: %s", strings.Join(args, " "), code, errs)
		}
		warnings := nonEmptyLines(errs)
		if len(warnings) != 1 || !strings.HasPrefix(warnings[0], "usdtkit: warning:") || !strings.Contains(warnings[0], bad) {
			t.Errorf("usdtkit %s: have stderr %q, want one warning naming %s", strings.Join(args, " "), errs, bad)
		}
		if args[1] == "--symbols" {
			if !strings.Contains(out, good) || !strings.Contains(out, "good") {
				t.Errorf("usdtkit %s: the good library's symbols are missing:\n%s", strings.Join(args, " "), out)
			}
			continue
		}
		for _, want := range []string{"good:lib", "own:only", "swap:hit"} {
			if !strings.Contains(out, want) {
				t.Errorf("usdtkit %s: %s missing:\n%s", strings.Join(args, " "), want, out)
			}
		}
	}
}

// TestTracePIDSwapCLI runs trace -p on a process that swaps its
// executable's directory with a symlink to the host build: every event
// is the process's own swap:hit (arg 1111; the host build's 2222 never
// runs), or the trace is refused with one clear error.
func TestTracePIDSwapCLI(t *testing.T) {
	testutil.RequireBPF(t)
	const runs = 5
	events := 0
	for i := 0; i < runs; i++ {
		sw := testutil.StartSwap(t, testutil.SwapSymlink)
		tr := startTrace(t, "trace", "-p", strconv.Itoa(sw.PID()), "-o", "json", "swap:hit")
		// Attached: once an event is out (the process may not be scheduled
		// between attach and a kill), end the process, which ends the trace.
		tr.waitStdout(t, 30*time.Second)
		sw.Cmd.Process.Kill()
		code, out, errs := tr.wait(t)
		if code != 0 {
			t.Fatalf("run %d: exit %d: %s", i, code, errs)
		}
		for _, l := range nonEmptyLines(out) {
			var ev struct {
				PID   int    `json:"pid"`
				Probe string `json:"probe"`
				Args  []int  `json:"args"`
			}
			if err := json.Unmarshal([]byte(l), &ev); err != nil {
				t.Fatalf("line %.200q: %v", l, err)
			}
			if ev.PID != sw.PID() || ev.Probe != "swap:hit" || len(ev.Args) != 1 || ev.Args[0] != 1111 {
				t.Fatalf("run %d: event %s, want pid %d swap:hit args [1111]", i, l, sw.PID())
			}
			events++
		}
	}
	t.Logf("%d runs: %d events, all from the process's own file", runs, events)
	if events == 0 {
		t.Error("no events in any run")
	}
}

// TestTracePIDMalformedCLI: trace -p of a process that maps a malformed
// ELF traces the rest, with one warning naming the malformed file when
// the probe looks in every object; one naming another file does not read
// it, so does not warn.
func TestTracePIDMalformedCLI(t *testing.T) {
	testutil.RequireBPF(t)
	dir := t.TempDir()
	exe := filepath.Join(dir, "swapper")
	testutil.BuildSwapper(t, exe, false)
	img, err := os.ReadFile(exe)
	if err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(dir, "libtruncated.so")
	if err := os.WriteFile(bad, img[:256], 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := testutil.StartMapper(t, exe, bad)
	for _, tt := range []struct {
		probe    string
		warnings int
	}{
		{"own:only", 1},
		{"uprobe::main", 1},
		{"uprobe:" + exe + ":main", 0},
	} {
		probe := tt.probe
		tr := startTrace(t, "trace", "-p", strconv.Itoa(cmd.Process.Pid), probe)
		tr.stop()
		<-tr.errDone
		tr.mu.Lock()
		errs := tr.stderr.String()
		tr.mu.Unlock()
		var warnings []string
		for _, l := range nonEmptyLines(errs) {
			if strings.HasPrefix(l, "usdtkit: warning:") {
				warnings = append(warnings, l)
			}
		}
		if len(warnings) != tt.warnings || (len(warnings) > 0 && !strings.Contains(warnings[0], bad)) {
			t.Errorf("trace %s: have warnings %q, want %d naming %s", probe, warnings, tt.warnings, bad)
		}
	}
}
