package libstapsdt

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/usdtkit/usdtkit/internal/testutil"
)

// TestHostileHosts runs testdata/hostile.c, a C host that is hard on the
// library: signal handlers without SA_ONSTACK (a SIGPROF profiler at
// 0.5 ms; SIGUSR1, SIGHUP, SIGWINCH and SIGURG under a signal loop) while
// providers load, fire and unload, 10 runs each; 40 000 load/unload
// cycles that must leave /proc/self/maps as it was; an address space
// limited to 64 MiB; a child in a new PID namespace (PID 1 there); loads
// from 16 threads at once. Each run must print "ok": a crash, a hang or
// a leak fails it. The library carries no runtime, threads or signal
// handlers, so none of these can break it.
func TestHostileHosts(t *testing.T) {
	lib := buildLib(t)
	bin := filepath.Join(t.TempDir(), "hostile")
	if out, err := exec.Command("gcc", "-O2", "-Wall", "-Werror", "-o", bin, "testdata/hostile.c", "-I"+lib,
		"-L"+lib, "-lstapsdt", "-lpthread", "-Wl,-rpath,"+lib).CombinedOutput(); err != nil {
		t.Fatalf("gcc: %v\n%s", err, out)
	}
	run := func(t *testing.T, args ...string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		out, err := exec.CommandContext(ctx, bin, args...).CombinedOutput()
		if err != nil || !strings.HasPrefix(string(out), "ok") {
			t.Fatalf("hostile %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	for _, mode := range []string{"sigprof", "sigloop"} {
		t.Run(mode, func(t *testing.T) {
			for range 10 {
				run(t, mode, "300")
			}
		})
	}
	t.Run("cycles", func(t *testing.T) {
		n := "40000"
		if testing.Short() { // the race pass: the first pass ran them all
			n = "4000"
		}
		run(t, "cycles", n)
	})
	t.Run("ulimit", func(t *testing.T) { run(t, "ulimit", "64") })
	t.Run("pidns", func(t *testing.T) {
		testutil.RequireRoot(t)
		run(t, "pidns")
	})
	t.Run("threads", func(t *testing.T) { run(t, "threads", "16") })
}
