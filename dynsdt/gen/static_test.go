package gen

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/usdtkit/usdtkit/dynsdt"
)

var staticSpec = dynsdt.ProviderSpec{Name: "myapp", Probes: []dynsdt.ProbeSpec{
	{Name: "req__start", Args: []dynsdt.ArgType{dynsdt.String, dynsdt.Int32, dynsdt.Bool}},
	{Name: "req__done", Args: []dynsdt.ArgType{dynsdt.Int64}},
	{Name: "tick"},
}}

func TestParseStaticTable(t *testing.T) {
	b := StaticTableData(&staticSpec)
	// Bytes after the table are not part of it.
	tab, n, err := ParseStaticTable(append(b, 0xff, 0xff))
	if err != nil {
		t.Fatal(err)
	}
	if n != len(b) {
		t.Errorf("size %d, want %d", n, len(b))
	}
	if tab.Provider != "myapp" || len(tab.Probes) != 3 || tab.Probes[0].Name != "req__start" ||
		len(tab.Probes[0].Args) != 3 || tab.Probes[0].Args[0] != dynsdt.String || len(tab.Probes[2].Args) != 0 {
		t.Errorf("table %+v", tab)
	}
	if tab.Sems != len(b)-6 {
		t.Errorf("semaphores at %d, want %d", tab.Sems, len(b)-6)
	}
	if tab.Stub(1) != "usdtkit_"+tab.Token+"_1" {
		t.Errorf("stub name %q", tab.Stub(1))
	}
	tests := []struct {
		name string
		edit func([]byte) []byte
	}{
		{"short", func(b []byte) []byte { return b[:10] }},
		{"magic", func(b []byte) []byte { b[0] = 'x'; return b }},
		{"truncated semaphores", func(b []byte) []byte { return b[:len(b)-1] }},
		{"zero probes", func(b []byte) []byte { b[20] = 0; return b }},
		{"more probes than names", func(b []byte) []byte { b[20] = 9; return append(b, make([]byte, 12)...) }},
		{"odd description", func(b []byte) []byte { b[16]++; return b }},
		{"bad type", func(b []byte) []byte { return bytes.Replace(b, []byte("int32"), []byte("int33"), 1) }},
		{"bytes in the padding", func(b []byte) []byte { b[staticHeaderSize+int(b[16])-1] = '0'; return b }},
		{"extra padding", func(b []byte) []byte {
			n := int(b[16])
			b[16] += 8
			return append(b[:staticHeaderSize+n], append(make([]byte, 8), b[staticHeaderSize+n:]...)...)
		}},
		{"token of other probes", func(b []byte) []byte { return bytes.Replace(b, []byte("req__done"), []byte("req__dune"), 1) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := ParseStaticTable(tt.edit(StaticTableData(&staticSpec)))
			if !errors.Is(err, ErrStaticTable) {
				t.Errorf("have %v, want ErrStaticTable", err)
			}
		})
	}
}

func FuzzParseStaticTable(f *testing.F) {
	f.Add(StaticTableData(&staticSpec))
	f.Add([]byte(StaticMagic))
	f.Fuzz(func(t *testing.T, b []byte) {
		tab, n, err := ParseStaticTable(b)
		if err != nil {
			return
		}
		if n > len(b) || tab.Sems+2*len(tab.Probes) != n {
			t.Fatalf("size %d, semaphores at %d for %d probes, in %d bytes", n, tab.Sems, len(tab.Probes), len(b))
		}
		// What parses is what the generator writes for it, up to the
		// semaphores, whose values a running program changes.
		p := dynsdt.ProviderSpec{Name: tab.Provider, Probes: tab.Probes}
		if data := StaticTableData(&p); len(data) != n || !bytes.Equal(data[:tab.Sems], b[:tab.Sems]) {
			t.Fatalf("table %+v does not regenerate its bytes", tab)
		}
	})
}

// TestGenerateStatic checks the files gen --static writes: their names, that
// the table in the Go file is the one ParseStaticTable reads, and that every
// stub is declared for amd64 and arm64 and a no-op elsewhere.
func TestGenerateStatic(t *testing.T) {
	files, err := Static(&staticSpec, "probes")
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]string{}
	for _, f := range files {
		byName[f.Name] = string(f.Data)
	}
	for _, name := range []string{"myapp.go", "myapp_stubs.go", "myapp_other.go", "myapp_amd64.s", "myapp_arm64.s"} {
		if _, ok := byName[name]; !ok {
			t.Fatalf("no %s among %d files", name, len(files))
		}
	}
	tok := staticToken(&staticSpec)
	for i := range staticSpec.Probes {
		stub := staticStub(tok, i)
		for _, name := range []string{"myapp_stubs.go", "myapp_other.go", "myapp_amd64.s", "myapp_arm64.s", "myapp.go"} {
			if !strings.Contains(byName[name], stub) {
				t.Errorf("%s does not name %s", name, stub)
			}
		}
	}
	for _, want := range []string{"func ReqStart(arg0 string, arg1 int32, arg2 bool)", "func ReqStartEnabled() bool", "func Load(opts *dynsdt.Options) error", "func Close() error", "func Tick()"} {
		if !strings.Contains(byName["myapp.go"], want) {
			t.Errorf("myapp.go lacks %q", want)
		}
	}
	if _, err := Static(&dynsdt.ProviderSpec{Name: "x", Probes: []dynsdt.ProbeSpec{{Name: "a"}, {Name: "A"}}}, "p"); !errors.Is(err, dynsdt.ErrSpec) {
		t.Errorf("clashing Go names: %v", err)
	}
}

// TestGenerateStaticInlines: the compiler inlines every probe's Xxx and
// XxxEnabled, whatever its arguments (a string, bytes, MaxArgs of them),
// so that an untraced probe costs its caller a load and a branch, not a
// call. It builds the generated package with go build -gcflags=-m.
func TestGenerateStaticInlines(t *testing.T) {
	var many []dynsdt.ArgType
	for range dynsdt.MaxArgs {
		many = append(many, dynsdt.Int64)
	}
	spec := &dynsdt.ProviderSpec{Name: "inl", Probes: []dynsdt.ProbeSpec{
		{Name: "none"},
		{Name: "one", Args: []dynsdt.ArgType{dynsdt.Int64}},
		{Name: "two", Args: []dynsdt.ArgType{dynsdt.Int32, dynsdt.Int32}},
		{Name: "flag", Args: []dynsdt.ArgType{dynsdt.Bool, dynsdt.Int64}},
		{Name: "flags", Args: []dynsdt.ArgType{dynsdt.Bool, dynsdt.Bool}},
		{Name: "ptr", Args: []dynsdt.ArgType{dynsdt.Pointer, dynsdt.Uint8}},
		{Name: "str", Args: []dynsdt.ArgType{dynsdt.String, dynsdt.Int32, dynsdt.Bool}},
		{Name: "buf", Args: []dynsdt.ArgType{dynsdt.Bytes, dynsdt.Uint64}},
		{Name: "mixed", Args: []dynsdt.ArgType{dynsdt.Int8, dynsdt.Uint16, dynsdt.Int32, dynsdt.Pointer, dynsdt.Bool, dynsdt.Int64}},
		{Name: "many", Args: many},
	}}
	files, err := Static(spec, "inl")
	if err != nil {
		t.Fatal(err)
	}
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	sum, err := os.ReadFile(filepath.Join(root, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	write := func(name string, data []byte) {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("go.mod", []byte("module example.com/inl\n\ngo 1.26\n\nrequire github.com/usdtkit/usdtkit v0.0.0\n\nreplace github.com/usdtkit/usdtkit => "+root+"\n"))
	write("go.sum", sum)
	for _, f := range files {
		write(f.Name, f.Data)
	}
	build := exec.Command("go", "build", "-mod=mod", "-gcflags=-m", ".")
	build.Dir = dir
	build.Env = append(os.Environ(), "GOPROXY=off", "GOARCH=amd64", "GOFLAGS=")
	out, err := build.CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	var src []byte
	for _, f := range files {
		src = append(src, f.Data...)
	}
	for _, pr := range spec.Probes {
		for _, fn := range []string{goName(pr.Name), goName(pr.Name) + "Enabled"} {
			if !regexp.MustCompile(fmt.Sprintf(`(?m): can inline %s( |$)`, fn)).Match(out) {
				t.Errorf("%s does not inline:\n%s", fn, out)
			}
		}
		// Small probes call their stub from Xxx, so that the site is in
		// the caller's body; the others out of line.
		direct := pr.Name == "none" || pr.Name == "one" || pr.Name == "two" || pr.Name == "flag" || pr.Name == "ptr"
		if outOfLine := bytes.Contains(src, []byte("func usdtkitFire"+goName(pr.Name)+"(")); outOfLine == direct {
			t.Errorf("%s: usdtkitFire%s written: %v, want %v", pr.Name, goName(pr.Name), outOfLine, !direct)
		}
	}
}

// TestGoStaticUpToDate: bench/gostatic's generated files are what gen
// --static writes today.
func TestGoStaticUpToDate(t *testing.T) {
	files, err := Static(&dynsdt.ProviderSpec{Name: "gostatic", Probes: []dynsdt.ProbeSpec{{Name: "bench", Args: []dynsdt.ArgType{dynsdt.Int32, dynsdt.Int32}}}}, "main")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		have, err := os.ReadFile(filepath.Join("..", "..", "bench", "gostatic", f.Name))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(have, f.Data) {
			t.Errorf("bench/gostatic/%s is stale: run go generate ./bench/gostatic", f.Name)
		}
	}
}
