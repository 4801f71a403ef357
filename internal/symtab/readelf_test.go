package symtab

import (
	"bufio"
	"bytes"
	"debug/elf"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/usdtkit/usdtkit/elfnotes"
	"github.com/usdtkit/usdtkit/internal/testutil"
)

// This file cross-checks Read and Lookup with GNU readelf, which we did not
// write.

const libc = "/lib/x86_64-linux-gnu/libc.so.6"

// refKey identifies a symbol: its name without a "@VERSION" suffix, and
// its value.
type refKey struct {
	name  string
	value uint64
}

// refSym is what readelf -sW says about a defined symbol.
type refSym struct {
	typ     string // "OBJECT", "FUNC", ...
	size    uint64
	dynamic bool
	// symtab reports an entry of .symtab, whose type and size win;
	// defaultVer a default ("@@") version in .dynsym.
	symtab, defaultVer bool
}

// readelfTypes maps symbol types to readelf's names for them.
var readelfTypes = map[elf.SymType]string{
	elf.STT_NOTYPE: "NOTYPE", elf.STT_OBJECT: "OBJECT", elf.STT_FUNC: "FUNC", elf.STT_FILE: "FILE",
	elf.STT_COMMON: "COMMON", elf.STT_TLS: "TLS", elf.STT_GNU_IFUNC: "IFUNC",
}

// readelfSymbols runs readelf -sW --dyn-syms and returns the defined,
// named symbols of both tables (section symbols aside), merged by refKey.
func readelfSymbols(t *testing.T, path string) map[refKey]refSym {
	t.Helper()
	readelf := testutil.RequireTool(t, "readelf")
	out, err := exec.Command(readelf, "-sW", "--dyn-syms", path).Output()
	if err != nil {
		t.Fatalf("readelf -sW --dyn-syms %s: %v", path, err)
	}
	syms := make(map[refKey]refSym)
	dynamic := false
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "Symbol table '") {
			dynamic = strings.HasPrefix(line, "Symbol table '.dynsym'")
			continue
		}
		// "   Num:    Value          Size Type    Bind   Vis      Ndx Name"
		f := strings.Fields(line)
		if len(f) < 8 || !strings.HasSuffix(f[0], ":") || f[0] == "Num:" || f[6] == "UND" || f[3] == "SECTION" {
			continue
		}
		if strings.Contains(f[7], "<corrupt>") {
			// readelf's mark for a name or version it cannot read:
			// ReadPartial skips such a symbol with a warning.
			continue
		}
		value, err := strconv.ParseUint(f[1], 16, 64)
		if err != nil {
			t.Fatalf("readelf value %q: %v", f[1], err)
		}
		size, err := strconv.ParseUint(f[2], 0, 64)
		if err != nil {
			t.Fatalf("readelf size %q: %v", f[2], err)
		}
		// Several versions of a name at one address are one symbol:
		// the first, unless a later one is the default ("name@@V").
		name, version, _ := strings.Cut(f[7], "@")
		isDefault := strings.HasPrefix(version, "@")
		k := refKey{name, value}
		s := syms[k]
		switch {
		case !dynamic:
			s.typ, s.size, s.symtab = f[3], size, true
		case !s.dynamic || (isDefault && !s.defaultVer):
			if !s.symtab {
				s.typ, s.size = f[3], size
			}
			s.dynamic = true
		}
		s.defaultVer = s.defaultVer || (dynamic && isDefault)
		syms[k] = s
	}
	return syms
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
	compareSymbols(t, have, readelfSymbols(t, path))
	return have
}

// compareSymbols checks that have holds exactly the symbols of want, as
// readelfSymbols returns them, with the same type and size.
func compareSymbols(t *testing.T, have []Symbol, want map[refKey]refSym) {
	t.Helper()
	if len(want) == 0 {
		t.Fatal("readelf lists no symbols")
	}
	seen := make(map[refKey]bool, len(have))
	for _, s := range have {
		k := refKey{PlainName(s.Name), s.Value}
		if seen[k] && s.Type != elf.STT_FILE { // crtstuff.c, from two objects
			t.Errorf("%s at %#x listed twice", s.Name, s.Value)
		}
		seen[k] = true
		w, ok := want[k]
		if !ok {
			t.Errorf("have %s at %#x, readelf does not", s.Name, s.Value)
			continue
		}
		if readelfTypes[s.Type] != w.typ || s.Size != w.size || s.Dynamic != w.dynamic {
			t.Errorf("%s: have %v size %d dynamic %v; readelf %s %d %v", s.Name, s.Type, s.Size, s.Dynamic, w.typ, w.size, w.dynamic)
		}
	}
	for k := range want {
		if !seen[k] {
			t.Errorf("readelf has %s at %#x, Read does not", k.name, k.value)
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
	want := readelfSymbols(t, path)
	tab := NewTable(readFile(t, path))
	objects := 0
	for k, w := range want {
		if w.typ != "OBJECT" {
			continue
		}
		objects++
		s, err := tab.Lookup(k.name)
		if err != nil {
			t.Errorf("Lookup(%s): %v", k.name, err)
			continue
		}
		if s.Value != k.value || s.Type != elf.STT_OBJECT || s.Size != w.size {
			t.Errorf("Lookup(%s): have %+v, readelf %#x size %d", k.name, s, k.value, w.size)
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
		k := refKey{name: name}
		for r := range want {
			if r.name == name {
				k = r
			}
		}
		s, err := tab.Lookup(name)
		if err != nil || s.Value != k.value || k.value == 0 {
			t.Errorf("Lookup(%s): have %#x, %v; readelf %#x", name, s.Value, err, k.value)
		}
	}
}
