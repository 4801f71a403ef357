package agent_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/usdtkit/usdtkit/agent"
	"github.com/usdtkit/usdtkit/internal/testutil"
)

// buildTarget compiles testdata/agtarget.c.
func buildTarget(t testing.TB) string {
	t.Helper()
	return buildC(t, "agtarget")
}

// buildC compiles testdata/NAME.c (gcc -O1, with sys/sdt.h) into a
// temporary directory and returns the executable's path.
func buildC(t testing.TB, name string) string {
	t.Helper()
	gcc := testutil.RequireTool(t, "gcc")
	testutil.RequireFile(t, "/usr/include/x86_64-linux-gnu/sys/sdt.h")
	out := filepath.Join(t.TempDir(), name)
	if b, err := exec.Command(gcc, "-O1", "-o", out, "testdata/"+name+".c").CombinedOutput(); err != nil {
		t.Fatalf("gcc: %v\n%s", err, b)
	}
	return out
}

// child is a running target: its stdin and its stdout's lines.
type child struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	lines chan string
}

// startChild runs exe with args; it is killed when the test ends.
func startChild(t testing.TB, exe string, args ...string) *child {
	t.Helper()
	return startCmd(t, exec.Command(exe, args...))
}

// startCmd runs cmd (not started) as a child; it is killed when the test
// ends.
func startCmd(t testing.TB, cmd *exec.Cmd) *child {
	t.Helper()
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c := &child{cmd: cmd, stdin: stdin, lines: make(chan string, 4)}
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			c.lines <- sc.Text()
		}
		close(c.lines)
	}()
	t.Cleanup(func() {
		stdin.Close()
		cmd.Process.Kill()
		if cmd.ProcessState == nil {
			cmd.Wait()
		}
	})
	return c
}

// expect waits for the child's next line, which must be want.
func (c *child) expect(t testing.TB, want string, timeout time.Duration) {
	t.Helper()
	select {
	case l, ok := <-c.lines:
		if !ok || l != want {
			t.Fatalf("pid %d: have line %q (open %v), want %q", c.cmd.Process.Pid, l, ok, want)
		}
	case <-time.After(timeout):
		t.Fatalf("pid %d: no %q within %v (not attached?)", c.cmd.Process.Pid, want, timeout)
	}
}

// fireWhenAttached waits for the children's "ready" (their probe's
// semaphore is raised), then until the agent has recorded at least
// attaches attachments (trace.Start returned: every link is attached),
// then tells them to fire and waits for their "fired".
func fireWhenAttached(t testing.TB, a *agent.Agent, attaches float64, cs ...*child) {
	t.Helper()
	for _, c := range cs {
		c.expect(t, "ready", 30*time.Second)
	}
	waitFor(t, "attached", 10*time.Second, func() (bool, string) {
		v := series(t, a)[`usdtkit_agent_attaches_total{}`]
		return v >= attaches, fmt.Sprintf("%v attaches, want %v", v, attaches)
	})
	for _, c := range cs {
		fmt.Fprintln(c.stdin, "go")
	}
	for _, c := range cs {
		c.expect(t, "fired", 30*time.Second)
	}
}

// quit closes the child's stdin and waits for its exit.
func (c *child) quit(t testing.TB) {
	t.Helper()
	c.stdin.Close()
	if err := c.cmd.Wait(); err != nil {
		t.Fatalf("pid %d: %v", c.cmd.Process.Pid, err)
	}
}

// startAgent serves a on a loopback port until the test ends and returns
// the address.
func startAgent(t testing.TB, a *agent.Agent) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
	})
	return ln.Addr().String()
}

// series gathers a's metrics as "name{l="v",...}" → value; a histogram
// gives NAME_bucket{…,le="B"}, NAME_count{…}; a summary NAME_count and
// NAME_sum.
func series(t testing.TB, a *agent.Agent) map[string]float64 {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(a)
	fams, err := reg.Gather()
	if err != nil {
		t.Fatalf("gather: %v", err)
	}
	out := map[string]float64{}
	for _, f := range fams {
		for _, m := range f.GetMetric() {
			var ls []string
			for _, l := range m.GetLabel() {
				ls = append(ls, fmt.Sprintf("%s=%q", l.GetName(), l.GetValue()))
			}
			name := func(suffix string, extra ...string) string {
				all := append(append([]string(nil), ls...), extra...)
				sort.Strings(all)
				return f.GetName() + suffix + "{" + strings.Join(all, ",") + "}"
			}
			switch f.GetType() {
			case dto.MetricType_COUNTER:
				out[name("")] = m.GetCounter().GetValue()
			case dto.MetricType_GAUGE:
				out[name("")] = m.GetGauge().GetValue()
			case dto.MetricType_SUMMARY:
				out[name("_count")] = float64(m.GetSummary().GetSampleCount())
				out[name("_sum")] = m.GetSummary().GetSampleSum()
			case dto.MetricType_HISTOGRAM:
				h := m.GetHistogram()
				out[name("_count")] = float64(h.GetSampleCount())
				for _, b := range h.GetBucket() {
					out[name("_bucket", fmt.Sprintf("le=%q", strconv.FormatFloat(b.GetUpperBound(), 'g', -1, 64)))] = float64(b.GetCumulativeCount())
				}
			}
		}
	}
	return out
}

// waitFor polls cond until it holds, failing the test after timeout.
// There is no event to wait on: the agent scans, Prometheus scrapes, on
// their own clocks.
func waitFor(t testing.TB, what string, timeout time.Duration, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		ok, state := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v; last: %s", what, timeout, state)
		}
		<-tick.C
	}
}

// newAgent parses config and makes an agent of it, failing the test on
// an error.
func newAgent(t testing.TB, config []byte) *agent.Agent {
	t.Helper()
	cfg, err := agent.ParseConfig(config)
	if err != nil {
		t.Fatal(err)
	}
	a, err := agent.New(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// uniqueComm copies the executable at path to a name no other test run
// on the machine uses ("ag" and this process's PID, within comm's 15
// bytes) and returns the copy's path and name: a comm target of it
// selects this test's processes only.
func uniqueComm(t testing.TB, path string) (string, string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	name := fmt.Sprintf("ag%d", os.Getpid())
	out := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(out, b, 0o755); err != nil {
		t.Fatal(err)
	}
	return out, name
}
