package testutil

import (
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
)

// BuildLibstapsdt builds the libstapsdt-compatible C library as make
// libstapsdt does (the Makefile holds its one build command) with the C
// compiler cc (a cross compiler for another architecture) into dir:
// libstapsdt.so.0, the libstapsdt.so link and libstapsdt.h.
func BuildLibstapsdt(tb testing.TB, dir, cc string) {
	tb.Helper()
	RequireTool(tb, cc)
	mk := RequireTool(tb, "make")
	_, file, _, _ := runtime.Caller(0)
	root := filepath.Join(filepath.Dir(file), "..", "..")
	cmd := exec.Command(mk, "-s", "-C", root, "libstapsdt", "LIBSTAPSDT_OUT="+dir, "LIBSTAPSDT_CC="+cc)
	if out, err := cmd.CombinedOutput(); err != nil {
		tb.Fatalf("make libstapsdt: %v\n%s", err, out)
	}
}
