package testutil

import (
	"os"
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

// BuildGoSource builds src, the main.go of a module of its own, into a
// file in a temporary directory and returns its path: a static binary
// (CGO_ENABLED=0), built with -trimpath, the given flags before the
// package, and no VCS stamp.
func BuildGoSource(tb testing.TB, src string, flags ...string) string {
	tb.Helper()
	goTool := filepath.Join(runtime.GOROOT(), "bin", "go")
	dir := tb.TempDir()
	for name, data := range map[string]string{
		"go.mod":  "module example.com/prog\n\ngo 1.22\n",
		"main.go": src,
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			tb.Fatal(err)
		}
	}
	bin := filepath.Join(dir, "prog")
	args := append(append([]string{"build", "-trimpath", "-o", bin}, flags...), ".")
	cmd := exec.Command(goTool, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOFLAGS=-buildvcs=false", "GOWORK=off")
	if out, err := cmd.CombinedOutput(); err != nil {
		tb.Fatalf("go %v: %v\n%s", args, err, out)
	}
	return bin
}
