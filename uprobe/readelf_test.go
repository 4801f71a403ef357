package uprobe

import (
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/usdtkit/usdtkit/elfnotes"
	"github.com/usdtkit/usdtkit/internal/elf/symtab/symtabtest"
	"github.com/usdtkit/usdtkit/internal/testutil"
)

// This file cross-checks Symbols with GNU readelf, which we did not write.

// readelfKinds are the kinds of the symbol types readelf names.
var readelfKinds = map[string]SymbolKind{"FUNC": SymFunc, "IFUNC": SymIFunc}

// readelfFunctions returns the defined FUNC and IFUNC symbols readelf -sW
// --dyn-syms lists (see symtabtest.Readelf).
func readelfFunctions(t *testing.T, path string) map[symtabtest.RefKey]symtabtest.RefSym {
	t.Helper()
	syms := symtabtest.Readelf(t, path)
	maps.DeleteFunc(syms, func(_ symtabtest.RefKey, s symtabtest.RefSym) bool { return readelfKinds[s.Type] == 0 })
	return syms
}

// refLoad is a PT_LOAD segment as readelf -lW prints it.
type refLoad struct{ off, vaddr, filesz uint64 }

// readelfLoads runs readelf -lW and returns the PT_LOAD segments of path.
func readelfLoads(t *testing.T, path string) []refLoad {
	t.Helper()
	readelf := testutil.RequireTool(t, "readelf")
	out, err := exec.Command(readelf, "-lW", path).Output()
	if err != nil {
		t.Fatalf("readelf -lW %s: %v", path, err)
	}
	var loads []refLoad
	for line := range strings.Lines(string(out)) {
		f := strings.Fields(line)
		if len(f) < 5 || f[0] != "LOAD" {
			continue
		}
		var v [3]uint64
		for i, s := range []string{f[1], f[2], f[4]} {
			n, err := strconv.ParseUint(s, 0, 64)
			if err != nil {
				t.Fatalf("readelf -lW %q: %v", line, err)
			}
			v[i] = n
		}
		loads = append(loads, refLoad{off: v[0], vaddr: v[1], filesz: v[2]})
	}
	return loads
}

// refOffset is the file offset of vaddr by the segment math a user would do
// with readelf -lW: off + (vaddr - VirtAddr) in the LOAD segment holding it.
func refOffset(loads []refLoad, vaddr uint64) uint64 {
	for _, l := range loads {
		if vaddr >= l.vaddr && vaddr-l.vaddr < l.filesz {
			return l.off + vaddr - l.vaddr
		}
	}
	return 0
}

// compareReadelf checks that Symbols(path) lists exactly the defined
// function symbols readelf shows, with the same kind, size, version and the
// offset that readelf -lW gives.
func compareReadelf(t *testing.T, path string) []Symbol {
	t.Helper()
	have := openSymbols(t, path)
	want := readelfFunctions(t, path)
	loads := readelfLoads(t, path)
	if len(want) == 0 {
		t.Fatalf("readelf lists no function symbols in %s", path)
	}
	seen := make(map[symtabtest.RefKey]bool, len(have))
	for _, s := range have {
		name, _, _ := strings.Cut(s.Name, "@")
		k := symtabtest.RefKey{Name: name, Value: s.Value}
		if seen[k] {
			t.Errorf("%s@%#x listed twice", s.Name, s.Value)
		}
		seen[k] = true
		w, ok := want[k]
		if !ok {
			t.Errorf("have %s at %#x, readelf does not", s.Name, s.Value)
			continue
		}
		if s.Kind != readelfKinds[w.Type] || s.Size != w.Size || s.Dynamic != w.Dynamic || s.Version != w.Version {
			t.Errorf("%s: have kind %v size %d dynamic %v version %q; readelf %v %d %v %q",
				s.Name, s.Kind, s.Size, s.Dynamic, s.Version, w.Type, w.Size, w.Dynamic, w.Version)
		}
		if wantOff := refOffset(loads, s.Value); s.Offset != wantOff {
			t.Errorf("%s: have offset %#x, want %#x", s.Name, s.Offset, wantOff)
		}
	}
	for k := range want {
		if !seen[k] {
			t.Errorf("readelf has %s at %#x, Symbols does not", k.Name, k.Value)
		}
	}
	return have
}

func openSymbols(t testing.TB, path string) []Symbol {
	t.Helper()
	f, err := elfnotes.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	syms, err := Symbols(f)
	if err != nil {
		t.Fatal(err)
	}
	return syms
}

// buildC compiles src with gcc and extra flags into a file named out in a
// temporary directory, and returns its path.
func buildC(t *testing.T, src, out string, flags ...string) string {
	t.Helper()
	gcc := testutil.RequireTool(t, "gcc")
	dir := t.TempDir()
	c := filepath.Join(dir, "src.c")
	if err := os.WriteFile(c, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, out)
	args := append(append([]string{"-O1", "-o", bin}, flags...), c)
	if msg, err := exec.Command(gcc, args...).CombinedOutput(); err != nil {
		t.Fatalf("gcc %v: %v\n%s", args, err, msg)
	}
	return bin
}

func writeFile(t *testing.T, path, data string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}
