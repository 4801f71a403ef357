package main

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/usdtkit/usdtkit/internal/testutil"
)

// spinSource returns a C program with n functions f0..f(n-1) that it calls
// in a loop, all of them every 2 ms, after printing READY.
func spinSource(n int) string {
	var b strings.Builder
	b.WriteString("#include <stdio.h>\n#include <unistd.h>\n")
	for i := range n {
		fmt.Fprintf(&b, "__attribute__((noinline)) void f%d(void) { __asm__ volatile(\"\"); }\n", i)
	}
	b.WriteString("int main(void) {\n\tprintf(\"READY\\n\");\n\tfflush(stdout);\n\tfor (;;) {\n")
	for i := range n {
		fmt.Fprintf(&b, "\t\tf%d();\n", i)
	}
	b.WriteString("\t\tusleep(2000);\n\t}\n}\n")
	return b.String()
}

func monotonicNow(t *testing.T) uint64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		t.Fatal(err)
	}
	return uint64(ts.Nano())
}

// TestTraceClassicEndsAtDeadline traces 50 always-firing functions with
// classic uprobe links, which take the kernel a long time to detach one by
// one, and checks that the trace ends at -d: no event printed happened
// after the deadline (the ones that come during the detach are counted and
// reported instead), and the run ends.
func TestTraceClassicEndsAtDeadline(t *testing.T) {
	const sites = 50
	testutil.RequireBPF(t)
	gcc := testutil.RequireTool(t, "gcc")
	dir := t.TempDir()
	src := filepath.Join(dir, "spin.c")
	if err := os.WriteFile(src, []byte(spinSource(sites)), 0o600); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "spin")
	if out, err := exec.Command(gcc, "-O1", "-o", bin, src).CombinedOutput(); err != nil {
		t.Fatalf("gcc: %v\n%s", err, out)
	}
	spin := exec.Command(bin)
	stdout, err := spin.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := spin.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { spin.Process.Kill(); spin.Wait() })
	if sc := bufio.NewScanner(stdout); !sc.Scan() || sc.Text() != "READY" {
		t.Fatalf("spin: no READY line")
	}

	// On a loaded machine attaching the 50 links can take all of a short
	// window: then no event comes before the deadline, and the test tries
	// a longer one.
	var (
		d        time.Duration
		deadline uint64
		ended    time.Duration
		errs     string
		evs      []traceEvent
	)
	for d = time.Second; len(evs) == 0; d *= 2 {
		tr := startTrace(t, "trace", "--classic", "-p", strconv.Itoa(spin.Process.Pid), "-d", d.String(), "-o", "json", "uprobe:"+bin+":f[0-9]*")
		// The deadline was set before the attach, so it is at most d from now.
		deadline = monotonicNow(t) + uint64(d)
		start := time.Now()
		var code int
		select {
		case code = <-tr.done:
			tr.done <- code
		case <-time.After(2 * time.Minute):
			t.Fatal("trace did not end")
		}
		ended = time.Since(start)
		<-tr.errDone
		tr.mu.Lock()
		var out string
		out, errs = tr.stdout.String(), tr.stderr.String()
		tr.mu.Unlock()
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errs)
		}
		if want := fmt.Sprintf("Tracing %d probes at %d sites (classic uprobe links)", sites, sites); !strings.Contains(errs, want) {
			t.Errorf("stderr %q does not say %q", errs, want)
		}
		evs = parseEvents(t, out)
		if len(evs) == 0 && d >= 8*time.Second {
			t.Fatalf("no events; stderr %q", errs)
		}
		if len(evs) == 0 {
			t.Logf("-d %v: no events before the deadline (stderr %q); a longer window", d, errs)
		}
	}
	d /= 2
	late := 0
	for _, ev := range evs {
		if ev.TS > deadline {
			late++
		}
	}
	if late > 0 {
		t.Errorf("%d of %d events printed happened after the deadline", late, len(evs))
	}
	t.Logf("%d events; the trace ended %v after the deadline (%d classic links); stderr %q", len(evs), ended-d, sites, errs)
}
