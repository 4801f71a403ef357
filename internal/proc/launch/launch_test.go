package launch

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestStartStopsBeforeFirstInstruction checks that the command is stopped
// (state t) until Resume, then runs to completion.
func TestStartStopsBeforeFirstInstruction(t *testing.T) {
	var out bytes.Buffer
	cmd := exec.Command("/bin/echo", "hello")
	cmd.Stdout = &out
	p, err := Start(cmd)
	if err != nil {
		t.Fatal(err)
	}
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(p.PID()) + "/stat")
	if err != nil {
		t.Fatal(err)
	}
	// Field 3 of /proc/PID/stat is the state; "t" is stopped by a tracer.
	if f := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:])); f[0] != "t" {
		t.Errorf("state %q before Resume, want t", f[0])
	}
	if err := p.Resume(); err != nil {
		t.Fatal(err)
	}
	if err := WaitExit(context.Background(), p.PID()); err != nil {
		t.Fatal(err)
	}
	if state, ended := p.End(time.Minute); ended || ExitCode(state) != 0 {
		t.Errorf("End: %v, ended %v; want exit 0 by itself", state, ended)
	}
	if out.String() != "hello\n" {
		t.Errorf("output %q", out.String())
	}
}

func TestKill(t *testing.T) {
	p, err := Start(exec.Command("/bin/sleep", "60"))
	if err != nil {
		t.Fatal(err)
	}
	pid := p.PID()
	p.Kill()
	if err := WaitExit(context.Background(), pid); err != nil {
		t.Errorf("WaitExit after Kill: %v", err)
	}
}

func TestWaitExit(t *testing.T) {
	cmd := exec.Command("/bin/sleep", "60")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })

	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := WaitExit(ctx, cmd.Process.Pid); err != context.DeadlineExceeded {
		t.Errorf("running process: err = %v, want context.DeadlineExceeded", err)
	}

	done := make(chan error, 1)
	go func() { done <- WaitExit(context.Background(), cmd.Process.Pid) }()
	cmd.Process.Kill()
	if err := <-done; err != nil {
		t.Errorf("killed process: %v", err)
	}
}
