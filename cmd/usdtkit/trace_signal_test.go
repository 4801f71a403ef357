package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/usdtkit/usdtkit/internal/testutil"
)

// TestSignalAgainstBpftrace: signal() sends a signal to the process that
// hit the probe, by name and by number, as bpftrace --unsafe does; the
// target counts the SIGUSR1 it got (TestProgramErrors: refused without
// --unsafe, and in BEGIN).
func TestSignalAgainstBpftrace(t *testing.T) {
	testutil.RequireBPF(t)
	bpftrace := testutil.RequireTool(t, "bpftrace")
	gcc := testutil.RequireTool(t, "gcc")
	dir := t.TempDir()
	bin := filepath.Join(dir, "sigtarget")
	if out, err := exec.Command(gcc, "-O1", "-o", bin, "testdata/sigtarget.c").CombinedOutput(); err != nil {
		t.Fatalf("gcc: %v\n%s", err, out)
	}
	src := strings.ReplaceAll(`uprobe:BIN:work /arg0 == 3 || arg0 == 7/ { signal("SIGUSR1"); } uprobe:BIN:work /arg0 == 5/ { signal(10); }`, "BIN", bin)
	got := func(file string) string {
		t.Helper()
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	ourFile, theirFile := filepath.Join(dir, "ours"), filepath.Join(dir, "theirs")
	runProgramCLI(t, "trace", "--unsafe", "-c", bin+" "+ourFile, "-e", src)
	runBpftrace(t, bpftrace, "--unsafe", "-c", bin+" "+theirFile, "-e", src)
	if ours, theirs := got(ourFile), got(theirFile); ours != theirs || ours != "got 3 sum 90\n" {
		t.Errorf("the target says %q under usdtkit, %q under bpftrace; want got 3 sum 90 from both", ours, theirs)
	}
}
