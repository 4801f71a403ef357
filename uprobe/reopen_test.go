package uprobe

import (
	"errors"
	"os"
	"testing"

	"github.com/usdtkit/usdtkit/internal/procfs"
)

// TestTraceRefusesAnotherFile gives Trace functions whose recorded file
// identity is not the file's at the path any more: Trace must refuse them
// (before loading anything) instead of attaching to whatever the path
// names now. GoSignatures does the same.
func TestTraceRefusesAnotherFile(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	sel, err := ParseSelector("uprobe:" + exe + ":main.main")
	if err != nil {
		t.Fatal(err)
	}
	fns, err := Functions(&ListOptions{Selectors: []Selector{sel}})
	if err != nil || len(fns) == 0 {
		t.Fatalf("Functions: %v, %d", err, len(fns))
	}
	if fns[0].Dev == 0 && fns[0].Inode == 0 {
		t.Fatal("Functions recorded no file identity")
	}
	for _, native := range []bool{false, true} {
		fn := fns[0]
		fn.Inode++
		if native {
			fn.Delta = 1 // a native site inside the function
		}
		tr, err := Trace(&TraceOptions{Functions: []Function{fn}})
		if tr != nil {
			tr.Close()
		}
		if !errors.Is(err, procfs.ErrChanged) {
			t.Errorf("native %v: have %v, want ErrChanged", native, err)
		}
	}
	objs, err := List(&ListOptions{Selectors: []Selector{sel}})
	if err != nil || len(objs) != 1 {
		t.Fatalf("List: %v, %d objects", err, len(objs))
	}
	obj := objs[0]
	obj.Inode++
	if _, err := GoSignatures(&obj, []string{"main.main"}); !errors.Is(err, procfs.ErrChanged) {
		t.Errorf("GoSignatures: have %v, want ErrChanged", err)
	}
}
