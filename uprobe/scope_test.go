package uprobe

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/usdtkit/usdtkit/internal/testutil"
)

// TestFunctionsReadsNamedObjectsOnly maps a good library and a truncated
// one into a process: Functions and List with a selector naming the good
// library read that library only, so the truncated one, which a listing
// of every object skips with a warning, gives none.
func TestFunctionsReadsNamedObjectsOnly(t *testing.T) {
	gcc := testutil.RequireTool(t, "gcc")
	dir := t.TempDir()
	exe := filepath.Join(dir, "swapper")
	testutil.BuildSwapper(t, exe, false)
	src := filepath.Join(dir, "good.c")
	if err := os.WriteFile(src, []byte("int good(int x) { return x + 1; }\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	good := filepath.Join(dir, "libgood.so")
	if b, err := exec.Command(gcc, "-shared", "-fPIC", "-o", good, src).CombinedOutput(); err != nil {
		t.Fatalf("gcc: %v\n%s", err, b)
	}
	img, err := os.ReadFile(good)
	if err != nil {
		t.Fatal(err)
	}
	truncated := filepath.Join(dir, "libtruncated.so")
	if err := os.WriteFile(truncated, img[:256], 0o644); err != nil {
		t.Fatal(err)
	}
	pid := testutil.StartMapper(t, exe, good, truncated).Process.Pid

	var warnings []error
	warn := func(err error) { warnings = append(warnings, err) }
	if _, err := List(&ListOptions{PID: pid, Warn: warn}); err != nil || len(warnings) != 1 {
		t.Fatalf("every object: %v, warnings %v; want one for the truncated library", err, warnings)
	}
	warnings = nil
	fns, err := Functions(&ListOptions{PID: pid, Warn: warn, Selectors: []Selector{{Path: "libgood", Func: "good"}}})
	if err != nil || len(fns) != 1 || fns[0].Path != good || len(warnings) != 0 {
		t.Errorf("Functions uprobe:libgood:good: %v, %d functions, warnings %v; want good in %s, no warning", err, len(fns), warnings, good)
	}
	warnings = nil
	objs, err := List(&ListOptions{PID: pid, Warn: warn, Selectors: []Selector{{Path: "libgood"}}})
	if err != nil || len(objs) != 1 || objs[0].Path != good || len(warnings) != 0 {
		t.Errorf("List uprobe:libgood:*: %v, %d objects, warnings %v; want %s alone, no warning", err, len(objs), warnings, good)
	}
}
