package trace_test

import (
	"bufio"
	"context"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/usdtkit/usdtkit/internal/testutil"
	"github.com/usdtkit/usdtkit/trace"
)

// TestCommand traces a command from its first instruction: every hit it
// makes is an event, Run ends when it exits, and CommandState says how.
func TestCommand(t *testing.T) {
	testutil.RequireBPF(t)
	bin := testutil.BuildTracee(t, "-O2")
	c := exec.Command(bin)
	c.Stdin = strings.NewReader("run 3\nquit\n")
	var out strings.Builder
	c.Stdout = &out
	prog, err := trace.CompileEvents([]trace.EventProbe{{Probe: "usdt::tracee:str", Strings: []int{0}}},
		&trace.CompileOptions{Executable: c.Path})
	if err != nil {
		t.Fatal(err)
	}
	var have []string
	tr, err := trace.Start(prog, &trace.Options{Command: c, OnEvent: func(ev *trace.Event) error {
		have = append(have, eventLine(ev))
		return nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tr.Close() })
	if err := tr.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	var want []string
	for l := range strings.Lines(out.String()) {
		if strings.HasPrefix(l, "str ") {
			want = append(want, strings.TrimSuffix(l, "\n"))
		}
	}
	if len(want) != 3 || !slices.Equal(have, want) {
		t.Errorf("have %q, want %q", have, want)
	}
	state, ended := tr.CommandState()
	if state == nil || ended || state.ExitCode() != 0 {
		t.Errorf("CommandState: %v, ended %v; want exit status 0 by itself", state, ended)
	}
}

// TestCommandEnded: a trace that ends before its command (here the
// caller's context, cancelled at the first event) ends the command with
// SIGTERM and says so.
func TestCommandEnded(t *testing.T) {
	testutil.RequireBPF(t)
	bin := testutil.BuildTracee(t, "-O2")
	c := exec.Command(bin)
	stdin, err := c.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	defer stdin.Close()
	stdout, err := c.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	prog, err := trace.CompileEvents([]trace.EventProbe{{Probe: "usdt::tracee:consts"}}, &trace.CompileOptions{Executable: c.Path})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	events := 0
	tr, err := trace.Start(prog, &trace.Options{Command: c, OnEvent: func(ev *trace.Event) error {
		events++
		cancel()
		return nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tr.Close() })
	if _, err := stdin.Write([]byte("run 1\n")); err != nil {
		t.Fatal(err)
	}
	go func() {
		// Drain the command's output so it never blocks writing.
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
		}
	}()
	if err := tr.Run(ctx); err != nil {
		t.Fatal(err)
	}
	state, ended := tr.CommandState()
	if events != 1 || state == nil || !ended {
		t.Fatalf("%d events, CommandState %v, ended %v; want 1 event and the command ended", events, state, ended)
	}
	if ws, ok := state.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGTERM {
		t.Errorf("command ended with %v, want SIGTERM", state)
	}
}

// TestCommandErrors: a command that cannot start, or was started already,
// fails Start and leaves nothing behind (TestMain checks descriptors).
func TestCommandErrors(t *testing.T) {
	testutil.RequireBPF(t)
	prog, err := trace.Compile("t.bt", `BEGIN { exit(); }`, nil)
	if err != nil {
		t.Fatal(err)
	}
	started := exec.Command("/bin/true")
	if err := started.Run(); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		cmd  *exec.Cmd
	}{
		{"missing", exec.Command("/nonexistent/usdtkit-test")},
		{"started", started},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr, err := trace.Start(prog, &trace.Options{Command: tt.cmd})
			if err == nil {
				tr.Close()
				t.Fatal("Start succeeded")
			}
		})
	}
}

// TestCommandCPID: cpid is the command's PID, in a predicate, a key and
// printf; a program that reads it is refused without a command, before
// anything is attached.
func TestCommandCPID(t *testing.T) {
	testutil.RequireBPF(t)
	bin := testutil.BuildTracee(t, "-O2")
	prog, err := trace.Compile("cpid.bt", `usdt:`+bin+`:tracee:ints /pid == cpid/ { @[cpid] = count(); printf("%d %d\n", cpid, pid); }`, nil)
	if err != nil {
		t.Fatal(err)
	}
	if tr, err := trace.Start(prog, nil); err == nil || !strings.Contains(err.Error(), "cpid") {
		if tr != nil {
			tr.Close()
		}
		t.Fatalf("Start without a command: %v, want an error about cpid", err)
	}
	c := exec.Command(bin)
	c.Stdin = strings.NewReader("run 2\nquit\n")
	var out strings.Builder
	runToEnd(t, prog, &trace.Options{Command: c, Stdout: &out})
	p := strconv.Itoa(c.Process.Pid)
	want := p + " " + p + "\n" + p + " " + p + "\n\n\n@[" + p + "]: 2\n"
	if out.String() != want {
		t.Errorf("have %q, want %q", out.String(), want)
	}
}

// runToEnd starts prog with opts and runs it to its end; the tracer is
// closed when the test ends.
func runToEnd(t *testing.T, prog *trace.Program, opts *trace.Options) *trace.Tracer {
	t.Helper()
	tr, err := trace.Start(prog, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tr.Close() })
	if err := tr.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	return tr
}
