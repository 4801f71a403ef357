package symtab

import (
	"debug/elf"
	"testing"

	"github.com/usdtkit/usdtkit/elfnotes"
	"github.com/usdtkit/usdtkit/internal/elf/symtab/symtabtest"
	"github.com/usdtkit/usdtkit/internal/testutil"
)

// This file cross-checks Read and Lookup with GNU readelf, which we did not
// write.

const libc = "/lib/x86_64-linux-gnu/libc.so.6"

// readelfTypes maps symbol types to readelf's names for them.
var readelfTypes = map[elf.SymType]string{
	elf.STT_NOTYPE: "NOTYPE", elf.STT_OBJECT: "OBJECT", elf.STT_FUNC: "FUNC", elf.STT_FILE: "FILE",
	elf.STT_COMMON: "COMMON", elf.STT_TLS: "TLS", elf.STT_GNU_IFUNC: "IFUNC",
}

func readFile(t testing.TB, path string) []Symbol {
	t.Helper()
	f, err := elfnotes.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	syms, err := Read(f)
	if err != nil {
		t.Fatal(err)
	}
	return syms
}

// compareReadelf checks that Read(path) lists exactly the symbols readelf
// shows, with the same type and size, and returns them.
func compareReadelf(t *testing.T, path string) []Symbol {
	t.Helper()
	have := readFile(t, path)
	compareSymbols(t, have, symtabtest.Readelf(t, path))
	return have
}

// compareSymbols checks that have holds exactly the symbols of want, as
// symtabtest.Readelf returns them, with the same type and size.
func compareSymbols(t *testing.T, have []Symbol, want map[symtabtest.RefKey]symtabtest.RefSym) {
	t.Helper()
	if len(want) == 0 {
		t.Fatal("readelf lists no symbols")
	}
	seen := make(map[symtabtest.RefKey]bool, len(have))
	for _, s := range have {
		k := symtabtest.RefKey{Name: PlainName(s.Name), Value: s.Value}
		if seen[k] && s.Type != elf.STT_FILE { // crtstuff.c, from two objects
			t.Errorf("%s at %#x listed twice", s.Name, s.Value)
		}
		seen[k] = true
		w, ok := want[k]
		if !ok {
			t.Errorf("have %s at %#x, readelf does not", s.Name, s.Value)
			continue
		}
		if readelfTypes[s.Type] != w.Type || s.Size != w.Size || s.Dynamic != w.Dynamic {
			t.Errorf("%s: have %v size %d dynamic %v; readelf %s %d %v", s.Name, s.Type, s.Size, s.Dynamic, w.Type, w.Size, w.Dynamic)
		}
	}
	for k := range want {
		if !seen[k] {
			t.Errorf("readelf has %s at %#x, Read does not", k.Name, k.Value)
		}
	}
}

// TestReadReadelf compares every symbol, of every type, with readelf.
func TestReadReadelf(t *testing.T) {
	for _, tc := range []struct {
		name string
		path func(t *testing.T) string
	}{
		{"libc", func(t *testing.T) string { return testutil.RequireFile(t, libc) }},
		{"python3.11", func(t *testing.T) string { return testutil.RequireFile(t, testutil.Python311) }},
		{"gcc-exe", buildDataProgram},
	} {
		t.Run(tc.name, func(t *testing.T) {
			compareReadelf(t, tc.path(t))
		})
	}
}

// TestLookupPythonObjects checks the data symbols of python3.11 (a .dynsym
// of over 200 OBJECTs): their count, and that Lookup finds each at the
// address readelf gives.
func TestLookupPythonObjects(t *testing.T) {
	path := testutil.RequireFile(t, testutil.Python311)
	want := symtabtest.Readelf(t, path)
	tab := NewTable(readFile(t, path))
	objects := 0
	for k, w := range want {
		if w.Type != "OBJECT" {
			continue
		}
		objects++
		s, err := tab.Lookup(k.Name)
		if err != nil {
			t.Errorf("Lookup(%s): %v", k.Name, err)
			continue
		}
		if s.Value != k.Value || s.Type != elf.STT_OBJECT || s.Size != w.Size {
			t.Errorf("Lookup(%s): have %+v, readelf %#x size %d", k.Name, s, k.Value, w.Size)
		}
	}
	if objects < 200 {
		t.Errorf("readelf lists %d OBJECT symbols, want over 200", objects)
	}
	have := 0
	for _, s := range tab.syms {
		if s.Type == elf.STT_OBJECT {
			have++
		}
	}
	if have != objects {
		t.Errorf("have %d OBJECT symbols, readelf %d", have, objects)
	}
	for _, name := range []string{"_PyRuntime", "PyExc_RuntimeWarning", "PyZip_Type"} {
		k := symtabtest.RefKey{Name: name}
		for r := range want {
			if r.Name == name {
				k = r
			}
		}
		s, err := tab.Lookup(name)
		if err != nil || s.Value != k.Value || k.Value == 0 {
			t.Errorf("Lookup(%s): have %#x, %v; readelf %#x", name, s.Value, err, k.Value)
		}
	}
}
