package bench

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/usdtkit/usdtkit/agent"
	"github.com/usdtkit/usdtkit/internal/testutil"
)

// soakDuration is how long BenchmarkAgentSoak churns processes:
// USDTKIT_SOAK (a time.ParseDuration string, e.g. "10m"), else 30 s.
func soakDuration(b *testing.B) time.Duration {
	s := os.Getenv("USDTKIT_SOAK")
	if s == "" {
		return 30 * time.Second
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		b.Fatalf("USDTKIT_SOAK=%q: want a positive duration (%v)", s, err)
	}
	return d
}

// soakChild is one target process of the soak.
type soakChild struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	out   *bufio.Reader
}

func (c *soakChild) expect(b *testing.B, want string) {
	b.Helper()
	l, err := c.out.ReadString('\n')
	if err != nil || l != want+"\n" {
		b.Fatalf("pid %d: line %q (%v), want %q", c.cmd.Process.Pid, l, err, want)
	}
}

func (c *soakChild) quit(b *testing.B) {
	b.Helper()
	c.stdin.Close()
	if err := c.cmd.Wait(); err != nil {
		b.Fatalf("pid %d: %v", c.cmd.Process.Pid, err)
	}
}

// soakSample is the memory of this process (the agent and the
// benchmark's own small state) at one time.
type soakSample struct {
	at   time.Duration // since the baseline
	heap uint64        // live heap after a GC, bytes
	rss  uint64        // resident set, bytes
	fds  int
}

func takeSample(b *testing.B, since time.Time) soakSample {
	b.Helper()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		b.Fatal(err)
	}
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		b.Fatal(err)
	}
	var rss uint64
	for _, l := range strings.Split(string(status), "\n") {
		if v, ok := strings.CutPrefix(l, "VmRSS:"); ok {
			kb, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err != nil {
				b.Fatalf("VmRSS %q: %v", v, err)
			}
			rss = kb << 10
		}
	}
	return soakSample{at: time.Since(since), heap: ms.HeapAlloc, rss: rss, fds: len(fds)}
}

// slopeMBPerMin is the least-squares slope of RSS over time.
func slopeMBPerMin(ss []soakSample) float64 {
	if len(ss) < 2 {
		return 0
	}
	var sx, sy, sxx, sxy float64
	for _, s := range ss {
		x, y := s.at.Minutes(), float64(s.rss)/(1<<20)
		sx, sy, sxx, sxy = sx+x, sy+y, sxx+x*x, sxy+x*y
	}
	n := float64(len(ss))
	den := n*sxx - sx*sx
	if den == 0 {
		return 0
	}
	return (n*sxy - sx*sy) / den
}

// BenchmarkAgentSoak is the agent's soak: for USDTKIT_SOAK (default 30 s;
// the soak is USDTKIT_SOAK=10m) it starts target processes one
// after another (agent/testdata/agtarget.c, 100 hits each, each ending
// once the next has fired), the agent following them by their exec
// events and scans and being scraped meanwhile. It reports the heap and
// RSS at the start (after 10 processes), middle and end, the open files
// and attached sites at the end and the slope of RSS in MB per minute
// (least squares over a sample every 5 s), and fails if a hit is not
// counted, the sites, processes or open files do not return to their
// baseline, or the live heap grows by more than 4 MiB. The per-PID map
// is limited to 200 series, so it cannot grow with the churn: the key of
// each new process takes the place of the key of the process gone
// longest (usdtkit_agent_evicted_series_total, evicted-pid-keys), and a
// key refused all the same is counted as its process exits
// (usdtkit_agent_dropped_exited_keys_total, dropped-pid-keys).
func BenchmarkAgentSoak(b *testing.B) {
	testutil.RequireBPF(b)
	gcc := testutil.RequireTool(b, "gcc")
	testutil.RequireFile(b, "/usr/include/x86_64-linux-gnu/sys/sdt.h")
	target := filepath.Join(b.TempDir(), "agtarget")
	if out, err := exec.Command(gcc, "-O1", "-o", target, "../agent/testdata/agtarget.c").CombinedOutput(); err != nil {
		b.Fatalf("gcc: %v\n%s", err, out)
	}
	dur := soakDuration(b)
	for b.Loop() {
		soak(b, target, dur)
	}
}

func soak(b *testing.B, target string, dur time.Duration) {
	a, err := agent.New(mustSoakConfig(b, target), nil)
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			b.Error(err)
		}
	}()
	const perProcess = 100
	fired, attaches := 0, 0.0
	// prev and cur are the live children, killed if the benchmark fails;
	// one cleanup for all of them, so that the churn keeps no state of
	// the processes gone (a cleanup each would grow the heap measured).
	var prev, cur *soakChild
	defer func() {
		for _, c := range []*soakChild{prev, cur} {
			if c != nil && c.cmd.ProcessState == nil {
				c.stdin.Close()
				c.cmd.Process.Kill()
				c.cmd.Wait()
			}
		}
	}()
	churn := func() {
		cmd := exec.Command(target, strconv.Itoa(perProcess), "wait")
		stdin, err := cmd.StdinPipe()
		if err != nil {
			b.Fatal(err)
		}
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			b.Fatal(err)
		}
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		c := &soakChild{cmd: cmd, stdin: stdin, out: bufio.NewReader(stdout)}
		cur = c
		attaches++
		c.expect(b, "ready")
		// The semaphore is raised just before the breakpoints are
		// written: fire once the agent has finished attaching.
		deadline := time.Now().Add(10 * time.Second)
		for metricValue(b, scrape(b, a), "usdtkit_agent_attaches_total") < attaches {
			if time.Now().After(deadline) {
				b.Fatalf("process %d not attached within 10s", cmd.Process.Pid)
			}
			time.Sleep(5 * time.Millisecond)
		}
		fmt.Fprintln(stdin, "go")
		c.expect(b, "fired")
		if prev != nil {
			prev.quit(b)
		}
		prev = c
		fired += perProcess
	}
	for range 10 {
		churn()
	}
	start := time.Now()
	base := takeSample(b, start)
	samples := []soakSample{base}
	var mid soakSample
	n := 10
	for end, next := start.Add(dur), start.Add(5*time.Second); time.Now().Before(end); n++ {
		churn()
		if now := time.Now(); now.After(next) {
			s := takeSample(b, start)
			samples = append(samples, s)
			if mid.at == 0 && s.at >= dur/2 {
				mid = s
			}
			next = now.Add(5 * time.Second)
		}
	}
	prev.quit(b)
	want := map[string]float64{
		`usdtkit_soak_hits_total{key0="agtarget"}`:     float64(fired),
		`usdtkit_soak_vals_count`:                      float64(fired),
		`usdtkit_agent_attached_sites{program="soak"}`: 0,
		`usdtkit_agent_processes{program="soak"}`:      0,
		`usdtkit_agent_exited_while_attaching_total`:   0,
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		m, bad := scrape(b, a), ""
		for k, v := range want {
			if have := metricValue(b, m, k); have != v {
				bad += fmt.Sprintf(" %s=%v (want %v)", k, have, v)
			}
		}
		if bad == "" {
			break
		}
		if time.Now().After(deadline) {
			b.Fatalf("after %d processes:%s", n, bad)
		}
		time.Sleep(20 * time.Millisecond)
	}
	last := takeSample(b, start)
	samples = append(samples, last)
	if mid.at == 0 {
		mid = last
	}
	m := scrape(b, a)
	sites := metricValue(b, m, `usdtkit_agent_attached_sites{program="soak"}`)
	dropped := metricValue(b, m, `usdtkit_agent_dropped_exited_keys_total{map="@pid",program="soak"}`)
	evicted := metricValue(b, m, `usdtkit_agent_evicted_series_total{map="@pid",program="soak"}`)
	const mb = 1 << 20
	b.ReportMetric(float64(n), "processes")
	b.ReportMetric(float64(fired), "hits")
	b.ReportMetric(float64(base.heap)/mb, "heap-start-MB")
	b.ReportMetric(float64(mid.heap)/mb, "heap-mid-MB")
	b.ReportMetric(float64(last.heap)/mb, "heap-end-MB")
	b.ReportMetric(float64(base.rss)/mb, "rss-start-MB")
	b.ReportMetric(float64(mid.rss)/mb, "rss-mid-MB")
	b.ReportMetric(float64(last.rss)/mb, "rss-end-MB")
	b.ReportMetric(slopeMBPerMin(samples), "rss-MB/min")
	b.ReportMetric(float64(base.fds), "fds-start")
	b.ReportMetric(float64(last.fds), "fds-end")
	b.ReportMetric(sites, "sites-end")
	b.ReportMetric(dropped, "dropped-pid-keys")
	b.ReportMetric(evicted, "evicted-pid-keys")
	b.Logf("%v: %d processes, %d hits; heap %.1f → %.1f → %.1f MB, rss %.1f → %.1f → %.1f MB (%.3f MB/min over %d samples), fds %d → %d, sites %v, @pid keys of exited processes dropped %v, evicted %v",
		time.Since(start).Round(time.Second), n, fired, float64(base.heap)/mb, float64(mid.heap)/mb, float64(last.heap)/mb,
		float64(base.rss)/mb, float64(mid.rss)/mb, float64(last.rss)/mb, slopeMBPerMin(samples), len(samples), base.fds, last.fds, sites, dropped, evicted)
	if last.fds > base.fds+2 {
		b.Errorf("open files grew from %d to %d", base.fds, last.fds)
	}
	if last.heap > base.heap+4<<20 {
		b.Errorf("live heap grew from %d to %d bytes over %d processes (bound 4 MiB)", base.heap, last.heap, n)
	}
}

// mustSoakConfig is the soak's program with a series limit of 200 on
// the per-PID map.
func mustSoakConfig(b *testing.B, target string) *agent.Config {
	b.Helper()
	cfg, err := agent.ParseConfig(fmt.Appendf(nil, `{"scan_interval": "50ms", "programs": [
		{"name": "soak", "source": %q, "targets": [{"binary": %q}],
		 "maps": {"@pid": {"series_limit": 200}}}]}`,
		`usdt::agentt:hit { @hits[comm] = count(); @vals = hist(arg0); @pid[pid] = count(); }`, target))
	if err != nil {
		b.Fatal(err)
	}
	return cfg
}
