package main_test

import (
	"bufio"
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/usdtkit/usdtkit/internal/testutil"
)

func goTool() string { return filepath.Join(runtime.GOROOT(), "bin", "go") }

// build runs go build for pkg into dir and returns the executable.
func build(t *testing.T, dir, pkg string, flags ...string) string {
	t.Helper()
	out := filepath.Join(dir, filepath.Base(pkg))
	args := append(append([]string{"build", "-o", out}, flags...), pkg)
	if b, err := exec.Command(goTool(), args...).CombinedOutput(); err != nil {
		t.Fatalf("go %v: %v\n%s", args, err, b)
	}
	return out
}

// TestExample builds the server as the README says (one go build with
// usdtkit as -toolexec), lists its probes by path, and counts a known set
// of requests with usdtkit attached by path, without -p.
func TestExample(t *testing.T) {
	testutil.RequireBPF(t)
	dir := t.TempDir()
	usdtkit := build(t, dir, "github.com/usdtkit/usdtkit/cmd/usdtkit")
	server := build(t, dir, "github.com/usdtkit/usdtkit/examples/go-static", "-toolexec", usdtkit+" toolexec")

	out, err := exec.Command(usdtkit, "list", server).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "server:request__start") || !strings.Contains(string(out), "server:request__done") {
		t.Fatalf("usdtkit list: %v\n%s", err, out)
	}

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	tr := exec.CommandContext(ctx, usdtkit, "trace", "-e", "usdt:"+server+":server:request__done { @[str(arg0), arg2] = count(); }")
	var trOut, trErr bytes.Buffer
	tr.Stdout, tr.Stderr = &trOut, &trErr
	if err := tr.Start(); err != nil {
		t.Fatal(err)
	}
	srv := exec.CommandContext(ctx, server, "-requests", "4", "-wait-trace")
	stdout, err := srv.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		srv.Process.Signal(os.Interrupt)
		srv.Wait()
	}()
	sc := bufio.NewScanner(stdout)
	for sc.Scan() && sc.Text() != "requests done" {
	}
	if sc.Text() != "requests done" {
		t.Fatalf("the server did not finish its requests; trace: %s", trErr.String())
	}
	tr.Process.Signal(os.Interrupt)
	tr.Wait()
	want := "@[/hello/gopher, 200]: 2\n@[/missing, 404]: 2\n"
	if !strings.Contains(trOut.String(), want) {
		t.Errorf("trace printed\n%s\nwant\n%s\nstderr: %s", trOut.String(), want, trErr.String())
	}
}
