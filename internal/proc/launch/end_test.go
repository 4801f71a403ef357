package launch

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"testing"
	"time"
)

// startSh starts sh -c script under Start, resumes it and waits for the
// line "ready" on its stdout.
func startSh(t *testing.T, script string) *Process {
	t.Helper()
	cmd := exec.Command("/bin/sh", "-c", script)
	// A pipe of our own, not StdoutPipe: the Process reaps the command
	// with Cmd.Wait, which closes a StdoutPipe, and a command that exits
	// at once would take its ready line with it.
	out, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { out.Close() })
	cmd.Stdout = w
	p, err := Start(cmd)
	w.Close()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Kill)
	if err := p.Resume(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(out)
	if !sc.Scan() || sc.Text() != "ready" {
		t.Fatalf("no ready line: %q %v", sc.Text(), sc.Err())
	}
	return p
}

// TestEnd checks how End ends a command and what it reports: SIGTERM
// first (the command can clean up and choose its status), SIGKILL after
// the grace time, nothing for a command that has exited by itself.
func TestEnd(t *testing.T) {
	tests := []struct {
		name      string
		script    string
		exitFirst bool // wait for the command to exit before End
		grace     time.Duration
		wantCode  int
		wantEnded bool
	}{
		{"SIGTERM handled", `trap 'exit 3' TERM; echo ready; while :; do sleep 0.01; done`, false, time.Minute, 3, true},
		{"SIGTERM default", `echo ready; exec sleep 60`, false, time.Minute, 128 + 15, true},
		{"SIGTERM ignored, then SIGKILL", `trap '' TERM; echo ready; while :; do sleep 0.01; done`, false, 50 * time.Millisecond, 128 + 9, true},
		{"exited by itself", `echo ready; exit 7`, true, time.Minute, 7, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := startSh(t, tt.script)
			if tt.exitFirst {
				if err := WaitExit(context.Background(), p.PID()); err != nil {
					t.Fatal(err)
				}
			}
			state, ended := p.End(tt.grace)
			if code := ExitCode(state); code != tt.wantCode || ended != tt.wantEnded {
				t.Errorf("End: %v (code %d), ended %v; want code %d, ended %v", state, code, ended, tt.wantCode, tt.wantEnded)
			}
		})
	}
}

func TestLookPath(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		in      string
		want    string
		wantErr error
	}{
		{"in PATH", "sh", sh, nil},
		{"path", "/bin/sh", "/bin/sh", nil},
		{"not executable", "/etc/passwd", "", ErrNotExecutable},
		{"directory", "/usr", "", ErrNotExecutable},
		{"missing path", "/no/such/file", "", ErrNoCommand},
		{"missing command", "no-such-command-xyz", "", ErrNoCommand},
		{"empty", "", "", ErrNoCommand},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			have, err := LookPath(tt.in)
			if have != tt.want || !errors.Is(err, tt.wantErr) || (tt.wantErr != nil && errors.Is(err, os.ErrPermission)) {
				t.Errorf("LookPath(%q) = %q, %v; want %q, %v (and never os.ErrPermission)", tt.in, have, err, tt.want, tt.wantErr)
			}
		})
	}
}

func TestThreadGroup(t *testing.T) {
	pid := os.Getpid()
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range tasks {
		var tid int
		if _, err := fmt.Sscan(e.Name(), &tid); err != nil {
			t.Fatal(err)
		}
		if have, err := ThreadGroup(tid); have != pid || err != nil {
			t.Errorf("ThreadGroup(%d) = %d, %v; want %d", tid, have, err, pid)
		}
	}
	if _, err := ThreadGroup(1 << 30); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("ThreadGroup of no thread: %v, want os.ErrNotExist", err)
	}
}
