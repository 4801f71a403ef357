package agent_test

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/usdtkit/usdtkit/internal/testutil"
)

// ownCgroup returns the deepest cgroup path /proc/self/cgroup names ("/"
// if none is deeper): the targets the test starts are in it too.
func ownCgroup(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		t.Fatal(err)
	}
	best := "/"
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) == 3 && len(parts[2]) > len(best) {
			best = parts[2]
		}
	}
	return best
}

// TestAgentCgroup selects processes by cgroup: a target started in the
// test's cgroup is attached and counted (the other processes of the
// cgroup match no probe).
func TestAgentCgroup(t *testing.T) {
	testutil.RequireBPF(t)
	target := buildTarget(t)
	a := newAgent(t, fmt.Appendf(nil, `{"scan_interval": "50ms", "programs": [
		{"name": "cg", "source": "usdt::agentt:hit { @hits = count(); }", "targets": [{"cgroup": %q}]}]}`, ownCgroup(t)))
	startAgent(t, a)
	c := startChild(t, target, "9", "wait")
	fireWhenAttached(t, a, 1, c)
	want := map[string]float64{`usdtkit_cg_hits_total{}`: 9}
	waitFor(t, "counted", 10*time.Second, func() (bool, string) {
		return check(series(t, a), want)
	})
}
