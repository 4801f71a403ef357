package main

import (
	"bufio"
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/usdtkit/usdtkit/internal/testutil"
)

// TestTraceCommandExitStatus checks that usdtkit exits with the status of
// a -c command that ends by itself.
func TestTraceCommandExitStatus(t *testing.T) {
	testutil.RequireBPF(t)
	py := testutil.RequireFile(t, testutil.Python311)
	var out, errb bytes.Buffer
	code := run(context.Background(), []string{"trace", "-c", py + ` -c "import sys; sys.exit(7)"`, "usdt::python:gc__start"}, &out, &errb)
	if code != 7 {
		t.Errorf("exit %d, want the command's 7; stderr %q", code, errb.String())
	}
}

// termScript writes "ready" to the FIFO argv[1] once its SIGTERM handler
// is in place, then waits; on SIGTERM it writes "TERM" and exits 3.
const termScript = `import signal, sys, time
fifo = open(sys.argv[1], "w", buffering=1)
def term(*a):
    fifo.write("TERM\n")
    sys.exit(3)
signal.signal(signal.SIGTERM, term)
fifo.write("ready\n")
while True:
    time.sleep(0.01)
`

// TestTraceCommandTerminated checks that a trace that ends before its -c
// command ends the command with SIGTERM, not SIGKILL, so that it can clean
// up (a dynsdt provider removes its files); usdtkit's status is then its
// own, 0.
func TestTraceCommandTerminated(t *testing.T) {
	py := testutil.RequireFile(t, testutil.Python311)
	dir := t.TempDir()
	script := filepath.Join(dir, "term.py")
	if err := os.WriteFile(script, []byte(termScript), 0o600); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "fifo")
	if err := unix.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	// O_RDWR: the open does not wait for the writer.
	f, err := os.OpenFile(fifo, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	lines := make(chan string, 2)
	go func() {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	next := func() string {
		select {
		case l := <-lines:
			return l
		case <-time.After(30 * time.Second):
			t.Fatal("no line from the command")
			return ""
		}
	}
	tr := startTrace(t, "trace", "-c", py+" "+script+" "+fifo, "usdt::python:gc__start")
	if l := next(); l != "ready" {
		t.Fatalf("command said %q, want ready", l)
	}
	tr.stop()
	if l := next(); l != "TERM" {
		t.Errorf("command said %q, want TERM (it got SIGTERM)", l)
	}
	code, _, errs := tr.wait(t)
	if code != 0 || !strings.Contains(errs, "usdtkit: ended the command (exit status 3).\n") {
		t.Errorf("exit %d, stderr %q; want 0 and the command's end reported", code, errs)
	}
}
