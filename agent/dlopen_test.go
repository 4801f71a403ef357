package agent_test

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/usdtkit/usdtkit/agent"
	"github.com/usdtkit/usdtkit/internal/testutil"
)

// TestAgentDlopen: a process selected by a library it loads with dlopen
// after start (target "object") is attached once it has, and its hits
// are counted; the same process before the dlopen is not selected.
func TestAgentDlopen(t *testing.T) {
	testutil.RequireBPF(t)
	gcc := testutil.RequireTool(t, "gcc")
	testutil.RequireFile(t, "/usr/include/x86_64-linux-gnu/sys/sdt.h")
	dir := t.TempDir()
	lib, loader := filepath.Join(dir, "aglib.so"), filepath.Join(dir, "agdlopen")
	for _, args := range [][]string{
		{"-O1", "-shared", "-fPIC", "-o", lib, "testdata/aglib.c"},
		{"-O1", "-o", loader, "testdata/agdlopen.c", "-ldl"},
	} {
		if out, err := exec.Command(gcc, args...).CombinedOutput(); err != nil {
			t.Fatalf("gcc %v: %v\n%s", args, err, out)
		}
	}
	cfg, err := agent.ParseConfig(fmt.Appendf(nil, `{"scan_interval": "50ms", "programs": [
		{"name": "dl", "source": "usdt::aglib:hit { @hits = count(); @v = sum(arg0); }", "targets": [{"object": %q}]}]}`, lib))
	if err != nil {
		t.Fatal(err)
	}
	a, err := agent.New(cfg, &agent.Options{Warn: func(err error) { t.Logf("warn: %v", err) }})
	if err != nil {
		t.Fatal(err)
	}
	startAgent(t, a)
	c := startChild(t, loader, lib, "12")
	c.expect(t, "started", 10*time.Second)
	if have := series(t, a)[`usdtkit_agent_processes{program="dl"}`]; have != 0 {
		t.Errorf("before dlopen: %v processes, want 0", have)
	}
	fmt.Fprintln(c.stdin)
	fireWhenAttached(t, a, 1, c)
	want := map[string]float64{
		`usdtkit_dl_hits_total{}`:                    12,
		`usdtkit_dl_v_total{}`:                       66,
		`usdtkit_agent_processes{program="dl"}`:      1,
		`usdtkit_agent_attached_sites{program="dl"}`: 1,
	}
	waitFor(t, "counted", 10*time.Second, func() (bool, string) {
		return check(series(t, a), want)
	})
	c.quit(t)
	want[`usdtkit_agent_processes{program="dl"}`] = 0
	want[`usdtkit_agent_attached_sites{program="dl"}`] = 0
	waitFor(t, "released", 10*time.Second, func() (bool, string) {
		return check(series(t, a), want)
	})
}
