package main

import (
	"bufio"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/usdtkit/usdtkit/internal/testutil"
)

// TestTraceSignals runs the real binary and ends a trace with SIGTERM and
// with SIGINT: each time it detaches, reports the events and losses, and
// exits 0.
func TestTraceSignals(t *testing.T) {
	testutil.RequireBPF(t)
	bin := filepath.Join(t.TempDir(), "usdtkit")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	py := startPyScript(t, 1)
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		t.Run(sig.String(), func(t *testing.T) {
			testutil.DefaultSIGINTForChildren()
			cmd := exec.Command(bin, "trace", "-q", "-v", "-p", strconv.Itoa(py.PID()), "usdt::python:line")
			stderr, err := cmd.StderrPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
			sc := bufio.NewScanner(stderr)
			if !sc.Scan() || !strings.HasPrefix(sc.Text(), "Tracing ") {
				t.Fatalf("first line %q, want Tracing ...", sc.Text())
			}
			if err := cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			var rest []string
			for sc.Scan() {
				rest = append(rest, sc.Text())
			}
			if err := cmd.Wait(); err != nil {
				t.Errorf("exit after %v: %v", sig, err)
			}
			// Events that arrive while the probes detach are counted in a
			// line of their own, when there are any (python:line fires
			// all the time).
			if n := len(rest); n == 2 && strings.Contains(rest[1], "events that came while the probes were being detached") {
				rest = rest[:1]
			}
			if len(rest) != 1 || !strings.HasSuffix(rest[0], " lost.") {
				t.Errorf("after %v stderr %q, want one line with the events and losses", sig, rest)
			}
		})
	}
}

// TestTraceNotRoot runs the real binary as nobody: tracing fails with one
// sentence that says what privileges it needs, and exit status 1.
func TestTraceNotRoot(t *testing.T) {
	testutil.RequireRoot(t)
	// nobody must reach the binary: t.TempDir and its parent are 0700.
	dir := t.TempDir()
	for _, d := range []string{filepath.Dir(dir), dir} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	bin := filepath.Join(dir, "usdtkit")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	cmd := exec.Command(bin, "trace", "-d", "1s", "usdt:"+testutil.Python311+":python:line")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	lines := nonEmptyLines(string(out))
	if !errors.As(err, &exit) || exit.ExitCode() != 1 || len(lines) != 1 || !strings.Contains(lines[0], "tracing needs root, or CAP_BPF and CAP_PERFMON") {
		t.Errorf("as nobody: %v, output %q; want exit 1 and one line saying tracing needs root", err, out)
	}
}

// TestTraceSecondSignal ends a trace whose stdout nobody reads while a
// probe keeps firing: the first SIGINT starts the orderly end, which waits
// to write the ring's records; a second SIGINT ends usdtkit at once.
func TestTraceSecondSignal(t *testing.T) {
	testutil.RequireBPF(t)
	testutil.DefaultSIGINTForChildren()
	bin := usdtkitBin(t)
	tracee := testutil.BuildTracee(t, "-O2")
	tc := testutil.StartTracee(t, tracee)
	tc.Send(t, "loop 2000000000")
	cmd := exec.Command(bin, "trace", "-v", "-p", strconv.Itoa(tc.PID()),
		"-e", "usdt:"+tracee+":tracee:bench { printf(\"%d %d\\n\", arg0, arg1); }")
	// A pipe read by no one: once its buffer is full, usdtkit's writes block.
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	cmd.Stdout = w
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w.Close()
	t.Cleanup(func() { cmd.Process.Kill() })
	exited := make(chan error, 1)
	sc := bufio.NewScanner(stderr)
	if !sc.Scan() || !strings.HasPrefix(sc.Text(), "Tracing ") {
		t.Fatalf("first line %q, want Tracing ...", sc.Text())
	}
	go func() {
		for sc.Scan() {
		}
		exited <- cmd.Wait()
	}()
	waitPipeFull(t, r)
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		t.Fatalf("usdtkit exited (%v) with its output unread", err)
	case <-time.After(time.Second):
	}
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			t.Fatalf("exit: %v, want an end by SIGINT", err)
		}
		if ws, ok := ee.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGINT {
			t.Errorf("exit %v, want an end by SIGINT", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("usdtkit still runs 30 s after a second SIGINT")
	}
	// The kernel detached with usdtkit's fds; the tracee runs on.
	if err := tc.Cmd.Process.Signal(syscall.Signal(0)); err != nil {
		t.Errorf("tracee: %v", err)
	}
}

// waitPipeFull returns once the pipe r reads from holds data and has not
// grown for 200 ms: its writer is blocked. A fixed sleep was not enough
// on a loaded machine, where the tracee fired too few events to fill it.
func waitPipeFull(t *testing.T, r *os.File) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	last, same := -1, 0
	for same < 10 {
		if time.Now().After(deadline) {
			t.Fatalf("the pipe holds %d bytes and still changes after 30 s", last)
		}
		time.Sleep(20 * time.Millisecond)
		n, err := unix.IoctlGetInt(int(r.Fd()), unix.TIOCINQ)
		if err != nil {
			t.Fatal(err)
		}
		if n > 0 && n == last {
			same++
		} else {
			same = 0
		}
		last = n
	}
}
