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
	"strconv"
	"strings"
	"testing"

	"github.com/usdtkit/usdtkit/dynsdt/gen"
	"github.com/usdtkit/usdtkit/internal/testutil"
	"github.com/usdtkit/usdtkit/sdt"
	"github.com/usdtkit/usdtkit/trace"
)

const requests = 10

// startApp runs app.py with the shared object so and returns once it waits
// for the go-ahead line on stdin.
func startApp(t *testing.T, py, so string) *testutil.Tracee {
	t.Helper()
	app := testutil.StartCmd(t, exec.Command(py, "app.py", so, fmt.Sprint(requests)))
	app.Expect(t, "ready")
	return app
}

// generate runs usdtkit gen's library on myapp.d into a temporary directory
// and returns the path of myapp.so.
func generate(t *testing.T) string {
	t.Helper()
	f, err := os.Open("myapp.d")
	if err != nil {
		t.Fatal(err)
	}
	specs, err := gen.ParseD(f, "myapp.d")
	f.Close()
	if err != nil || len(specs) != 1 {
		t.Fatalf("ParseD: %v", err)
	}
	files, err := gen.Files(&specs[0], nil)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, gf := range files {
		if err := os.WriteFile(filepath.Join(dir, gf.Name), gf.Data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return filepath.Join(dir, "myapp.so")
}

// wantEvents is what app.py fires, as "PREFIXrequest__start PATH SIZE" and
// "PREFIXrequest__done PATH STATUS" lines.
func wantEvents(prefix string) []string {
	var want []string
	for i := 0; i < requests; i++ {
		status := 200
		if i%3 == 0 {
			status = 404
		}
		want = append(want, fmt.Sprintf("%srequest__start /item/%d %d", prefix, i, 100*i), fmt.Sprintf("%srequest__done /item/%d %d", prefix, i, status))
	}
	return want
}

// TestExample generates myapp.so from myapp.d, runs app.py with it, traces
// the process by PID and checks every request's probes: arguments as the
// script passed them, and nothing fired before the tracer attached.
func TestExample(t *testing.T) {
	testutil.RequireBPF(t)
	py := testutil.RequireFile(t, testutil.Python311)
	so := generate(t)
	app := startApp(t, py, so)

	sel, _ := sdt.ParseSelector("myapp:*")
	probes, err := sdt.List(&sdt.ListOptions{PID: app.PID(), Selectors: []sdt.Selector{sel}})
	if err != nil || len(probes) != 2 {
		t.Fatalf("listing the process: %d probes, %v", len(probes), err)
	}
	prog, err := trace.CompileEvents([]trace.EventProbe{{Probe: "usdt::myapp:*", Strings: []int{0}}}, &trace.CompileOptions{PID: app.PID()})
	if err != nil {
		t.Fatal(err)
	}
	var have []string
	tr, err := trace.Start(prog, &trace.Options{PID: app.PID(), OnEvent: func(ev *trace.Event) error {
		have = append(have, fmt.Sprintf("%s %s %d", ev.Name, ev.Args[0].Str, ev.Args[1].Int()))
		return nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()

	app.Send(t, "")
	if l, _ := app.Next(); l != "done" {
		t.Fatalf("app.py: %q", l)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // collect what was delivered, then detach
	if err := tr.Run(ctx); err != nil {
		t.Fatal(err)
	}
	if want := wantEvents("myapp:"); !slices.Equal(have, want) {
		t.Errorf("events:\nhave %q\nwant %q", have, want)
	}
	if lost, _, err := tr.Lost(); err != nil || lost != 0 {
		t.Errorf("lost %d events (%v)", lost, err)
	}
}

// TestExamplePeers runs app.py again and checks it with tools we did not
// write: readelf -n shows the generated object's notes, tplist-bpfcc -p lists
// the probes in the running process, and bpftrace -p traces every request
// with the arguments app.py passed (its script exits after the last one:
// bpftrace loses what it buffered when its -p process exits first).
func TestExamplePeers(t *testing.T) {
	testutil.RequireBPF(t)
	testutil.RequireTracefs(t)
	py := testutil.RequireFile(t, testutil.Python311)
	so := generate(t)
	readelf, err := exec.Command(testutil.RequireTool(t, "readelf"), "-n", so).Output()
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Provider: myapp", "Name: request__start", "Name: request__done", "Arguments: 8@%rdi -4@%esi"} {
		if !strings.Contains(string(readelf), want) {
			t.Errorf("readelf -n %s lacks %q:\n%s", so, want, readelf)
		}
	}

	app := startApp(t, py, so)
	pid := strconv.Itoa(app.PID())
	tplist, err := exec.Command(testutil.RequireTool(t, "tplist-bpfcc"), "-p", pid).Output()
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"myapp:request__start", "myapp:request__done"} {
		if !strings.Contains(string(tplist), want) {
			t.Errorf("tplist-bpfcc -p %s lacks %s:\n%s", pid, want, tplist)
		}
	}

	script := fmt.Sprintf(`BEGIN { printf("ready\n"); }
usdt:%[1]s:myapp:request__start { printf("request__start %%s %%d\n", str(arg0), arg1); }
usdt:%[1]s:myapp:request__done { printf("request__done %%s %%d\n", str(arg0), arg1); @n++; if (@n == %[2]d) { exit(); } }`, so, requests)
	bt := exec.Command(testutil.RequireTool(t, "bpftrace"), "-p", pid, "-e", script)
	btOut, err := bt.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := bt.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { bt.Process.Kill(); bt.Wait() })
	lines := bufio.NewScanner(btOut)
	for lines.Scan() && lines.Text() != "ready" {
	}
	app.Send(t, "")
	var have []string
	for lines.Scan() {
		if l := lines.Text(); strings.HasPrefix(l, "request__") {
			have = append(have, l)
		}
	}
	if err := bt.Wait(); err != nil {
		t.Errorf("bpftrace: %v", err)
	}
	if want := wantEvents(""); !slices.Equal(have, want) {
		t.Errorf("bpftrace:\nhave %q\nwant %q", have, want)
	}
	if l, _ := app.Next(); l != "done" {
		t.Errorf("app.py: %q", l)
	}
}
