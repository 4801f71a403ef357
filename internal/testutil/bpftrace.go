package testutil

import (
	"bufio"
	"bytes"
	"os/exec"
	"sync"
	"testing"
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
