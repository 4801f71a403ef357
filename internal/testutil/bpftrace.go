package testutil

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"sync"
	"testing"
	"time"
)

// Bpftrace is a running bpftrace started by StartBpftrace.
type Bpftrace struct {
	Cmd *exec.Cmd
	// Out reads its stdout after the "ready" line.
	Out    *bufio.Scanner
	stderr lockedBuffer
}

// Stderr returns what bpftrace wrote to stderr so far.
func (b *Bpftrace) Stderr() string { return b.stderr.String() }

// StartBpftrace runs bpftrace with args, whose program must print "ready"
// from BEGIN (BEGIN runs once every probe is attached), and returns once
// it has. It mounts tracefs if needed (bpftrace 0.17 enables semaphores
// through it) and kills bpftrace when the test ends.
func StartBpftrace(tb testing.TB, args ...string) *Bpftrace {
	tb.Helper()
	RequireTracefs(tb)
	DefaultSIGINTForChildren()
	b := &Bpftrace{Cmd: exec.Command(RequireTool(tb, "bpftrace"), args...)}
	stdout, err := b.Cmd.StdoutPipe()
	if err != nil {
		tb.Fatal(err)
	}
	b.Cmd.Stderr = &b.stderr
	if err := b.Cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		b.Cmd.Process.Kill()
		b.Cmd.Wait()
	})
	b.Out = bufio.NewScanner(stdout)
	for b.Out.Scan() && b.Out.Text() != "ready" {
	}
	if b.Out.Text() != "ready" {
		tb.Fatalf("bpftrace did not start: %v %s", b.Out.Err(), b.Stderr())
	}
	return b
}

// lockedBuffer is a bytes.Buffer safe for a writer and a reader.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// RunBpftrace runs bpftrace with args to completion and returns its
// stdout. The program must end by itself (exit(), -l, -d). bpftrace 0.17
// can hang after its last output while it tears down (an orphan spinning
// for over an hour was seen on a CI host), so each try is bounded: a try
// that times out is killed and run once more before the test fails. A
// non-zero exit fails at once, with stderr in the error.
func RunBpftrace(tb testing.TB, args ...string) ([]byte, error) {
	tb.Helper()
	bin := RequireTool(tb, "bpftrace")
	const tries, limit = 2, 2 * time.Minute
	var err error
	for try := 1; try <= tries; try++ {
		ctx, cancel := context.WithTimeout(context.Background(), limit)
		cmd := exec.CommandContext(ctx, bin, args...)
		cmd.WaitDelay = 5 * time.Second
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err = cmd.Run()
		timedOut := ctx.Err() != nil
		cancel()
		if err == nil {
			return stdout.Bytes(), nil
		}
		err = fmt.Errorf("bpftrace %q: %w\n%s", args, err, stderr.Bytes())
		if !timedOut {
			return stdout.Bytes(), err
		}
		tb.Logf("try %d of %d: bpftrace did not end within %v; killed", try, tries, limit)
	}
	return nil, err
}
