package uprobe

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/usdtkit/usdtkit/elfnotes"
	"github.com/usdtkit/usdtkit/internal/testutil"
)

// This file cross-checks Symbols with GNU readelf, which we did not write.

// refKey identifies a function symbol: its name without a "@VERSION"
// suffix, and its value.
type refKey struct {
	name  string
	value uint64
}

// refSym is what readelf says about a defined function symbol.
type refSym struct {
	kind    SymbolKind
	size    uint64
	dynamic bool
	version string // from .dynsym
	// defaultVer reports that version is the default ("@@") one.
	defaultVer bool
}

// readelfSymbols runs readelf -sW --dyn-syms and returns the defined
// FUNC/IFUNC symbols of both tables, merged by refKey.
func readelfSymbols(t *testing.T, path string) map[refKey]refSym {
	t.Helper()
	out := runReadelf(t, "-sW", "--dyn-syms", path)
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
		var f [7]string
		rest := line
		for i := range f {
			f[i], rest = nextField(rest)
		}
		if !strings.HasSuffix(f[0], ":") || f[0] == "Num:" {
			continue
		}
		var kind SymbolKind
		switch f[3] {
		case "FUNC":
			kind = SymFunc
		case "IFUNC":
			kind = SymIFunc
		default:
			continue
		}
		if f[6] == "UND" {
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
		// "name@@V" is the default version, "name@V" a hidden one. One
		// address may carry several versions of a name (glibc 2.34's
		// libpthread move); the default one is expected.
		name, version, _ := strings.Cut(rest, "@")
		isDefault := strings.HasPrefix(version, "@")
		version = strings.TrimPrefix(version, "@")
		k := refKey{name, value}
		s := syms[k]
		s.kind, s.size = kind, size
		if dynamic && (!s.dynamic || (isDefault && !s.defaultVer)) {
			s.dynamic, s.version, s.defaultVer = true, version, isDefault
		}
		syms[k] = s
	}
	return syms
}

// nextField splits off the first space-separated field of s.
func nextField(s string) (field, rest string) {
	s = strings.TrimLeft(s, " ")
	field, rest, _ = strings.Cut(s, " ")
	return field, strings.TrimLeft(rest, " ")
}

// refLoad is a PT_LOAD segment as readelf -lW prints it.
type refLoad struct{ off, vaddr, filesz uint64 }

func readelfLoads(t *testing.T, path string) []refLoad {
	t.Helper()
	var loads []refLoad
	for line := range strings.Lines(string(runReadelf(t, "-lW", path))) {
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

func runReadelf(t *testing.T, args ...string) []byte {
	t.Helper()
	readelf := testutil.RequireTool(t, "readelf")
	out, err := exec.Command(readelf, args...).Output()
	if err != nil {
		t.Fatalf("readelf %v: %v", args, err)
	}
	return out
}

// compareReadelf checks that Symbols(path) lists exactly the defined
// function symbols readelf shows, with the same kind, size, version and the
// offset that readelf -lW gives.
func compareReadelf(t *testing.T, path string) []Symbol {
	t.Helper()
	have := openSymbols(t, path)
	want := readelfSymbols(t, path)
	loads := readelfLoads(t, path)
	if len(want) == 0 {
		t.Fatalf("readelf lists no function symbols in %s", path)
	}
	seen := make(map[refKey]bool, len(have))
	for _, s := range have {
		name, _, _ := strings.Cut(s.Name, "@")
		k := refKey{name, s.Value}
		if seen[k] {
			t.Errorf("%s@%#x listed twice", s.Name, s.Value)
		}
		seen[k] = true
		w, ok := want[k]
		if !ok {
			t.Errorf("have %s at %#x, readelf does not", s.Name, s.Value)
			continue
		}
		if s.Kind != w.kind || s.Size != w.size || s.Dynamic != w.dynamic || s.Version != w.version {
			t.Errorf("%s: have kind %v size %d dynamic %v version %q; readelf %v %d %v %q",
				s.Name, s.Kind, s.Size, s.Dynamic, s.Version, w.kind, w.size, w.dynamic, w.version)
		}
		if wantOff := refOffset(loads, s.Value); s.Offset != wantOff {
			t.Errorf("%s: have offset %#x, want %#x", s.Name, s.Offset, wantOff)
		}
	}
	for k := range want {
		if !seen[k] {
			t.Errorf("readelf has %s at %#x, Symbols does not", k.name, k.value)
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
