package agent_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/usdtkit/usdtkit/agent"
	"github.com/usdtkit/usdtkit/internal/testutil"
)

// TestAgentSeriesLimitAndReload: a map of 20 keys under a limit of 5
// exports 5 series and counts 15 dropped; Reload with another program
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
		d := s[`usdtkit_agent_dropped_series_total{map="@k",program="lim"}`]
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
