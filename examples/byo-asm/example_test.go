package main

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/usdtkit/usdtkit/internal/testutil"
)

// TestExample runs the example on the SIB, high-byte and %rip+symbol probes
// of usdtlink's operands program (t:sib, t:high, t:rip: the glob t:[hrs]i*
// matches no other).
func TestExample(t *testing.T) {
	testutil.RequireBPF(t)
	gcc := testutil.RequireTool(t, "gcc")
	testutil.RequireFile(t, "/usr/include/x86_64-linux-gnu/sys/sdt.h")
	exe := filepath.Join(t.TempDir(), "operands")
	if out, err := exec.Command(gcc, "-O2", "-o", exe, "../../usdtlink/testdata/operands.c").CombinedOutput(); err != nil {
		t.Fatalf("gcc: %v\n%s", err, out)
	}
	tr := testutil.StartTracee(t, exe)
	cmd := exec.Command(testutil.BuildGo(t, "../byo-asm"), exe, "t:[hrs]i*")
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
	if !out.Scan() || out.Text() != "attached 3 sites" {
		t.Fatalf("byo-asm printed %q, %v", out.Text(), out.Err())
	}
	tr.Do(t, "fire")
	want := map[string]bool{
		"t:high: -9 34 67 165 -91 136":                      true,
		"t:sib: 9223090566172966913 -42 4294967295 1029 -1": true,
		"t:rip: -42 72623859790382856 -123456 254 -2":       true,
	}
	for range 3 {
		if !out.Scan() || !want[out.Text()] {
			t.Errorf("byo-asm printed %q, want one of %v", out.Text(), want)
		}
		delete(want, out.Text())
	}
	if len(want) != 0 {
		t.Errorf("missing %v", want)
	}
	cmd.Process.Signal(syscall.SIGINT)
	if err := cmd.Wait(); err != nil {
		t.Errorf("byo-asm after SIGINT: %v", err)
	}
}
