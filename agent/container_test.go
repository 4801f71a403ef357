package agent_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/usdtkit/usdtkit/internal/testutil"
)

// TestAgentContainerPath selects a binary by the path it has inside a
// process's root, as a container's processes see their files: the target
// runs chrooted into a directory where it is /app/agtarget, a path that
// does not exist on the host. The agent attaches to it and counts its
// hits, and not to the same file run outside that root.
func TestAgentContainerPath(t *testing.T) {
	testutil.RequireBPF(t)
	gcc := testutil.RequireTool(t, "gcc")
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "app"), 0o755); err != nil {
		t.Fatal(err)
	}
	target := filepath.Join(root, "app", "agtarget")
	// Static: the root holds no C library.
	if b, err := exec.Command(gcc, "-O1", "-static", "-o", target, "testdata/agtarget.c").CombinedOutput(); err != nil {
		t.Fatalf("gcc: %v\n%s", err, b)
	}
	if _, err := os.Stat("/app/agtarget"); err == nil {
		t.Fatal("/app/agtarget exists on the host: the test needs a path only the root has")
	}
	a := newAgent(t, []byte(`{"scan_interval": "50ms", "programs": [
		{"name": "ctr", "source": "usdt::agentt:hit { @hits = count(); }", "targets": [{"binary": "/app/agtarget"}]}]}`))
	startAgent(t, a)
	// The same file run from the host's view of it: not selected.
	outside := startChild(t, target, "5")
	cmd := exec.Command("/app/agtarget", "7", "wait")
	cmd.SysProcAttr = &syscall.SysProcAttr{Chroot: root}
	inside := startCmd(t, cmd)
	fireWhenAttached(t, a, 1, inside)
	want := map[string]float64{
		`usdtkit_ctr_hits_total{}`:                    7,
		`usdtkit_agent_attaches_total{}`:              1,
		`usdtkit_agent_processes{program="ctr"}`:      1,
		`usdtkit_agent_attached_sites{program="ctr"}`: 1,
	}
	waitFor(t, "counted", 10*time.Second, func() (bool, string) {
		return check(series(t, a), want)
	})
	select {
	case l := <-outside.lines:
		t.Fatalf("the process outside the root printed %q: attached", l)
	default:
	}
	inside.quit(t)
	waitFor(t, "released", 10*time.Second, func() (bool, string) {
		return check(series(t, a), map[string]float64{`usdtkit_agent_attached_sites{program="ctr"}`: 0})
	})
}
