package agent_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/usdtkit/usdtkit/agent"
	"github.com/usdtkit/usdtkit/internal/testutil"
)

// TestAgentSeriesLimitAndReload: a map of 20 keys under a limit of 5
// exports 5 series and reports 15 dropped; Reload with another program
// drops the old series and attaches the new program to the running
// process.
func TestAgentSeriesLimitAndReload(t *testing.T) {
	testutil.RequireBPF(t)
	target := buildTarget(t)
	config := func(src string) *agent.Config {
		cfg, err := agent.ParseConfig(fmt.Appendf(nil, `{"scan_interval": "50ms", "programs": [
			{"name": "lim", "source": %q, "targets": [{"binary": %q}],
			 "maps": {"@k": {"series_limit": 5, "labels": ["value"]}}}]}`, src, target))
		if err != nil {
			t.Fatal(err)
		}
		return cfg
	}
	a, err := agent.New(config(`usdt::agentt:hit { @k[arg0] = count(); }`), nil)
	if err != nil {
		t.Fatal(err)
	}
	startAgent(t, a)
	c := startChild(t, target, "20", "wait")
	fireWhenAttached(t, a, 1, c)
	waitFor(t, "limited", 10*time.Second, func() (bool, string) {
		s := series(t, a)
		n := 0
		for k, v := range s {
			if strings.HasPrefix(k, "usdtkit_lim_k_total{") {
				n++
				if v != 1 {
					return false, fmt.Sprintf("%s = %v, want 1", k, v)
				}
			}
		}
		d := s[`usdtkit_agent_dropped_series{map="@k",program="lim"}`]
		return n == 5 && d == 15, fmt.Sprintf("%d series, %v dropped; want 5, 15", n, d)
	})

	if err := a.Reload(config(`usdt::agentt:hit { @total = count(); }`)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "reloaded and attached again", 10*time.Second, func() (bool, string) {
		s := series(t, a)
		for k := range s {
			if strings.HasPrefix(k, "usdtkit_lim_k_total") {
				return false, "old series " + k
			}
		}
		v, ok := s[`usdtkit_lim_total_total{}`]
		return ok && v == 0 && s[`usdtkit_agent_processes{program="lim"}`] == 1,
			fmt.Sprintf("total %v (present %v), processes %v", v, ok, s[`usdtkit_agent_processes{program="lim"}`])
	})
	if err := a.Reload(nil); err == nil {
		t.Error("Reload(nil): no error")
	}
}

// TestAgentDroppedSeries: under a limit of 5, a map keyed by PID and
// argument holds 20 keys of a first process, then 30 more of a second
// (45 refused: more than the limit, over many collections), then the
// processes exit one after the other. usdtkit_agent_dropped_series is at
// each collection exactly the number of live keys not exported,
// usdtkit_agent_dropped_exited_keys_total the refused keys of the
// processes gone, and once the first process is gone its folded keys
// give their places to the live second's (usdtkit_agent_evicted_series_total).
func TestAgentDroppedSeries(t *testing.T) {
	testutil.RequireBPF(t)
	target := buildTarget(t)
	a := newAgent(t, fmt.Appendf(nil, `{"scan_interval": "50ms", "programs": [
		{"name": "drop", "source": %q, "targets": [{"binary": %q}],
		 "maps": {"@k": {"series_limit": 5, "labels": ["pid", "value"]}}}]}`,
		`usdt::agentt:hit { @k[pid, arg0] = count(); }`, target))
	startAgent(t, a)
	const (
		dropped = `usdtkit_agent_dropped_series{map="@k",program="drop"}`
		atExit  = `usdtkit_agent_dropped_exited_keys_total{map="@k",program="drop"}`
		evicted = `usdtkit_agent_evicted_series_total{map="@k",program="drop"}`
		procs   = `usdtkit_agent_processes{program="drop"}`
	)
	// state checks one collection: the exported series are 5, each 1,
	// all of process first (the first process, then the second); the
	// agent's figures are want's.
	var first int
	state := func(want map[string]float64) (bool, string) {
		s := series(t, a)
		n := 0
		for k, v := range s {
			if !strings.HasPrefix(k, "usdtkit_drop_k_total{") {
				continue
			}
			n++
			if v != 1 || !strings.Contains(k, fmt.Sprintf(`pid="%d"`, first)) {
				return false, fmt.Sprintf("%s = %v, want 1 and pid %d", k, v, first)
			}
		}
		ok, msg := check(s, want)
		return ok && n == 5, fmt.Sprintf("%d series (want 5); %s", n, msg)
	}
	// steady checks that further collections give the same figures: a
	// collection does not count again what the previous ones counted.
	steady := func(what string, want map[string]float64) {
		t.Helper()
		waitFor(t, what, 10*time.Second, func() (bool, string) { return state(want) })
		for i := range 3 {
			if ok, msg := state(want); !ok {
				t.Fatalf("%s, collection %d after: %s", what, i+1, msg)
			}
		}
	}

	c1 := startChild(t, target, "20", "wait")
	first = c1.cmd.Process.Pid
	fireWhenAttached(t, a, 1, c1)
	steady("first process", map[string]float64{dropped: 15, atExit: 0, evicted: 0, procs: 1})
	c2 := startChild(t, target, "30", "wait")
	fireWhenAttached(t, a, 2, c2)
	steady("second process", map[string]float64{dropped: 45, atExit: 0, evicted: 0, procs: 2})
	c1.quit(t)
	first = c2.cmd.Process.Pid
	steady("first process gone", map[string]float64{dropped: 25, atExit: 15, evicted: 5, procs: 1})
	c2.quit(t)
	steady("both gone", map[string]float64{dropped: 0, atExit: 40, evicted: 5, procs: 0})
}

// TestAgentMaxProcesses: a program selecting processes by name, with
// max_processes 2, runs in 2 of 4 such processes and counts the other 2
// in usdtkit_agent_refused_processes_total, once each however many scans
// see them; when a traced one ends, a refused one is traced in its
// place, and the count stays.
func TestAgentMaxProcesses(t *testing.T) {
	testutil.RequireBPF(t)
	target, comm := uniqueComm(t, buildTarget(t))
	a := newAgent(t, fmt.Appendf(nil, `{"scan_interval": "50ms", "programs": [
		{"name": "maxp", "source": "usdt::agentt:hit { @ = count(); }", "targets": [{"comm": %q}], "max_processes": 2}]}`, comm))
	startAgent(t, a)
	var cs []*child
	for range 4 {
		cs = append(cs, startChild(t, target, "1", "wait"))
	}
	const procs, refused = `usdtkit_agent_processes{program="maxp"}`, `usdtkit_agent_refused_processes_total{program="maxp"}`
	waitFor(t, "2 traced, 2 refused", 10*time.Second, func() (bool, string) {
		s := series(t, a)
		return s[procs] == 2 && s[refused] == 2, fmt.Sprintf("%v traced, %v refused", s[procs], s[refused])
	})
	time.Sleep(300 * time.Millisecond) // several scans
	if s := series(t, a); s[procs] != 2 || s[refused] != 2 {
		t.Fatalf("after more scans: %v traced, %v refused; want 2, 2", s[procs], s[refused])
	}
	// A child says "ready" once traced (its probe's semaphore is up).
	// End the traced ones one at a time: each end frees a place.
	ready := make([]bool, len(cs))
	for ended := 1; ended <= len(cs); ended++ {
		next := -1
		waitFor(t, "a traced process", 10*time.Second, func() (bool, string) {
			for i, c := range cs {
				if c == nil {
					continue
				}
				select {
				case l := <-c.lines:
					if l != "ready" {
						t.Fatalf("pid %d: %q, want ready", c.cmd.Process.Pid, l)
					}
					ready[i] = true
				default:
				}
				if ready[i] && next < 0 {
					next = i
				}
			}
			return next >= 0, "none ready"
		})
		c := cs[next]
		cs[next] = nil
		fmt.Fprintln(c.stdin, "go")
		c.expect(t, "fired", 30*time.Second)
		c.quit(t)
		want := float64(min(2, len(cs)-ended))
		waitFor(t, fmt.Sprintf("%v traced after %d ended", want, ended), 10*time.Second, func() (bool, string) {
			s := series(t, a)
			return s[procs] == want && s[refused] == 2, fmt.Sprintf("%v traced, %v refused", s[procs], s[refused])
		})
	}
	if s := series(t, a); s[`usdtkit_maxp_map_total{}`] != 4 {
		t.Errorf("count %v, want 4: every process fired once while traced", s[`usdtkit_maxp_map_total{}`])
	}
	if _, err := agent.ParseConfig([]byte(`{"programs": [{"name": "n", "source": "usdt::a:b { @ = count(); }", "targets": [{"comm": "x"}], "max_processes": -1}]}`)); err == nil || !strings.Contains(err.Error(), "max_processes") {
		t.Errorf("max_processes -1: %v, want an error naming it", err)
	}
}

// TestAgentAttachesWhileScraped: 12 clients scraping /metrics without
// pause, over 10 traced processes of 1 000 keys each, do not keep a new
// process from being traced: collection reads the maps outside the lock
// that attaching takes (before, 12 curl loops kept a new process
// unattached for over 10 s, and its hits were lost). The time is measured
// once scrapes are being served. The bound is loose (a loaded CI host);
// the log has the time beside the time without scrapers.
func TestAgentAttachesWhileScraped(t *testing.T) {
	testutil.RequireBPF(t)
	target, comm := uniqueComm(t, buildTarget(t))
	a := newAgent(t, fmt.Appendf(nil, `{"scan_interval": "50ms", "programs": [
		{"name": "scr", "source": "usdt::agentt:hit { @k[arg0] = count(); }", "targets": [{"comm": %q}]}]}`, comm))
	addr := startAgent(t, a)
	for range 10 {
		c := startChild(t, target, "1000", "wait")
		c.expect(t, "ready", 30*time.Second)
		fmt.Fprintln(c.stdin, "go")
		c.expect(t, "fired", 30*time.Second)
	}
	attachTime := func() time.Duration {
		start := time.Now()
		c := startChild(t, target, "1", "wait")
		c.expect(t, "ready", 30*time.Second)
		return time.Since(start)
	}
	quiet := attachTime()

	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var scrapes atomic.Int64
	for range 12 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				req, _ := http.NewRequestWithContext(ctx, "GET", "http://"+addr+"/metrics", nil)
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					continue
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode == http.StatusOK {
					scrapes.Add(1)
				}
			}
		}()
	}
	t.Cleanup(func() { cancel(); wg.Wait() })
	// Measure once the scrapers are served: under the race detector on a
	// loaded host the first collections can take over a second.
	waitFor(t, "a scrape served", time.Minute, func() (bool, string) {
		return scrapes.Load() > 0, fmt.Sprintf("%d scrapes served", scrapes.Load())
	})
	busy := attachTime()
	cancel()
	wg.Wait()
	t.Logf("a new process traced in %v while 12 clients scraped (%d scrapes served), %v without", busy, scrapes.Load(), quiet)
	if scrapes.Load() == 0 {
		t.Fatal("no scrape served")
	}
	if busy > 10*time.Second {
		t.Errorf("a new process traced only after %v while scraped", busy)
	}
}
