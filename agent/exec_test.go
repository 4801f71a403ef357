package agent_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/usdtkit/usdtkit/agent"
	"github.com/usdtkit/usdtkit/internal/testutil"
)

// TestAgentExecEvents: with a scan interval of an hour, a process started
// after the first scan is still attached at once: its exec (a process
// event from the kernel) triggers a scan.
func TestAgentExecEvents(t *testing.T) {
	testutil.RequireBPF(t)
	target := buildTarget(t)
	cfg, err := agent.ParseConfig(fmt.Appendf(nil, `{"scan_interval": "1h", "programs": [
		{"name": "ex", "source": "usdt::agentt:hit { @hits = count(); }", "targets": [{"binary": %q}]}]}`, target))
	if err != nil {
		t.Fatal(err)
	}
	a, err := agent.New(cfg, &agent.Options{Warn: func(err error) { t.Errorf("warn: %v", err) }})
	if err != nil {
		t.Fatal(err)
	}
	startAgent(t, a)
	waitFor(t, "first scan", 10*time.Second, func() (bool, string) {
		v := series(t, a)[`usdtkit_agent_scans_total{}`]
		return v >= 1, fmt.Sprint(v, " scans")
	})
	for i := range 3 {
		c := startChild(t, target, "4", "wait")
		fireWhenAttached(t, a, float64(i+1), c)
		c.quit(t)
		want := map[string]float64{`usdtkit_ex_hits_total{}`: float64(4 * (i + 1))}
		waitFor(t, "counted", 10*time.Second, func() (bool, string) {
			return check(series(t, a), want)
		})
	}
}
