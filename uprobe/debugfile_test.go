package uprobe

import (
	"encoding/hex"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/usdtkit/usdtkit/elfnotes"
	"github.com/usdtkit/usdtkit/internal/elf/symtab"
	"github.com/usdtkit/usdtkit/internal/testutil"
)

// TestListDebugFileBpftrace lists libc, whose .symtab is only in the
// separate debug file of libc6-dbg, and compares the function names with
// bpftrace -l, which reads the same debug file: every name bpftrace lists
// must be listed, and the debug file must add functions the object's
// .dynsym lacks (glibc's internal _int_malloc among them).
func TestListDebugFileBpftrace(t *testing.T) {
	testutil.RequireRoot(t)
	bpftrace := testutil.RequireTool(t, "bpftrace")
	objs, err := List(&ListOptions{Paths: []string{"libc"}})
	if err != nil || len(objs) != 1 {
		t.Fatalf("List(libc) = %d objects, %v", len(objs), err)
	}
	libc := objs[0]

	f, err := elfnotes.Open(libc.Path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	id := hex.EncodeToString(symtab.BuildID(f))
	if len(id) < 4 {
		t.Fatalf("%s has no build ID", libc.Path)
	}
	testutil.RequireFile(t, filepath.Join(symtab.DefaultDebugDir, ".build-id", id[:2], id[2:]+".debug"))
	own, err := Symbols(f)
	if err != nil {
		t.Fatal(err)
	}

	ours := make(map[string]bool)
	fromDebug := 0
	for _, s := range libc.Symbols {
		ours[symtab.PlainName(s.Name)] = true
		if s.Source == SourceDebug {
			fromDebug++
		}
	}
	ownNames := make(map[string]bool)
	for _, s := range own {
		ownNames[symtab.PlainName(s.Name)] = true
	}
	added := 0
	for n := range ours {
		if !ownNames[n] {
			added++
		}
	}
	if fromDebug == 0 || added == 0 {
		t.Errorf("with the debug file: %d symbols from it, %d names the object's own %d lack", fromDebug, added, len(ownNames))
	}

	out, err := exec.Command(bpftrace, "-l", "uprobe:"+libc.Path+":*").Output()
	if err != nil {
		t.Fatalf("bpftrace -l: %v", err)
	}
	theirs := make(map[string]bool)
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if name, ok := strings.CutPrefix(line, "uprobe:"+libc.Path+":"); ok {
			theirs[symtab.PlainName(name)] = true
		}
	}
	if len(theirs) <= len(ownNames) {
		t.Fatalf("bpftrace lists %d names, no more than the object's own %d: it did not read the debug file", len(theirs), len(ownNames))
	}
	var missing, extra []string
	for n := range theirs {
		if !ours[n] {
			missing = append(missing, n)
		}
	}
	for n := range ours {
		if !theirs[n] {
			extra = append(extra, n)
		}
	}
	if len(missing) > 0 {
		t.Errorf("%d of bpftrace's %d names not listed, e.g. %q", len(missing), len(theirs), missing[:min(5, len(missing))])
	}
	// bpftrace 0.17 passes over a few local ".part.0" clones that are
	// functions in the table all the same.
	if len(extra) > len(theirs)/100 {
		t.Errorf("%d names that bpftrace does not list (more than 1%%), e.g. %q", len(extra), extra[:min(5, len(extra))])
	}
	t.Logf("%s: %d names (bpftrace %d, own tables %d), %d symbols from the debug file", libc.Path, len(ours), len(theirs), len(ownNames), fromDebug)

	// A function only the debug file knows can be selected by name.
	for n := range ours {
		if ownNames[n] || strings.ContainsAny(n, "*?[\\") {
			continue
		}
		sel, err := ParseSelector("uprobe:" + libc.Path + ":" + n)
		if err != nil {
			t.Fatal(err)
		}
		got, err := List(&ListOptions{Selectors: []Selector{sel}})
		if err != nil || len(got) != 1 || len(got[0].Symbols) == 0 || got[0].Symbols[0].Offset == 0 {
			t.Errorf("List(%v) = %+v, %v; want the function with a file offset", sel, got, err)
		}
		break
	}
}
