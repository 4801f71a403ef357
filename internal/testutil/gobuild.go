package testutil

import (
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
)

// BuildGo builds the Go main package in directory dir (a path relative to
// the calling test's package, testdata/... included) into a file in a
// temporary directory and returns its path. flags go to `go build` before
// the package ("-ldflags=-s -w", "-gcflags=all=-N -l").
func BuildGo(tb testing.TB, dir string, flags ...string) string {
	tb.Helper()
	goTool := filepath.Join(runtime.GOROOT(), "bin", "go")
	bin := filepath.Join(tb.TempDir(), filepath.Base(dir))
	args := append(append([]string{"build", "-o", bin}, flags...), "./"+filepath.Clean(dir))
	cmd := exec.Command(goTool, args...)
	if out, err := cmd.CombinedOutput(); err != nil {
		tb.Fatalf("go %v: %v\n%s", args, err, out)
	}
	return bin
}
