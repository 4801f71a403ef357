package symtab

import (
	"debug/elf"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/usdtkit/usdtkit/internal/elf/symtab/symtabtest"
	"github.com/usdtkit/usdtkit/internal/testutil"
)

func TestLookup(t *testing.T) {
	syms := []Symbol{
		{Name: "crt.c", Type: elf.STT_FILE},
		{Name: "dup", Value: 0x10, Type: elf.STT_OBJECT, Bind: elf.STB_LOCAL},
		{Name: "dup", Value: 0x20, Type: elf.STT_OBJECT, Bind: elf.STB_LOCAL},
		{Name: "alias", Value: 0x30, Type: elf.STT_OBJECT, Source: SourceSymtab},
		{Name: "alias", Value: 0x30, Type: elf.STT_OBJECT, Dynamic: true, Version: "V1", Source: SourceDynsym},
		{Name: "counter", Value: 0x40, Size: 8, Type: elf.STT_OBJECT},
		{Name: "old@V1", Value: 0x50, Type: elf.STT_FUNC},
		{Name: "new@@V2", Value: 0x60, Type: elf.STT_FUNC},
		{Name: "only@V1", Value: 0x70, Type: elf.STT_OBJECT},
		{Name: "memcpy", Value: 0x80, Type: elf.STT_FUNC, Dynamic: true, Version: "GLIBC_2.2.5"},
		{Name: "memcpy", Value: 0x90, Type: elf.STT_GNU_IFUNC, Dynamic: true, Version: "GLIBC_2.14"},
	}
	tab := NewTable(syms)
	syms[5].Value = 0xdead // NewTable copied syms
	for _, tc := range []struct {
		name      string
		wantValue uint64
		wantVer   string
		wantErr   error
	}{
		{"counter", 0x40, "", nil},
		{"only", 0x70, "", nil},
		{"only@V1", 0x70, "", nil},
		{"old@V1", 0x50, "", nil},
		{"new@@V2", 0x60, "", nil},
		{"new@V2", 0x60, "", nil},
		{"alias", 0x30, "V1", nil}, // one address: the versioned .dynsym entry
		{"memcpy@GLIBC_2.14", 0x90, "GLIBC_2.14", nil},
		{"memcpy@@GLIBC_2.14", 0x90, "GLIBC_2.14", nil},
		{"memcpy@GLIBC_2.2.5", 0x80, "GLIBC_2.2.5", nil},
		{"memcpy", 0, "", ErrAmbiguous},
		{"dup", 0, "", ErrAmbiguous},
		{"new", 0, "", nil},
		{"crt.c", 0, "", ErrNotFound}, // file names are not indexed
		{"missing", 0, "", ErrNotFound},
		{"memcpy@GLIBC_9", 0, "", ErrNotFound},
		{"counter@V1", 0, "", ErrNotFound},
		{"", 0, "", ErrNotFound},
	} {
		t.Run(tc.name, func(t *testing.T) {
			have, err := tab.Lookup(tc.name)
			if tc.name == "new" {
				tc.wantValue = 0x60
			}
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("have %+v, %v; want error %v", have, err, tc.wantErr)
			}
			if err != nil {
				if have != (Symbol{}) {
					t.Errorf("have %+v with an error, want the zero Symbol", have)
				}
				return
			}
			if have.Value != tc.wantValue || have.Version != tc.wantVer {
				t.Errorf("have %+v, want value %#x version %q", have, tc.wantValue, tc.wantVer)
			}
		})
	}
}

// dataSrcs is a C program of two files, each with its own static
// hidden_count (two LOCAL OBJECTs of one name), and globals defined in the
// first.
var dataSrcs = map[string]string{
	"a.c": `
long counter;
int table[4];
static int hidden_count;
int other(int);
int main(int argc, char **argv) {
	(void)argv;
	hidden_count++;
	counter += table[argc & 3];
	return other(argc) + hidden_count;
}
`,
	"b.c": `
static int hidden_count;
int other(int x) { return hidden_count += x; }
`,
}

// buildDataProgram compiles dataSrcs with gcc and returns the executable.
func buildDataProgram(t *testing.T) string {
	t.Helper()
	gcc := testutil.RequireTool(t, "gcc")
	dir := t.TempDir()
	args := []string{"-O0", "-o", filepath.Join(dir, "data")}
	for name, src := range dataSrcs {
		writeFile(t, filepath.Join(dir, name), src)
		args = append(args, filepath.Join(dir, name))
	}
	if msg, err := exec.Command(gcc, args...).CombinedOutput(); err != nil {
		t.Fatalf("gcc %v: %v\n%s", args, err, msg)
	}
	return filepath.Join(dir, "data")
}

func writeFile(t *testing.T, path, data string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestLookupC finds the data symbols of a gcc-built program at the
// addresses readelf gives them.
func TestLookupC(t *testing.T) {
	path := buildDataProgram(t)
	want := symtabtest.Readelf(t, path)
	tab := NewTable(readFile(t, path))
	for _, tc := range []struct {
		name     string
		size     uint64
		bind     elf.SymBind
		wantErr  error
		wantType elf.SymType
	}{
		{"counter", 8, elf.STB_GLOBAL, nil, elf.STT_OBJECT},
		{"table", 16, elf.STB_GLOBAL, nil, elf.STT_OBJECT},
		{"main", 0, elf.STB_GLOBAL, nil, elf.STT_FUNC},
		{"hidden_count", 0, 0, ErrAmbiguous, 0},
		{"no_such_symbol", 0, 0, ErrNotFound, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			have, err := tab.Lookup(tc.name)
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("have %+v, %v; want error %v", have, err, tc.wantErr)
			}
			if err != nil {
				return
			}
			ref, ok := want[symtabtest.RefKey{Name: tc.name, Value: have.Value}]
			if !ok {
				t.Fatalf("readelf has no %s at %#x", tc.name, have.Value)
			}
			if have.Type != tc.wantType || have.Bind != tc.bind || have.Size != ref.Size ||
				(tc.size != 0 && have.Size != tc.size) || have.Source != SourceSymtab {
				t.Errorf("have %+v, want %v %v size %d from .symtab", have, tc.wantType, tc.bind, ref.Size)
			}
		})
	}
	// Both statics are there, as LOCAL OBJECTs at different addresses.
	statics := map[uint64]bool{}
	for k, w := range want {
		if k.Name == "hidden_count" && w.Type == "OBJECT" {
			statics[k.Value] = true
		}
	}
	if len(statics) != 2 {
		t.Errorf("readelf lists hidden_count at %v, want two addresses", statics)
	}
}

// TestLookupLibc finds versioned symbols of glibc, functions and data.
func TestLookupLibc(t *testing.T) {
	path := testutil.RequireFile(t, libc)
	want := symtabtest.Readelf(t, path)
	tab := NewTable(readFile(t, path))
	for _, tc := range []struct {
		name     string
		wantType elf.SymType
		wantVer  string
		wantErr  error
	}{
		{"malloc", elf.STT_FUNC, "GLIBC_2.2.5", nil},
		{"malloc@@GLIBC_2.2.5", elf.STT_FUNC, "GLIBC_2.2.5", nil},
		{"stdout", elf.STT_OBJECT, "GLIBC_2.2.5", nil},
		{"environ", elf.STT_OBJECT, "GLIBC_2.2.5", nil},
		{"errno", elf.STT_TLS, "GLIBC_PRIVATE", nil},
		{"memcpy@@GLIBC_2.14", elf.STT_GNU_IFUNC, "GLIBC_2.14", nil},
		{"memcpy@GLIBC_2.2.5", elf.STT_FUNC, "GLIBC_2.2.5", nil},
		{"memcpy", 0, "", ErrAmbiguous},
		{"malloc@GLIBC_9.9", 0, "", ErrNotFound},
		{"no_such_symbol_xyz", 0, "", ErrNotFound},
	} {
		t.Run(tc.name, func(t *testing.T) {
			have, err := tab.Lookup(tc.name)
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("have %+v, %v; want error %v", have, err, tc.wantErr)
			}
			if err != nil {
				return
			}
			if have.Type != tc.wantType || have.Version != tc.wantVer || !have.Dynamic {
				t.Errorf("have %+v, want %v version %q from .dynsym", have, tc.wantType, tc.wantVer)
			}
			if _, ok := want[symtabtest.RefKey{Name: PlainName(tc.name), Value: have.Value}]; !ok {
				t.Errorf("readelf has no %s at %#x", tc.name, have.Value)
			}
		})
	}
}
