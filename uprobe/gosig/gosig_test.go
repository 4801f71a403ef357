package gosig

import (
	"errors"
	"strings"
	"testing"

	"github.com/usdtkit/usdtkit/internal/testutil"
	"github.com/usdtkit/usdtkit/uprobe"
)

// testObject builds testdata/sigtarget (with DWARF, which test binaries
// lack) and lists it.
func testObject(t *testing.T, fn string) uprobe.Object {
	t.Helper()
	exe := testutil.BuildGo(t, "testdata/sigtarget")
	sel, err := uprobe.ParseSelector("uprobe:" + exe + ":" + fn)
	if err != nil {
		t.Fatal(err)
	}
	objs, err := uprobe.List(&uprobe.ListOptions{Selectors: []uprobe.Selector{sel}})
	if err != nil || len(objs) != 1 {
		t.Fatalf("List: %v, %d objects", err, len(objs))
	}
	return objs[0]
}

func TestSignatures(t *testing.T) {
	const name = "main.sigTarget"
	obj := testObject(t, name)
	sigs, err := Signatures(&obj, []string{name, "no.such.function"})
	if err != nil {
		t.Fatal(err)
	}
	if len(sigs) != 1 {
		t.Fatalf("have %d signatures, want 1 (unknown names left out): %v", len(sigs), sigs)
	}
	s := sigs[0]
	var have []string
	for _, p := range append(s.Params, s.Results...) {
		have = append(have, p.Name+" "+p.Type)
		if p.Place == "" && p.Unread == "" {
			t.Errorf("%s: neither a place nor why it is unread", p.Name)
		}
	}
	want := []string{"n int", "name string", "ok bool", "hits uint32", "err error"}
	if strings.Join(have, ", ") != strings.Join(want, ", ") {
		t.Errorf("have %v, want %v", have, want)
	}
	if !strings.HasPrefix(s.String(), name+"(n int [") {
		t.Errorf("String: %q", s.String())
	}
}

// TestSignaturesRefuseAnotherFile: an object whose recorded identity is not
// the file's at its path any more is refused, not read.
func TestSignaturesRefuseAnotherFile(t *testing.T) {
	obj := testObject(t, "main.main")
	obj.Inode++
	if _, err := Signatures(&obj, []string{"main.main"}); !errors.Is(err, ErrChanged) {
		t.Errorf("have %v, want ErrChanged", err)
	}
}
