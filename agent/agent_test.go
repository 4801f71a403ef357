package agent_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/usdtkit/usdtkit/agent"
	"github.com/usdtkit/usdtkit/internal/testutil"
)

const targetProgram = `usdt::agentt:hit { @hits[comm] = count(); @vals = hist(arg0); @lin = lhist(arg0, 0, 100, 10); @avg = avg(arg0); }`

// testConfig traces agtarget by its path and the provider by its comm,
// provComm: a process the program matches nothing in until it maps its
// provider.
func testConfig(t testing.TB, target, provComm string) *agent.Config {
	t.Helper()
	raw := fmt.Sprintf(`{
		"scan_interval": "100ms",
		"programs": [
			{"name": "c", "source": %q, "targets": [{"binary": %q}],
			 "const_labels": {"test": "agent"},
			 "maps": {"@hits": {"labels": ["comm"]}}},
			{"name": "dyn", "source": "usdt::agprov:hit { @dyn = count(); @dynh = hist(arg0); }",
			 "targets": [{"comm": %q}]}
		]}`, targetProgram, target, provComm)
	cfg, err := agent.ParseConfig([]byte(raw))
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// want is what the targets fired: agtarget N fires 0..N-1.
type want struct {
	ns []int
}

func (w want) values() []int {
	var vs []int
	for _, n := range w.ns {
		for i := range n {
			vs = append(vs, i)
		}
	}
	return vs
}

// series returns the series the agent must export for what fired.
func (w want) series() map[string]float64 {
	vs := w.values()
	le := func(b int) float64 {
		n := 0
		for _, v := range vs {
			if v <= b {
				n++
			}
		}
		return float64(n)
	}
	maxv := 0
	sum := 0
	for _, v := range vs {
		maxv = max(maxv, v)
		sum += v
	}
	out := map[string]float64{
		`usdtkit_c_hits_total{comm="agtarget",test="agent"}`: float64(len(vs)),
		`usdtkit_c_vals_count{test="agent"}`:                 float64(len(vs)),
		`usdtkit_c_lin_count{test="agent"}`:                  float64(len(vs)),
		`usdtkit_c_avg_count{test="agent"}`:                  float64(len(vs)),
		`usdtkit_c_avg_sum{test="agent"}`:                    float64(sum),
	}
	// hist: le -1, 0, then 2^k-1 up to the bucket of the largest value.
	bounds := []int{-1, 0}
	for b := 1; ; b = b*2 + 1 {
		bounds = append(bounds, b)
		if b >= maxv {
			break
		}
	}
	for _, b := range bounds {
		out[fmt.Sprintf(`usdtkit_c_vals_bucket{le="%d",test="agent"}`, b)] = le(b)
	}
	// lhist(0, 100, 10): le -1, 9, 19, … up to the largest value's.
	for b := -1; ; b += 10 {
		out[fmt.Sprintf(`usdtkit_c_lin_bucket{le="%d",test="agent"}`, b)] = le(b)
		if b >= maxv {
			break
		}
	}
	return out
}

// check compares have with want's series, returning what differs.
func check(have, want map[string]float64) (bool, string) {
	for k, v := range want {
		if h, ok := have[k]; !ok || h != v {
			return false, fmt.Sprintf("%s = %v (present %v), want %v", k, h, ok, v)
		}
	}
	return true, ""
}

// TestAgentFollowsProcesses starts the agent, then three target processes
// and a dynsdt provider after it: the agent attaches to each (the
// targets wait for their probe's semaphore before they fire), its
// metrics equal what they fired, a real Prometheus server scrapes the
// same, and targets that exit leave the processes count while their
// counts stay.
func TestAgentFollowsProcesses(t *testing.T) {
	testutil.RequireBPF(t)
	target := buildTarget(t)
	// The provider's comm is this test's own: the agent follows every
	// process of that name on the machine, and another run of this
	// test (a second CI root shares the PID namespace) has one too.
	prov := filepath.Join(t.TempDir(), fmt.Sprintf("agprov%d", os.Getpid()))
	if err := os.Rename(testutil.BuildGo(t, "testdata/agprov"), prov); err != nil {
		t.Fatal(err)
	}
	a, err := agent.New(testConfig(t, target, filepath.Base(prov)), &agent.Options{Warn: func(err error) { t.Logf("warn: %v", err) }})
	if err != nil {
		t.Fatal(err)
	}
	addr := startAgent(t, a)
	prom := startPrometheus(t, addr)

	w := want{ns: []int{10, 20, 30}}
	var targets []*child
	for _, n := range w.ns {
		c := startChild(t, target, strconv.Itoa(n), "wait")
		targets = append(targets, c)
	}
	fireWhenAttached(t, a, 3, targets...)
	p := startChild(t, prov, "40")
	p.expect(t, "started", 10*time.Second)
	fmt.Fprintln(p.stdin)
	fireWhenAttached(t, a, 4, p)

	ws := w.series()
	ws[`usdtkit_dyn_dyn_total{}`] = 40
	ws[`usdtkit_dyn_dynh_count{}`] = 40
	// Program c runs file-wide on agtarget: its one site is every
	// process's.
	ws[`usdtkit_agent_attached_sites{program="c"}`] = 1
	ws[`usdtkit_agent_processes{program="c"}`] = 3
	ws[`usdtkit_agent_processes{program="dyn"}`] = 1
	// A target fires once its links are attached, which may be just
	// before the agent records the attachment: wait for it.
	waitFor(t, "after firing", 10*time.Second, func() (bool, string) {
		return check(series(t, a), ws)
	})
	if v := series(t, a)[`usdtkit_agent_lost_events_total{}`]; v != 0 {
		t.Errorf("lost events %v", v)
	}

	// Prometheus scrapes the same numbers.
	promWant := map[string]float64{
		`usdtkit_c_hits_total{comm="agtarget"}`: float64(len(w.values())),
		`usdtkit_dyn_dyn_total`:                 40,
		`usdtkit_c_vals_bucket{le="7"}`:         ws[`usdtkit_c_vals_bucket{le="7",test="agent"}`],
		`usdtkit_c_vals_bucket{le="+Inf"}`:      float64(len(w.values())),
		`usdtkit_c_lin_bucket{le="19"}`:         ws[`usdtkit_c_lin_bucket{le="19",test="agent"}`],
		`usdtkit_c_avg_sum`:                     ws[`usdtkit_c_avg_sum{test="agent"}`],
		`usdtkit_agent_processes{program="c"}`:  3,
	}
	for q, v := range promWant {
		waitFor(t, "prometheus "+q, 30*time.Second, func() (bool, string) {
			have, err := prom.query(q)
			if err != nil {
				return false, err.Error()
			}
			return have == v, fmt.Sprintf("%v, want %v", have, v)
		})
	}

	// Two targets exit: they are no longer counted as processes, their
	// counts stay.
	targets[0].quit(t)
	targets[1].quit(t)
	ws[`usdtkit_agent_processes{program="c"}`] = 1
	waitFor(t, "processes gone", 10*time.Second, func() (bool, string) {
		return check(series(t, a), ws)
	})
	waitFor(t, "prometheus sees the processes gone", 30*time.Second, func() (bool, string) {
		have, err := prom.query(`usdtkit_agent_processes{program="c"}`)
		if err != nil {
			return false, err.Error()
		}
		return have == 1, fmt.Sprintf("%v, want 1", have)
	})

	// A target started now is attached too and adds to the same series.
	attaches := series(t, a)[`usdtkit_agent_attaches_total{}`]
	c := startChild(t, target, "5", "wait")
	fireWhenAttached(t, a, attaches+1, c)
	w.ns = append(w.ns, 5)
	ws2 := w.series()
	waitFor(t, "a late target counted", 10*time.Second, func() (bool, string) {
		return check(series(t, a), ws2)
	})
}
