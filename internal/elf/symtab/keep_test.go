package symtab

import (
	"cmp"
	"debug/elf"
	"encoding/binary"
	"errors"
	"hash/fnv"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/usdtkit/usdtkit/elfnotes"
	"github.com/usdtkit/usdtkit/internal/elf/symtab/symtabtest"
	"github.com/usdtkit/usdtkit/internal/testutil"
)

// installedLibc returns the path of the C library gcc links programs
// with, found at test time.
func installedLibc(t testing.TB) string {
	t.Helper()
	gcc := testutil.RequireTool(t, "gcc")
	out, err := exec.Command(gcc, "-print-file-name=libc.so.6").Output()
	if err != nil {
		t.Fatalf("gcc -print-file-name=libc.so.6: %v", err)
	}
	path := strings.TrimSpace(string(out))
	if !filepath.IsAbs(path) {
		t.Fatalf("gcc does not know where libc.so.6 is (%q)", path)
	}
	path, err = filepath.EvalSymlinks(path)
	if err != nil {
		t.Fatal(err)
	}
	return testutil.RequireFile(t, path)
}

// versionedSymtab is a library whose .symtab has versioned names ("f@V1",
// "f@@V2") that .dynsym lists by plain name, and two versions of one name
// at one address in .dynsym ("g@V1", "g@@V2") where .symtab has another
// name ("g2").
func versionedSymtab() symtabtest.ELF {
	const text = symtabtest.Base + symtabtest.DataOff
	bo := binary.LittleEndian
	str := symtabtest.NewStrtab("f@V1", "f@@V2", "f", "g", "g2", "V1", "V2", "lib.so")
	sym := func(name string, value uint64) symtabtest.Sym {
		return symtabtest.Sym{Name: str.Offs[name], Type: elf.STT_FUNC, Bind: elf.STB_GLOBAL, Shndx: 1, Value: value, Size: 4}
	}
	return symtabtest.ELF{Class: elf.ELFCLASS64, Order: bo, Type: elf.ET_DYN, Sections: []symtabtest.Section{
		{Name: ".text", Type: elf.SHT_PROGBITS, Data: make([]byte, 16)},
		{Name: ".symtab", Type: elf.SHT_SYMTAB, Link: 3, Entsize: symtabtest.Sym64Size,
			Data: symtabtest.EncodeSyms(elf.ELFCLASS64, bo, sym("f@V1", text), sym("f@@V2", text+4), sym("g2", text+8))},
		{Name: ".strtab", Type: elf.SHT_STRTAB, Data: str.Data},
		{Name: ".dynsym", Type: elf.SHT_DYNSYM, Link: 3, Entsize: symtabtest.Sym64Size,
			Data: symtabtest.EncodeSyms(elf.ELFCLASS64, bo, sym("f", text), sym("f", text+4), sym("g", text+8), sym("g", text+8))},
		// Versions: lib.so (1, the base), V1 (2), V2 (3); 0x8000 hides one.
		{Name: ".gnu.version", Type: elf.SHT_GNU_VERSYM, Link: 4, Entsize: 2, Data: symtabtest.EncodeVersym(bo, 0x8000|2, 3, 0x8000|2, 3)},
		{Name: ".gnu.version_d", Type: elf.SHT_GNU_VERDEF, Link: 3, Info: 3,
			Data: symtabtest.EncodeVerdef(bo, str.Offs["lib.so"], str.Offs["V1"], str.Offs["V2"])},
	}}
}

// TestReadKeepAgrees checks ReadOptions.Keep: a read that keeps some plain
// names gives exactly the symbols of the whole list with those plain
// names, in the same order, with the same fields. Every plain name is
// looked up on its own in the small files; in the large ones (libc with
// its separate debug file where one is installed, a Go binary), the names
// are looked up in groups, each group one read, the groups covering every
// name.
func TestReadKeepAgrees(t *testing.T) {
	type file struct {
		name string
		open func(t *testing.T) (f, debug *elfnotes.File)
	}
	bytesFile := func(b []byte) func(t *testing.T) (f, debug *elfnotes.File) {
		return func(t *testing.T) (*elfnotes.File, *elfnotes.File) { return symtabtest.NewFile(t, b), nil }
	}
	pathFile := func(path func(t *testing.T) string) func(t *testing.T) (f, debug *elfnotes.File) {
		return func(t *testing.T) (*elfnotes.File, *elfnotes.File) {
			p := path(t)
			f, err := elfnotes.Open(p)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { f.Close() })
			d, err := OpenDebugFile(f, p, nil)
			if errors.Is(err, ErrNoDebugFile) {
				return f, nil
			}
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { d.Close() })
			return f, d.File
		}
	}
	files := []file{
		{"lib64", bytesFile(symtabtest.Lib(elf.ELFCLASS64, binary.LittleEndian).Bytes())},
		{"lib32be", bytesFile(symtabtest.Lib(elf.ELFCLASS32, binary.BigEndian).Bytes())},
		{"data", bytesFile(dataLib().Bytes())},
		{"versioned-symtab", bytesFile(versionedSymtab().Bytes())},
		{"gcc-data", pathFile(buildDataProgram)},
		{"go", pathFile(func(t *testing.T) string { return testutil.BuildGoSource(t, goProgram) })},
		{"go-stripped", pathFile(func(t *testing.T) string { return testutil.BuildGoSource(t, goProgram, "-ldflags=-s -w") })},
		{"libc", pathFile(func(t *testing.T) string { return installedLibc(t) })},
	}
	elfs, err := filepath.Glob("testdata/*.elf")
	if err != nil || len(elfs) == 0 {
		t.Fatalf("no testdata/*.elf (%v)", err)
	}
	for _, p := range elfs {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, file{filepath.Base(p), bytesFile(b)})
	}
	for _, tc := range files {
		t.Run(tc.name, func(t *testing.T) {
			f, debug := tc.open(t)
			all, warnings, err := ReadPartialWith(f, &ReadOptions{Debug: debug})
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			seen := make(map[string]bool)
			for _, s := range all {
				if p := PlainName(s.Name); !seen[p] {
					seen[p] = true
					names = append(names, p)
				}
			}
			if len(names) == 0 {
				t.Fatal("no symbols")
			}
			// Groups of names: each alone in a small file, by hash in a
			// large one.
			groups := len(names)
			if groups > 64 {
				groups = 64
			}
			group := func(name string) int {
				h := fnv.New32a()
				h.Write([]byte(name))
				return int(h.Sum32() % uint32(groups))
			}
			if groups == len(names) {
				index := make(map[string]int, len(names))
				for i, n := range names {
					index[n] = i
				}
				group = func(name string) int {
					if i, ok := index[name]; ok {
						return i
					}
					return -1
				}
			}
			found := 0
			for g := range groups {
				keep := func(plain string) bool { return group(plain) == g }
				var want []Symbol
				for _, s := range all {
					if keep(PlainName(s.Name)) {
						want = append(want, s)
					}
				}
				have, haveWarnings, err := ReadPartialWith(f, &ReadOptions{Debug: debug, Keep: keep})
				if err != nil {
					t.Fatalf("group %d: %v", g, err)
				}
				if have == nil || len(haveWarnings) > len(warnings) {
					t.Errorf("group %d: have %v symbols and %d warnings, want a list and at most %d warnings", g, have == nil, len(haveWarnings), len(warnings))
				}
				if len(have) != len(want) || (len(want) > 0 && !reflect.DeepEqual(have, want)) {
					t.Errorf("group %d: have %d symbols, want %d:\nhave %+v\nwant %+v", g, len(have), len(want), have, want)
				}
				found += len(have)
			}
			if found != len(all) {
				t.Errorf("the groups found %d symbols, the whole list has %d", found, len(all))
			}
			none, _, err := ReadPartialWith(f, &ReadOptions{Debug: debug, Keep: func(string) bool { return false }})
			if err != nil || none == nil || len(none) != 0 {
				t.Errorf("keeping nothing: have %d symbols (nil %v), %v; want an empty list", len(none), none == nil, err)
			}
		})
	}
}

// TestSortSymbolsStable: symbols equal in Value, Name and Version keep
// their order, so that a subset sorts as it does within the whole.
func TestSortSymbolsStable(t *testing.T) {
	var syms []Symbol
	for i := range 100 {
		syms = append(syms, Symbol{Name: "a", Value: uint64(3 - i%3), Size: uint64(i)})
	}
	sortSymbols(syms)
	for i := 1; i < len(syms); i++ {
		a, b := syms[i-1], syms[i]
		if a.Value > b.Value || (a.Value == b.Value && a.Size >= b.Size) {
			t.Fatalf("at %d: have %+v before %+v, want by value, then in input order", i, a, b)
		}
	}
}

// TestRadixSort compares radixSort with a stable sort by value, on values
// that differ in low, middle and high bytes and repeat.
func TestRadixSort(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{0, 1, 2, 3, 100, 5000} {
		keys := make([]sortKey, n)
		for i := range keys {
			v := rng.Uint64N(64)
			switch rng.IntN(3) {
			case 1:
				v <<= 20
			case 2:
				v = v<<56 | 0x7f0000
			}
			keys[i] = sortKey{v, i}
		}
		want := slices.Clone(keys)
		slices.SortStableFunc(want, func(a, b sortKey) int { return cmp.Compare(a.value, b.value) })
		if have := radixSort(keys); !slices.Equal(have, want) {
			t.Errorf("%d keys: have %v, want %v", n, have, want)
		}
	}
}
