package bench

import (
	"bufio"
	"context"
	"fmt"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/usdtkit/usdtkit/agent"
	"github.com/usdtkit/usdtkit/internal/testutil"
)

// runAgent runs an agent of one program on target's processes until the
// benchmark ends.
func runAgent(b *testing.B, name, src, target, scan string, opts *agent.Options) *agent.Agent {
	b.Helper()
	cfg, err := agent.ParseConfig(fmt.Appendf(nil, `{"scan_interval": %q, "programs": [
		{"name": %q, "source": %q, "targets": [{"binary": %q}], "series_limit": 20000}]}`, scan, name, src, target))
	if err != nil {
		b.Fatal(err)
	}
	a, err := agent.New(cfg, opts)
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	b.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			b.Error(err)
		}
	})
	return a
}

// scrape returns the agent's /metrics text.
func scrape(b *testing.B, a *agent.Agent) string {
	rec := httptest.NewRecorder()
	a.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	if rec.Code != 200 {
		b.Fatalf("scrape: %d %s", rec.Code, rec.Body)
	}
	return rec.Body.String()
}

// BenchmarkAgentExecToFirstEvent measures the time from a new process's
// exec to its first counted event: the agent (scanning /proc every 1 s
// or 100 ms, or at the process's exec event) must find the process,
// compile the program against it and attach; the process (agent/testdata/agtarget.c) fires as soon as its
// probe's semaphore is raised, polling it every millisecond.
func BenchmarkAgentExecToFirstEvent(b *testing.B) {
	testutil.RequireBPF(b)
	gcc := testutil.RequireTool(b, "gcc")
	target := filepath.Join(b.TempDir(), "agtarget")
	if out, err := exec.Command(gcc, "-O1", "-o", target, "../agent/testdata/agtarget.c").CombinedOutput(); err != nil {
		b.Fatalf("gcc: %v\n%s", err, out)
	}
	for _, tc := range []struct {
		scan  string
		execs bool
	}{{"1s", false}, {"100ms", false}, {"1s", true}} {
		b.Run(fmt.Sprintf("scan=%s/exec-events=%v", tc.scan, tc.execs), func(b *testing.B) {
			scan := tc.scan
			a := runAgent(b, "first", `usdt::agentt:hit { @ = count(); }`, target, scan, &agent.Options{NoExecEvents: !tc.execs})
			interval, err := time.ParseDuration(scan)
			if err != nil {
				b.Fatal(err)
			}
			var total time.Duration
			for i := 0; b.Loop(); i++ {
				// The agent rescans at once when a process it traced
				// exits: wait until it has, then start the next process
				// at a phase of the scan period spread over the
				// iterations, as processes start at any time.
				b.StopTimer()
				for metricValue(b, scrape(b, a), `usdtkit_agent_processes{program="first"}`) != 0 {
					time.Sleep(time.Millisecond)
				}
				time.Sleep(time.Duration(float64(interval) * float64(i%10) / 10))
				b.StartTimer()
				cmd := exec.Command(target, "1")
				stdin, err := cmd.StdinPipe()
				if err != nil {
					b.Fatal(err)
				}
				out, err := cmd.StdoutPipe()
				if err != nil {
					b.Fatal(err)
				}
				start := time.Now()
				if err := cmd.Start(); err != nil {
					b.Fatal(err)
				}
				line, err := bufio.NewReader(out).ReadString('\n')
				total += time.Since(start)
				stdin.Close()
				cmd.Wait()
				if err != nil || line != "fired\n" {
					b.Fatalf("target: %q, %v", line, err)
				}
			}
			b.ReportMetric(float64(total.Milliseconds())/float64(b.N), "ms-exec-to-event")
			checkCounted(b, a)
		})
	}
}

// checkCounted waits until the agent has attached to a target and
// counted a hit. The target fires as soon as the kernel raises its
// probe's semaphore, which the kernel does just before it writes the
// breakpoint, and the agent updates its metrics once the attachment is
// done: a scrape right after the last target ends may come before
// either. A target attached whose hits all came before the breakpoint
// is logged, not failed: that is the kernel's order, not the agent's.
func checkCounted(b *testing.B, a *agent.Agent) {
	var m string
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		m = scrape(b, a)
		if strings.Contains(m, "usdtkit_first_map_total ") {
			return
		}
	}
	if metricValue(b, m, "usdtkit_agent_attaches_total") == 0 {
		b.Fatalf("the agent attached to no target in 30 s:\n%s", m)
	}
	b.Logf("attached, but every hit came before the kernel wrote the breakpoint")
}

// BenchmarkAgentEvents fires tracee's bench probe in loops of 1 000 000
// while the agent counts them and is scraped once per loop, and reports
// the agent's own CPU time (scans, its tracer's polling, the scrape) as a
// share of one CPU, the event rate reached, and that share per 100 000
// events/s. The BPF program runs in the target's context: its cost shows
// in the rate, not in the agent's CPU.
func BenchmarkAgentEvents(b *testing.B) {
	testutil.RequireBPF(b)
	exe := testutil.BuildTracee(b, "-O2")
	a := runAgent(b, "ev", `usdt::tracee:bench { @n = count(); } usdt::tracee:sem { @s = count(); }`, exe, "1s", nil)
	tr := testutil.StartTracee(b, exe)
	tr.WaitSem(b, func() bool { return true })
	const perLoop = 1000000
	cpu0, start := selfCPU(b), time.Now()
	for b.Loop() {
		tr.Do(b, "loop "+strconv.Itoa(perLoop))
		scrape(b, a)
	}
	wall, cpu := time.Since(start), selfCPU(b)-cpu0
	rate := float64(b.N*perLoop) / wall.Seconds()
	share := 100 * cpu.Seconds() / wall.Seconds()
	b.ReportMetric(rate, "events/s")
	b.ReportMetric(share, "agent-cpu-%")
	b.ReportMetric(share/(rate/100000), "agent-cpu-%-per-100k-events/s")
	if have := metricValue(b, scrape(b, a), "usdtkit_ev_n_total"); have != float64(b.N*perLoop) {
		b.Errorf("counted %v, want %d", have, b.N*perLoop)
	}
}

// BenchmarkAgentScrape10kSeries scrapes an agent whose map has 10 000
// keys (tracee's bench probe fired with k = 0…9999, counted by k): one
// GET /metrics, reading the map from the kernel and encoding the text.
func BenchmarkAgentScrape10kSeries(b *testing.B) {
	testutil.RequireBPF(b)
	exe := testutil.BuildTracee(b, "-O2")
	a := runAgent(b, "scrape", `usdt::tracee:bench { @k[arg0] = count(); } usdt::tracee:sem { @s = count(); }`, exe, "1s", nil)
	tr := testutil.StartTracee(b, exe)
	tr.WaitSem(b, func() bool { return true })
	// The semaphore rises when the sem probe's uprobe is registered,
	// which may be before the bench probe's: fire once the agent counts
	// both sites attached.
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(scrape(b, a), `usdtkit_agent_attached_sites{program="scrape"} 2`) {
		if time.Now().After(deadline) {
			b.Fatalf("the agent did not attach both sites:\n%s", scrape(b, a))
		}
		time.Sleep(10 * time.Millisecond)
	}
	tr.Do(b, "loop 10000")
	if n := strings.Count(scrape(b, a), "usdtkit_scrape_k_total{"); n != 10000 {
		b.Fatalf("%d series, want 10000", n)
	}
	var size int
	for b.Loop() {
		size = len(scrape(b, a))
	}
	b.ReportMetric(float64(size), "bytes/scrape")
}

// metricValue returns the value of the series named exactly series in
// the text exposition m.
func metricValue(b *testing.B, m, series string) float64 {
	for _, l := range strings.Split(m, "\n") {
		if v, ok := strings.CutPrefix(l, series+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				b.Fatal(err)
			}
			return f
		}
	}
	b.Fatalf("no %s in:\n%s", series, m)
	return 0
}
