package symtabtest

import (
	"bufio"
	"bytes"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/usdtkit/usdtkit/internal/testutil"
)

// RefKey identifies a symbol in readelf's listing: its name without a
// "@VERSION" suffix, and its value.
type RefKey struct {
	Name  string
	Value uint64
}

// RefSym is what GNU readelf -sW says about a defined symbol, its entries
// in .symtab and .dynsym merged.
type RefSym struct {
	// Type is the type as readelf names it ("FUNC", "IFUNC", "OBJECT",
	// ...) and Size the size: of the .symtab entry if there is one, else
	// of the .dynsym entry Version is taken from.
	Type string
	Size uint64
	// Dynamic reports an entry in .dynsym, Symtab one in .symtab.
	Dynamic, Symtab bool
	// Version is the version of the .dynsym entry, or "": the default
	// ("@@") one where one address carries several versions of the name
	// (glibc 2.34's libpthread move), else the first.
	Version string
	// DefaultVer reports that Version is the default one.
	DefaultVer bool
}

// Readelf runs readelf -sW --dyn-syms on path and returns the defined,
// named symbols of both tables, merged by RefKey: section symbols,
// undefined ones and those readelf marks <corrupt> (a name or version it
// cannot read) aside. It skips tb when readelf is not installed, as
// testutil.RequireTool does.
func Readelf(tb testing.TB, path string) map[RefKey]RefSym {
	tb.Helper()
	readelf := testutil.RequireTool(tb, "readelf")
	out, err := exec.Command(readelf, "-sW", "--dyn-syms", path).Output()
	if err != nil {
		tb.Fatalf("readelf -sW --dyn-syms %s: %v", path, err)
	}
	syms := make(map[RefKey]RefSym)
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
			continue
		}
		value, err := strconv.ParseUint(f[1], 16, 64)
		if err != nil {
			tb.Fatalf("readelf value %q: %v", f[1], err)
		}
		size, err := strconv.ParseUint(f[2], 0, 64)
		if err != nil {
			tb.Fatalf("readelf size %q: %v", f[2], err)
		}
		// "name@@V" is the default version, "name@V" a hidden one.
		name, version, _ := strings.Cut(f[7], "@")
		isDefault := strings.HasPrefix(version, "@")
		k := RefKey{name, value}
		s := syms[k]
		switch {
		case !dynamic:
			s.Type, s.Size, s.Symtab = f[3], size, true
		case !s.Dynamic || (isDefault && !s.DefaultVer):
			if !s.Symtab {
				s.Type, s.Size = f[3], size
			}
			s.Dynamic, s.Version, s.DefaultVer = true, strings.TrimPrefix(version, "@"), isDefault
		}
		syms[k] = s
	}
	return syms
}
