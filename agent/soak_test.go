package agent_test

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/usdtkit/usdtkit/agent"
	"github.com/usdtkit/usdtkit/internal/testutil"
)

// soakDuration is how long TestAgentSoak churns processes; 3 s with
// -short (the race detector's run).
func soakDuration() time.Duration {
	if testing.Short() {
		return 3 * time.Second
	}
	return 25 * time.Second
}

// TestAgentSoak starts and ends target processes one after another for
// soakDuration() while the agent follows them: every hit of every process is
// counted, the sites of the processes gone are released, and the agent's
// heap and open files after the churn are within a bound of what they
// were after the first processes.
func TestAgentSoak(t *testing.T) {
	testutil.RequireBPF(t)
	target := buildTarget(t)
	cfg, err := agent.ParseConfig(fmt.Appendf(nil, `{"scan_interval": "50ms", "programs": [
		{"name": "soak", "source": %q, "targets": [{"binary": %q}]}]}`,
		`usdt::agentt:hit { @hits[comm] = count(); @vals = hist(arg0); @pid[pid] = count(); }`, target))
	if err != nil {
		t.Fatal(err)
	}
	a, err := agent.New(cfg, &agent.Options{Warn: func(err error) { t.Logf("warn: %v", err) }})
	if err != nil {
		t.Fatal(err)
	}
	startAgent(t, a)

	const perProcess = 100
	fired := 0
	// A process ends once the next one has fired: one that exits within
	// microseconds of the attachment of its links may exit before the
	// agent has finished attaching (usdtkit_agent_exited_while_attaching_total),
	// which is not what this test measures.
	var prev *child
	attaches := 0.0
	churn := func() {
		c := startChild(t, target, strconv.Itoa(perProcess), "wait")
		attaches++
		fireWhenAttached(t, a, attaches, c)
		if prev != nil {
			prev.quit(t)
		}
		prev = c
		fired += perProcess
	}
	for range 10 {
		churn()
	}
	heap0, fds0 := heapAndFDs(t)
	n := 10
	for end := time.Now().Add(soakDuration()); time.Now().Before(end); n++ {
		churn()
		if n%20 == 0 {
			// Scrape meanwhile, as Prometheus would.
			series(t, a)
		}
	}
	prev.quit(t)
	want := map[string]float64{
		`usdtkit_soak_hits_total{key0="agtarget"}`:                           float64(fired),
		`usdtkit_soak_vals_count{}`:                                          float64(fired),
		`usdtkit_agent_attached_sites{program="soak"}`:                       0,
		`usdtkit_agent_processes{program="soak"}`:                            0,
		`usdtkit_agent_dropped_series{map="@pid",program="soak"}`:            0,
		`usdtkit_agent_dropped_exited_keys_total{map="@pid",program="soak"}`: 0,
		`usdtkit_agent_exited_while_attaching_total{}`:                       0,
	}
	waitFor(t, "every process counted and released", 10*time.Second, func() (bool, string) {
		return check(series(t, a), want)
	})
	heap1, fds1 := heapAndFDs(t)
	t.Logf("%d processes, %d hits; heap %d → %d bytes, fds %d → %d", n, fired, heap0, heap1, fds0, fds1)
	// Each process leaves one @pid key (kept as a counter): about a
	// hundred bytes each; the rest must not grow with the churn.
	if bound := uint64(4<<20 + 1024*n); heap1 > heap0+bound {
		t.Errorf("heap grew from %d to %d bytes over %d processes (bound %d)", heap0, heap1, n, bound)
	}
	if fds1 > fds0+2 {
		t.Errorf("open files grew from %d to %d", fds0, fds1)
	}
}

// heapAndFDs returns the live heap after a GC and the number of open
// files of this process.
func heapAndFDs(t testing.TB) (uint64, int) {
	t.Helper()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return ms.HeapAlloc, len(fds)
}
