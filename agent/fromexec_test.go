package agent_test

import (
	"fmt"
	"os/exec"
	"testing"
	"time"

	"github.com/usdtkit/usdtkit/internal/testutil"
)

// TestAgentFromExec: ten processes of a binary target, started together,
// fire their probe from main's first instruction and exit at once,
// while two spinning processes keep the CPUs busy: every hit is counted,
// for the program runs file-wide on the binary (its uprobes are in each
// process from its exec), and no process was attached late.
func TestAgentFromExec(t *testing.T) {
	testutil.RequireBPF(t)
	burst := buildC(t, "agburst")
	spin := testutil.BuildSpin(t)
	const procs, hits = 10, 6
	// The scan interval is long: nothing waits for a scan.
	a := newAgent(t, fmt.Appendf(nil, `{"scan_interval": "1h", "programs": [
		{"name": "burst", "source": "usdt::agburst:hit { @hits = count(); @sum = sum(arg0); }", "targets": [{"binary": %q}]}]}`, burst))
	startAgent(t, a)
	waitFor(t, "file-wide attach", 10*time.Second, func() (bool, string) {
		v := series(t, a)[`usdtkit_agent_attached_sites{program="burst"}`]
		return v == 1, fmt.Sprint(v, " sites")
	})
	testutil.StartSpin(t, spin, "100000000000")
	testutil.StartSpin(t, spin, "100000000000")
	// All at once: they compete with the spinners and with each other.
	var cmds []*exec.Cmd
	for i := range procs {
		c := exec.Command(burst, fmt.Sprint(hits))
		if err := c.Start(); err != nil {
			t.Fatalf("process %d: %v", i, err)
		}
		cmds = append(cmds, c)
	}
	for i, c := range cmds {
		if err := c.Wait(); err != nil {
			t.Errorf("process %d: %v", i, err)
		}
	}
	// The processes have exited: the maps hold their every hit.
	want := map[string]float64{
		`usdtkit_burst_hits_total{}`:                         procs * hits,
		`usdtkit_burst_sum_total{}`:                          procs * hits * (hits - 1) / 2,
		`usdtkit_agent_late_attaches_total{program="burst"}`: 0,
		`usdtkit_agent_attach_errors_total{}`:                0,
	}
	if ok, diff := check(series(t, a), want); !ok {
		t.Fatal(diff)
	}
}

// TestAgentLateAttach: a process a comm target selects is attached after
// its exec, and usdtkit_agent_late_attaches_total says so.
func TestAgentLateAttach(t *testing.T) {
	testutil.RequireBPF(t)
	target, comm := uniqueComm(t, buildTarget(t))
	a := newAgent(t, fmt.Appendf(nil, `{"scan_interval": "100ms", "programs": [
		{"name": "late", "source": "usdt::agentt:hit { @hits = count(); }", "targets": [{"comm": %q}]}]}`, comm))
	startAgent(t, a)
	c := startChild(t, target, "3", "wait")
	fireWhenAttached(t, a, 1, c)
	c.quit(t)
	waitFor(t, "counted", 10*time.Second, func() (bool, string) {
		return check(series(t, a), map[string]float64{
			`usdtkit_late_hits_total{}`:                         3,
			`usdtkit_agent_late_attaches_total{program="late"}`: 1,
		})
	})
}
