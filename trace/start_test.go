package trace_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/usdtkit/usdtkit/trace"
	"github.com/usdtkit/usdtkit/uprobe"
)

// TestStartChanged: an object replaced between Compile and Start is
// refused before anything is loaded, not traced in its new version.
func TestStartChanged(t *testing.T) {
	fns, err := uprobe.Functions(&uprobe.ListOptions{Selectors: []uprobe.Selector{{Path: "libc", Func: "malloc"}}})
	if err != nil || len(fns) == 0 {
		t.Fatalf("libc's malloc: %v (%d found)", err, len(fns))
	}
	libc, err := os.ReadFile(fns[0].Path)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	lib := filepath.Join(dir, "libc.so.6")
	if err := os.WriteFile(lib, libc, 0o600); err != nil {
		t.Fatal(err)
	}
	prog, err := trace.Compile("t.bt", "uprobe:"+lib+":malloc { @ = count(); }", nil)
	if err != nil {
		t.Fatal(err)
	}
	// A new file (a new inode) at the same path.
	if err := os.WriteFile(lib+".new", libc, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(lib+".new", lib); err != nil {
		t.Fatal(err)
	}
	tr, err := trace.Start(prog, nil)
	if err == nil {
		tr.Close()
	}
	if !errors.Is(err, trace.ErrChanged) {
		t.Errorf("Start = %v, want an error wrapping ErrChanged", err)
	}
}
