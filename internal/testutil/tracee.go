package testutil

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// TraceeSource is the path of the C program with USDT probes that tracing
// tests run (internal/bpf/argread/testdata/tracee.c; its comment says what it
// does).
func TraceeSource(tb testing.TB) string {
	tb.Helper()
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		tb.Fatal("no caller information to find tracee.c")
	}
	return RequireFile(tb, filepath.Join(filepath.Dir(file), "..", "bpf", "argread", "testdata", "tracee.c"))
}

// BuildTracee compiles tracee.c with gcc, sys/sdt.h and flags (say "-O2")
// into a temporary directory and returns the executable's path.
func BuildTracee(tb testing.TB, flags ...string) string {
	tb.Helper()
	gcc := RequireTool(tb, "gcc")
	RequireFile(tb, "/usr/include/x86_64-linux-gnu/sys/sdt.h")
	out := filepath.Join(tb.TempDir(), "tracee")
	args := append(append([]string{}, flags...), "-g", "-o", out, TraceeSource(tb))
	if b, err := exec.Command(gcc, args...).CombinedOutput(); err != nil {
		tb.Fatalf("gcc %v: %v\n%s", args, err, b)
	}
	return out
}

// Tracee is a child process a test speaks to in lines over its stdin and
// stdout (tracee.c, chain.c, or any helper program), killed when the test
// ends.
type Tracee struct {
	Cmd   *exec.Cmd
	stdin io.WriteCloser
	out   *bufio.Scanner
}

// StartTracee runs the executable at path and waits until it has exec'd.
func StartTracee(tb testing.TB, path string) *Tracee {
	tb.Helper()
	t := StartCmd(tb, exec.Command(path))
	WaitExec(tb, t.PID(), path)
	return t
}

// StartCmd starts cmd with pipes to its stdin and stdout; its stderr is
// the test's unless cmd.Stderr is set. It is killed when the test ends.
func StartCmd(tb testing.TB, cmd *exec.Cmd) *Tracee {
	tb.Helper()
	stdin, err := cmd.StdinPipe()
	if err != nil {
		tb.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		tb.Fatal(err)
	}
	if cmd.Stderr == nil {
		cmd.Stderr = os.Stderr
	}
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		stdin.Close()
		cmd.Process.Kill()
		if cmd.ProcessState == nil {
			cmd.Wait()
		}
	})
	return &Tracee{Cmd: cmd, stdin: stdin, out: bufio.NewScanner(stdout)}
}

// WaitExec returns once process pid has exec'd and maps what it runs: it
// no longer runs this test's binary, as a child started with os/exec does
// between fork and exec, nor is it between exec's switch of /proc/PID/exe
// and its mapping of the new executable (listing its probes by PID then
// finds none, which a loaded machine makes likely). path is for the message; a script may exec another
// program (its interpreter, then what it runs), so it is not compared.
func WaitExec(tb testing.TB, pid int, path string) {
	tb.Helper()
	self, err := os.Readlink("/proc/self/exe")
	if err != nil {
		tb.Fatal(err)
	}
	link := fmt.Sprintf("/proc/%d/exe", pid)
	deadline := time.Now().Add(30 * time.Second)
	for {
		exe, err := os.Readlink(link)
		if err == nil && exe != self && mapsFile(pid, exe) {
			return
		}
		if err != nil && errors.Is(err, fs.ErrNotExist) {
			return // exited (or a zombie): nothing to wait for
		}
		if time.Now().After(deadline) {
			tb.Fatalf("process %d (%s) has not exec'd after 30s: it runs %q (%v)", pid, path, exe, err)
		}
		// exec has no event to wait on here; it takes microseconds.
		time.Sleep(200 * time.Microsecond)
	}
}

// mapsFile reports whether process pid maps the file at path: exec sets
// /proc/PID/exe before it maps the new executable, so a listing by PID
// in between finds no probes.
func mapsFile(pid int, path string) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/maps", pid))
	if err != nil {
		return errors.Is(err, fs.ErrNotExist) // exited: nothing to wait for
	}
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasSuffix(l, " "+path) {
			return true
		}
	}
	return false
}

// Next returns the next line the process prints, or false when its
// output ended.
func (t *Tracee) Next() (string, bool) {
	if !t.out.Scan() {
		return "", false
	}
	return t.out.Text(), true
}

// Line returns the next line the process prints, and fails the test if
// it ended first.
func (t *Tracee) Line(tb testing.TB) string {
	tb.Helper()
	l, ok := t.Next()
	if !ok {
		tb.Fatalf("%s ended: %v", t.Cmd.Path, t.out.Err())
	}
	return l
}

// Expect fails the test unless the next line the process prints is want.
func (t *Tracee) Expect(tb testing.TB, want string) {
	tb.Helper()
	if l := t.Line(tb); l != want {
		tb.Fatalf("%s: have %q, want %q", t.Cmd.Path, l, want)
	}
}

// Discard reads and drops the rest of the process's output, so that it
// never blocks writing it.
func (t *Tracee) Discard() {
	go func() {
		for t.out.Scan() {
		}
	}()
}

// Stdin is the process's standard input; closing it ends a tracee.
func (t *Tracee) Stdin() io.WriteCloser { return t.stdin }

// Do sends one command ("run 3", "sem", "loop 1000") and returns the lines
// the tracee printed before "done".
func (t *Tracee) Do(tb testing.TB, command string) []string {
	tb.Helper()
	t.Send(tb, command)
	return t.Until(tb, "done")
}

// Until returns the lines the process prints before the line end, and
// fails the test if it ends first.
func (t *Tracee) Until(tb testing.TB, end string) []string {
	tb.Helper()
	var lines []string
	for t.out.Scan() {
		if t.out.Text() == end {
			return lines
		}
		lines = append(lines, t.out.Text())
	}
	tb.Fatalf("%s ended before %q (have %q): %v", t.Cmd.Path, end, lines, t.out.Err())
	return nil
}

// WaitReady returns once the tracee has answered an empty command: it
// then reads its commands, so the dynamic loader has mapped every library
// it links. WaitExec only sees the executable mapped; a test that reads
// the tracee's mappings once (and keeps them after it exits) waits here,
// or a loaded machine leaves libc out. Only for tracees that answer any
// line with "done" (tracee.c, chain.c).
func (t *Tracee) WaitReady(tb testing.TB) {
	tb.Helper()
	t.Do(tb, "")
}

// Send sends one command without waiting for its answer ("loop N" with a
// large N keeps a probe firing while the test does something else).
func (t *Tracee) Send(tb testing.TB, command string) {
	tb.Helper()
	if _, err := fmt.Fprintln(t.stdin, command); err != nil {
		tb.Fatal(err)
	}
}

// WaitSem sends "sem" until the tracee reports the sem probe's semaphore
// raised — a tracer that attaches sem last is then fully attached — and
// fails the test if that takes over 10 s or alive reports the tracer gone.
func (t *Tracee) WaitSem(tb testing.TB, alive func() bool) {
	tb.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for t.Do(tb, "sem")[0] != "sem enabled" {
		if !alive() || time.Now().After(deadline) {
			tb.Fatal("the tracer did not attach to the tracee's sem probe")
		}
	}
}

// PID is the tracee's process ID.
func (t *Tracee) PID() int { return t.Cmd.Process.Pid }

// Quit closes the tracee's stdin and waits for it to exit.
func (t *Tracee) Quit(tb testing.TB) {
	tb.Helper()
	t.stdin.Close()
	if err := t.Cmd.Wait(); err != nil {
		tb.Fatalf("tracee: %v", err)
	}
}
