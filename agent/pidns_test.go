package agent_test

import (
	"fmt"
	"os/exec"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/usdtkit/usdtkit/internal/testutil"
)

// TestAgentPIDNamespace selects processes by PID namespace, by its inode
// and by "the namespace of PID N": a target started in a new PID
// namespace (where it is PID 1) is attached and counted; a target of the
// same binary outside it, started before, is not attached (its semaphore
// is never raised, so it never fires).
func TestAgentPIDNamespace(t *testing.T) {
	testutil.RequireBPF(t)
	target := buildTarget(t)
	for _, tc := range []struct {
		name   string
		target func(pid int) string
	}{
		{"inode", func(pid int) string {
			ino := statIno(t, "/proc/"+strconv.Itoa(pid)+"/ns/pid")
			return fmt.Sprintf(`{"pid_namespace": %d}`, ino)
		}},
		{"of-pid", func(pid int) string { return fmt.Sprintf(`{"pid_namespace_of": %d}`, pid) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			outside := startChild(t, target, "5")
			cmd := exec.Command(target, "7", "wait")
			cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWPID}
			inside := startCmd(t, cmd)
			if a, b := statIno(t, fmt.Sprintf("/proc/%d/ns/pid", cmd.Process.Pid)), statIno(t, "/proc/self/ns/pid"); a == b {
				t.Fatalf("child in the test's PID namespace %d", a)
			}
			a := newAgent(t, fmt.Appendf(nil, `{"scan_interval": "50ms", "programs": [
				{"name": "ns", "source": "usdt::agentt:hit { @hits = count(); }", "targets": [%s]}]}`, tc.target(cmd.Process.Pid)))
			startAgent(t, a)
			fireWhenAttached(t, a, 1, inside)
			// Every scan reads every process: the one outside, started
			// before, was looked at by the scan that attached inside.
			want := map[string]float64{
				`usdtkit_ns_hits_total{}`:                    7,
				`usdtkit_agent_attaches_total{}`:             1,
				`usdtkit_agent_processes{program="ns"}`:      1,
				`usdtkit_agent_attached_sites{program="ns"}`: 1,
			}
			waitFor(t, "counted", 10*time.Second, func() (bool, string) {
				return check(series(t, a), want)
			})
			select {
			case l := <-outside.lines:
				t.Fatalf("the process outside the namespace printed %q: attached", l)
			default:
			}
			inside.quit(t)
			waitFor(t, "released", 10*time.Second, func() (bool, string) {
				return check(series(t, a), map[string]float64{`usdtkit_agent_attached_sites{program="ns"}`: 0})
			})
		})
	}
}

// statIno returns the inode number of the file at path.
func statIno(t *testing.T, path string) uint64 {
	t.Helper()
	var st syscall.Stat_t
	if err := syscall.Stat(path, &st); err != nil {
		t.Fatal(err)
	}
	return st.Ino
}
