package uprobe

import (
	"debug/elf"
	"strings"
	"testing"

	"github.com/usdtkit/usdtkit/elfnotes"
	"github.com/usdtkit/usdtkit/internal/elf/symtab/symtabtest"
	"github.com/usdtkit/usdtkit/internal/testutil"
)

const libc = "/lib/x86_64-linux-gnu/libc.so.6"

// find returns the symbols called name (Name or DisplayName).
func find(syms []Symbol, name string) []Symbol {
	var out []Symbol
	for _, s := range syms {
		if s.Name == name || s.DisplayName() == name {
			out = append(out, s)
		}
	}
	return out
}

func TestSymbolsReadelf(t *testing.T) {
	for _, tc := range []struct {
		name string
		path func(t *testing.T) string
	}{
		{"libc", func(t *testing.T) string { return testutil.RequireFile(t, libc) }},
		{"python3.11", func(t *testing.T) string { return testutil.RequireFile(t, testutil.Python311) }},
		{"libstdc++", func(t *testing.T) string { return testutil.RequireFile(t, testutil.LibStdcxx) }},
		{"gcc-exe", func(t *testing.T) string { return buildC(t, sizeZeroSrc, "sizezero") }},
		{"gcc-versioned-lib", buildVersionedLib},
	} {
		t.Run(tc.name, func(t *testing.T) {
			compareReadelf(t, tc.path(t))
		})
	}
}

func TestSymbolsLibc(t *testing.T) {
	path := testutil.RequireFile(t, libc)
	syms := compareReadelf(t, path)
	want := readelfFunctions(t, path)
	loads := readelfLoads(t, path)
	for _, tc := range []struct {
		name    string
		kind    SymbolKind
		version string
	}{
		{"malloc", SymFunc, "GLIBC_2.2.5"},
		{"free", SymFunc, "GLIBC_2.2.5"},
		{"memcpy", SymIFunc, "GLIBC_2.14"},
		{"strlen", SymIFunc, "GLIBC_2.2.5"},
		// Two versions at one address, listed once with the default.
		{"pthread_create", SymFunc, "GLIBC_2.34"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var have *Symbol
			values := map[uint64]bool{}
			for _, s := range find(syms, tc.name) {
				if values[s.Value] {
					t.Errorf("%s at %#x listed twice", s.Name, s.Value)
				}
				values[s.Value] = true
				if s.Version == tc.version {
					have = &s
				}
			}
			if have == nil {
				t.Fatalf("no %s@%s in %v", tc.name, tc.version, find(syms, tc.name))
			}
			if have.Kind != tc.kind || !have.Dynamic || have.Source != SourceDynsym || have.Bind != elf.STB_GLOBAL {
				t.Errorf("have %+v, want kind %v from .dynsym, global", *have, tc.kind)
			}
			if _, ok := want[symtabtest.RefKey{Name: tc.name, Value: have.Value}]; !ok {
				t.Errorf("readelf has no %s at %#x", tc.name, have.Value)
			}
			if wantOff := refOffset(loads, have.Value); have.Offset != wantOff || wantOff == 0 {
				t.Errorf("have offset %#x, want %#x (readelf -lW math)", have.Offset, wantOff)
			}
		})
	}

	f, err := elfnotes.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if IsGo(f) {
		t.Error("IsGo(libc) = true, want false")
	}
}

func TestSymbolsDemangle(t *testing.T) {
	syms := openSymbols(t, testutil.RequireFile(t, testutil.LibStdcxx))
	for _, tc := range []struct {
		name, want string
	}{
		{"_ZNSt6thread6detachEv", "std::thread::detach()"},
		{"_ZSt9terminatev", "std::terminate()"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			have := find(syms, tc.name)
			if len(have) == 0 {
				t.Fatal("not found")
			}
			if have[0].Demangled != tc.want || have[0].DisplayName() != tc.want {
				t.Errorf("have Demangled %q, DisplayName %q; want %q", have[0].Demangled, have[0].DisplayName(), tc.want)
			}
		})
	}
	mangled := 0
	for _, s := range syms {
		if strings.HasPrefix(s.Demangled, "std::") {
			mangled++
		}
		if !strings.HasPrefix(s.Name, "_Z") && (s.Demangled != "" || s.DisplayName() != s.Name) {
			t.Errorf("%s: have Demangled %q, want none", s.Name, s.Demangled)
		}
	}
	if mangled < 100 {
		t.Errorf("have %d std:: functions, want hundreds", mangled)
	}
}

// sizeZeroSrc defines nosize in assembly without a .size directive, so its
// st_size is 0.
const sizeZeroSrc = `
__asm__(".text\n.globl nosize\n.type nosize, @function\nnosize:\n\tret\n");
int main(void) { return 0; }
`

func TestSymbolsSizeZero(t *testing.T) {
	syms := openSymbols(t, buildC(t, sizeZeroSrc, "sizezero"))
	for _, tc := range []struct {
		name     string
		wantSize bool
	}{
		{"nosize", false},
		{"main", true},
	} {
		have := find(syms, tc.name)
		if len(have) != 1 {
			t.Fatalf("%s: have %v, want one", tc.name, have)
		}
		s := have[0]
		if (s.Size != 0) != tc.wantSize || s.Kind != SymFunc || s.Source != SourceSymtab || s.Offset == 0 {
			t.Errorf("have %+v, want size>0 %v, func from .symtab with an offset", s, tc.wantSize)
		}
	}
}

// buildVersionedLib builds a shared library whose foo has two versions,
// set with .symver (so .symtab has "foo@V1" and "foo@@V2"), and whose bar
// gets V1 from the version script alone.
func buildVersionedLib(t *testing.T) string {
	src := `
int foo_old(void) { return 1; }
int foo_new(void) { return 2; }
__asm__(".symver foo_old,foo@V1");
__asm__(".symver foo_new,foo@@V2");
int bar(void) { return 3; }
`
	script := t.TempDir() + "/v.map"
	writeFile(t, script, "V1 { global: foo; bar; local: *; };\nV2 { global: foo; } V1;\n")
	return buildC(t, src, "libv.so", "-shared", "-fPIC", "-Wl,--version-script="+script)
}

func TestSymbolsVersioned(t *testing.T) {
	syms := openSymbols(t, buildVersionedLib(t))
	type nv struct{ name, version string }
	have := map[nv]Symbol{}
	for _, s := range syms {
		have[nv{s.Name, s.Version}] = s
	}
	for _, want := range []nv{{"foo", "V1"}, {"foo", "V2"}, {"bar", "V1"}} {
		s, ok := have[want]
		if !ok {
			t.Errorf("no %s version %s in %+v", want.name, want.version, syms)
			continue
		}
		if !s.Dynamic || s.Source != SourceSymtab {
			t.Errorf("have %+v, want Dynamic from .symtab", s)
		}
	}
	if have[nv{"foo", "V1"}].Value != have[nv{"foo_old", ""}].Value {
		t.Errorf("foo@V1 and foo_old differ: %+v", syms)
	}
}
