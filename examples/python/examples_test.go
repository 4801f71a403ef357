// Package python holds the Python ctypes example; its test runs it.
package python

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"

	"github.com/usdtkit/usdtkit/dynsdt"
	"github.com/usdtkit/usdtkit/internal/testutil"
	"github.com/usdtkit/usdtkit/sdt"
)

// TestExample generates myapp.so from myapp.d, runs app.py with it, traces
// the process by PID and checks every request's probes: arguments as the
// script passed them, and nothing fired before the tracer attached.
func TestExample(t *testing.T) {
	testutil.RequireBPF(t)
	py := testutil.RequireFile(t, testutil.Python311)
	f, err := os.Open("myapp.d")
	if err != nil {
		t.Fatal(err)
	}
	specs, err := dynsdt.ParseD(f, "myapp.d")
	f.Close()
	if err != nil || len(specs) != 1 {
		t.Fatalf("ParseD: %v", err)
	}
	dir := t.TempDir()
	files, err := dynsdt.GenerateFiles(&specs[0], nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, gf := range files {
		if err := os.WriteFile(filepath.Join(dir, gf.Name), gf.Data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	so := filepath.Join(dir, "myapp.so")

	const requests = 10
	cmd := exec.Command(py, "app.py", so, fmt.Sprint(requests))
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	out := bufio.NewScanner(stdout)
	if !out.Scan() || out.Text() != "ready" {
		t.Fatalf("app.py: %q", out.Text())
	}

	sel, _ := sdt.ParseSelector("myapp:*")
	probes, err := sdt.List(&sdt.ListOptions{PID: cmd.Process.Pid, Selectors: []sdt.Selector{sel}})
	if err != nil || len(probes) != 2 {
		t.Fatalf("listing the process: %d probes, %v", len(probes), err)
	}
	tr, err := sdt.Trace(&sdt.TraceOptions{Probes: probes, PID: cmd.Process.Pid, StringArgs: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()

	fmt.Fprintln(stdin)
	if !out.Scan() || out.Text() != "done" {
		t.Fatalf("app.py: %q", out.Text())
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // collect what was delivered, then detach
	var have []string
	err = tr.Run(ctx, func(ev *sdt.Event) error {
		line := fmt.Sprintf("%s %s %d", tr.ProbeName(ev.Probe), ev.Strings[0], int64(ev.Args[1]))
		have = append(have, line)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for i := 0; i < requests; i++ {
		status := 200
		if i%3 == 0 {
			status = 404
		}
		want = append(want, fmt.Sprintf("myapp:request__start /item/%d %d", i, 100*i), fmt.Sprintf("myapp:request__done /item/%d %d", i, status))
	}
	if !slices.Equal(have, want) {
		t.Errorf("events:\nhave %q\nwant %q", have, want)
	}
	if lost, _, err := tr.Lost(); err != nil || lost != 0 {
		t.Errorf("lost %d events (%v)", lost, err)
	}
}
