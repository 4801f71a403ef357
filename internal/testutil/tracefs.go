package testutil

import (
	"os"
	"os/exec"
	"testing"
)

// RequireTracefs mounts tracefs at /sys/kernel/tracing if it is not, for
// peer tools that need it (bpftrace 0.17 enables USDT semaphores through
// it). usdtkit itself never needs tracefs.
func RequireTracefs(tb testing.TB) {
	tb.Helper()
	RequireRoot(tb)
	if _, err := os.Stat("/sys/kernel/tracing/uprobe_events"); err == nil {
		return
	}
	if out, err := exec.Command("mount", "-t", "tracefs", "nodev", "/sys/kernel/tracing").CombinedOutput(); err != nil {
		skip(tb, "mount tracefs: %v: %s", err, out)
	}
}
