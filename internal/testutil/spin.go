package testutil

import (
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
)

// BuildSpin compiles testdata/spin.c, the CPU profile target (its comment
// says what it does), with gcc -O1 -fno-omit-frame-pointer -g -no-pie
// into a temporary directory and returns the executable's path.
func BuildSpin(tb testing.TB) string {
	tb.Helper()
	gcc := RequireTool(tb, "gcc")
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		tb.Fatal("no caller information to find spin.c")
	}
	src := RequireFile(tb, filepath.Join(filepath.Dir(file), "testdata", "spin.c"))
	out := filepath.Join(tb.TempDir(), "spin")
	args := []string{"-O1", "-fno-omit-frame-pointer", "-g", "-no-pie", "-o", out, src}
	if b, err := exec.Command(gcc, args...).CombinedOutput(); err != nil {
		tb.Fatalf("gcc %v: %v\n%s", args, err, b)
	}
	return out
}

// StartSpin starts the spin target bin (BuildSpin) spinning for iters
// iterations, and kills it when the test ends.
func StartSpin(tb testing.TB, bin, iters string) *exec.Cmd {
	tb.Helper()
	c := exec.Command(bin, "spin", iters)
	if err := c.Start(); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		c.Process.Kill()
		c.Wait()
	})
	return c
}
