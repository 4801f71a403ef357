package unwind

import (
	"debug/elf"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/usdtkit/usdtkit/elfnotes"
	"github.com/usdtkit/usdtkit/internal/elf/symtab"
	"github.com/usdtkit/usdtkit/internal/testutil"
)

// TestDebugFileCFI: a library built without unwind tables and stripped
// (cmd/usdtkit's dbglib.c) has no CFI of its own; with a debug opener,
// its CFI is its separate debug file's .debug_frame, found by its
// .gnu_debuglink, and covers each of its functions.
func TestDebugFileCFI(t *testing.T) {
	src := testutil.RequireFile(t, filepath.Join("..", "..", "..", "cmd", "usdtkit", "testdata", "stacks", "dbglib.c"))
	lib := filepath.Join(t.TempDir(), "libdbg.so")
	for _, c := range [][]string{
		{"gcc", "-O2", "-fomit-frame-pointer", "-fno-asynchronous-unwind-tables", "-fno-unwind-tables", "-g", "-fPIC", "-shared", "-o", lib, src},
		{"objcopy", "--only-keep-debug", lib, lib + ".debug"},
		{"strip", "--strip-all", lib},
		{"objcopy", "--add-gnu-debuglink=" + lib + ".debug", lib},
	} {
		if out, err := exec.Command(testutil.RequireTool(t, c[0]), c[1:]...).CombinedOutput(); err != nil {
			t.Fatalf("%q: %v\n%s", c, err, out)
		}
	}
	f, err := os.Open(lib)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if c := loadCFI(f, nil); len(c.fdes) != 0 || c.err != nil {
		t.Fatalf("the stripped library alone: %d FDEs, error %v; want none", len(c.fdes), c.err)
	}
	open := func(ef *elfnotes.File) (*symtab.DebugFile, error) { return symtab.OpenDebugFile(ef, lib, nil) }
	c := loadCFI(f, open)
	if c.err != nil {
		t.Fatal(c.err)
	}
	tab, err := c.table()
	if err != nil {
		t.Fatal(err)
	}
	d, err := elf.Open(lib + ".debug")
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	syms, err := d.Symbols()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, s := range syms {
		switch s.Name {
		case "dbg_leaf", "hidden_inner", "hidden_outer", "dbg_entry":
			n++
			if _, err := c.fdes.FDEForPC(s.Value); err != nil {
				t.Errorf("%s at %#x: no FDE: %v", s.Name, s.Value, err)
			}
			if r := tab.Lookup(uint32(s.Value)); r.Kind != KindSP {
				t.Errorf("%s at %#x: table row %+v; want CFA = SP + offset", s.Name, s.Value, r)
			}
		}
	}
	if n != 4 {
		t.Fatalf("the debug file names %d of dbglib.c's 4 functions", n)
	}
}
