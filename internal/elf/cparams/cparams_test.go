package cparams

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
)

// TestRead: the parameters gcc's DWARF gives, named as bpftrace 0.17's
// -lv names them (dwarf_parser.cpp's get_type_name: "T*", "T* const",
// "const T", "struct S", typedefs by name).
func TestRead(t *testing.T) {
	gcc, err := exec.LookPath("gcc")
	if err != nil {
		if os.Getenv("USDTKIT_REQUIRE_BPF") == "1" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	dir := t.TempDir()
	src := filepath.Join(dir, "p.c")
	code := `typedef unsigned long ulong_t;
struct S { int a; };
union U { int a; long b; };
enum E { E0 };
int f(int n, const char *s, char *const p, struct S *sp, union U u, enum E e, ulong_t x, void *v, const int **pp) { return n; }
void g(void) {}
int main(int argc, char **argv) { return f(argc, 0, 0, 0, (union U){0}, E0, 0, 0, 0); }
`
	if err := os.WriteFile(src, []byte(code), 0o644); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "p")
	if out, err := exec.Command(gcc, "-g", "-O0", "-o", bin, src).CombinedOutput(); err != nil {
		t.Fatalf("gcc: %v\n%s", err, out)
	}
	f, err := os.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	params, err := Read(f)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]string{
		"f":    {"int n", "const char* s", "char* const p", "struct S* sp", "union U u", "enum E e", "ulong_t x", "void* v", "const int** pp"},
		"g":    nil,
		"main": {"int argc", "char** argv"},
	}
	for name, w := range want {
		if have, ok := params[name]; !ok || !slices.Equal(have, w) {
			t.Errorf("%s: %q (found %v), want %q", name, have, ok, w)
		}
	}
}

// FuzzRead: any bytes give parameters or an error, never a panic.
func FuzzRead(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte("\x7fELF\x02\x01\x01"))
	if b, err := os.ReadFile("/proc/self/exe"); err == nil && len(b) < 64<<20 {
		f.Add(b[:min(len(b), 4096)])
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		params, err := Read(bytes.NewReader(b))
		if err != nil && params != nil {
			t.Errorf("error %v with parameters", err)
		}
	})
}
