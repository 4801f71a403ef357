package gen

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/usdtkit/usdtkit/dynsdt"
	"github.com/usdtkit/usdtkit/internal/testutil"
)

var update = flag.Bool("update", false, "rewrite golden files")

// goldenProviders returns the first provider of each testdata/dfile/*.d,
// by the file's base name without ".d".
func goldenProviders(t *testing.T) map[string]*dynsdt.ProviderSpec {
	t.Helper()
	files, err := filepath.Glob("testdata/dfile/*.d")
	if err != nil || len(files) == 0 {
		t.Fatalf("no testdata/dfile/*.d: %v", err)
	}
	m := make(map[string]*dynsdt.ProviderSpec)
	for _, f := range files {
		name := filepath.Base(f)
		m[strings.TrimSuffix(name, ".d")] = &parseDFile(t, name)[0]
	}
	return m
}

func checkGolden(t *testing.T, path string, have []byte) {
	t.Helper()
	if *update {
		if err := os.WriteFile(path, have, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update)", err)
	}
	if !bytes.Equal(have, want) {
		t.Errorf("have:\n%s\nwant (%s):\n%s", have, path, want)
	}
}

func TestGenerateGoGolden(t *testing.T) {
	for base, p := range goldenProviders(t) {
		t.Run(base, func(t *testing.T) {
			src, err := Go(p, p.Name)
			if err != nil {
				t.Fatal(err)
			}
			checkGolden(t, filepath.Join("testdata/dfile", base+".golden.go"), src)
		})
	}
}

func TestGenerateHeaderGolden(t *testing.T) {
	for base, p := range goldenProviders(t) {
		t.Run(base, func(t *testing.T) {
			checkGolden(t, filepath.Join("testdata/dfile", base+".golden.h"), Header(p))
		})
	}
}

// runtimeStub declares the runtime API that generated code uses, with the
// signatures of provider.go; TestGenerateGoTypes checks generated code
// against it without loading anything.
const runtimeStub = `package dynsdt
type ArgType uint8
const (
	ArgInvalid ArgType = iota
	Int8; Int16; Int32; Int64; Uint8; Uint16; Uint32; Uint64; Bool; Pointer; String; Bytes
)
type ProbeSpec struct { Name string; Args []ArgType }
type ProviderSpec struct { Name string; Probes []ProbeSpec }
type Options struct { Memfd bool; Dir string }
type Provider struct{}
func Load(spec *ProviderSpec, opts *Options) (*Provider, error) { return nil, nil }
func (p *Provider) Close() error { return nil }
func (p *Provider) Probe(name string) *Probe { return nil }
func (p *Provider) Path() string { return "" }
type Probe struct{}
func (pr *Probe) Enabled() bool { return false }
func (pr *Probe) Fire(args ...uint64) {}
func CString(s string) []byte { return nil }
func BytesPtr(b []byte) uint64 { return 0 }
`

type stubImporter struct {
	fset  *token.FileSet
	stub  *types.Package
	std   types.Importer
	calls map[string]bool
}

func (im *stubImporter) Import(path string) (*types.Package, error) {
	im.calls[path] = true
	if path == "github.com/usdtkit/usdtkit/dynsdt" {
		return im.stub, nil
	}
	return im.std.Import(path)
}

// TestGenerateGoTypes type-checks the generated code of every golden
// provider, and of one with every argument type, against runtimeStub, and
// checks the exported API it declares.
func TestGenerateGoTypes(t *testing.T) {
	fset := token.NewFileSet()
	stubFile, err := parser.ParseFile(fset, "stub.go", runtimeStub, 0)
	if err != nil {
		t.Fatal(err)
	}
	stub, err := (&types.Config{}).Check("github.com/usdtkit/usdtkit/dynsdt", fset, []*ast.File{stubFile}, nil)
	if err != nil {
		t.Fatal(err)
	}
	provs := goldenProviders(t)
	provs["all"] = &dynsdt.ProviderSpec{Name: "all", Probes: []dynsdt.ProbeSpec{
		{Name: "every__type", Args: []dynsdt.ArgType{dynsdt.Int8, dynsdt.Int16, dynsdt.Int32, dynsdt.Int64, dynsdt.Uint8, dynsdt.Uint16, dynsdt.Uint32, dynsdt.Uint64, dynsdt.Bool, dynsdt.Pointer, dynsdt.String, dynsdt.Bytes}},
		{Name: "ints", Args: []dynsdt.ArgType{dynsdt.Int64}},
	}}
	provs["noargs"] = &dynsdt.ProviderSpec{Name: "noargs", Probes: []dynsdt.ProbeSpec{{Name: "tick"}}}
	for name, p := range provs {
		t.Run(name, func(t *testing.T) {
			src, err := Go(p, "gen")
			if err != nil {
				t.Fatal(err)
			}
			f, err := parser.ParseFile(fset, name+".go", src, parser.ParseComments)
			if err != nil {
				t.Fatal(err)
			}
			im := &stubImporter{fset: fset, stub: stub, std: importer.ForCompiler(fset, "source", nil), calls: map[string]bool{}}
			pkg, err := (&types.Config{Importer: im}).Check("example.com/gen", fset, []*ast.File{f}, nil)
			if err != nil {
				t.Fatalf("%v\n%s", err, src)
			}
			var have []string
			for _, n := range pkg.Scope().Names() {
				if o := pkg.Scope().Lookup(n); o.Exported() {
					have = append(have, n+" "+types.TypeString(o.Type(), types.RelativeTo(pkg)))
				}
			}
			want := []string{
				"Close func() error",
				"Load func(opts *github.com/usdtkit/usdtkit/dynsdt.Options) error",
				"Path func() string",
			}
			for _, pr := range p.Probes {
				var params []string
				for i, a := range pr.Args {
					params = append(params, fmt.Sprintf("arg%d %s", i, argGo[a].param))
				}
				g := goName(pr.Name)
				want = append(want, g+" func("+strings.Join(params, ", ")+")", g+"Enabled func() bool")
			}
			if !sameSet(have, want) {
				t.Errorf("have API %q\nwant %q", have, want)
			}
		})
	}
}

func sameSet(a, b []string) bool {
	m := make(map[string]int)
	for _, s := range a {
		m[s]++
	}
	for _, s := range b {
		m[s]--
	}
	for _, n := range m {
		if n != 0 {
			return false
		}
	}
	return len(a) == len(b)
}

func TestGenerateGoErrors(t *testing.T) {
	tests := []struct {
		name string
		p    dynsdt.ProviderSpec
		pkg  string
		spec bool // the error wraps ErrSpec
	}{
		{"invalid spec", dynsdt.ProviderSpec{Name: "1x"}, "x", true},
		{"bad package", dynsdt.ProviderSpec{Name: "p"}, "my-pkg", false},
		{"keyword package", dynsdt.ProviderSpec{Name: "p"}, "go", false},
		{"blank package", dynsdt.ProviderSpec{Name: "p"}, "_", false},
		{"same Go name", dynsdt.ProviderSpec{Name: "p", Probes: []dynsdt.ProbeSpec{{Name: "a__b"}, {Name: "a_b"}}}, "p", true},
		{"Enabled clash", dynsdt.ProviderSpec{Name: "p", Probes: []dynsdt.ProbeSpec{{Name: "a"}, {Name: "a__enabled"}}}, "p", true},
		{"Load clash", dynsdt.ProviderSpec{Name: "p", Probes: []dynsdt.ProbeSpec{{Name: "load"}}}, "p", true},
		{"no Go name", dynsdt.ProviderSpec{Name: "p", Probes: []dynsdt.ProbeSpec{{Name: "__"}}}, "p", true},
		{"digit first", dynsdt.ProviderSpec{Name: "p", Probes: []dynsdt.ProbeSpec{{Name: "_2x"}}}, "p", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src, err := Go(&tt.p, tt.pkg)
			if err == nil || src != nil {
				t.Fatalf("have %d bytes, %v; want an error", len(src), err)
			}
			if errors.Is(err, dynsdt.ErrSpec) != tt.spec {
				t.Errorf("have %v; want errors.Is(err, ErrSpec) == %v", err, tt.spec)
			}
		})
	}
}

func TestGoName(t *testing.T) {
	tests := []struct{ have, want string }{
		{"request__start", "RequestStart"},
		{"line", "Line"},
		{"gc__done", "GcDone"},
		{"http2__req", "Http2Req"},
		{"_x_y_", "XY"},
		{"alreadyCamel", "AlreadyCamel"},
		{"__", ""},
	}
	for _, tt := range tests {
		if got := goName(tt.have); got != tt.want {
			t.Errorf("goName(%q): have %q, want %q", tt.have, got, tt.want)
		}
	}
}

// TestGenerateHeaderCompiles compiles a C file that uses every declaration
// and macro of each golden header, as C11 and as C++, with warnings as
// errors.
func TestGenerateHeaderCompiles(t *testing.T) {
	for _, compiler := range []struct{ tool, lang, std string }{{"gcc", "c", "-std=c11"}, {"g++", "c++", "-std=c++17"}} {
		tool := testutil.RequireTool(t, compiler.tool)
		provs := goldenProviders(t)
		provs["all"] = &dynsdt.ProviderSpec{Name: "all", Probes: []dynsdt.ProbeSpec{
			{Name: "every__type", Args: []dynsdt.ArgType{dynsdt.Int8, dynsdt.Int16, dynsdt.Int32, dynsdt.Int64, dynsdt.Uint8, dynsdt.Uint16, dynsdt.Uint32, dynsdt.Uint64, dynsdt.Bool, dynsdt.Pointer, dynsdt.String, dynsdt.Bytes}},
			{Name: "a__b"}, {Name: "a_b", Args: []dynsdt.ArgType{dynsdt.Int8}},
		}}
		for name, p := range provs {
			t.Run(compiler.lang+"/"+name, func(t *testing.T) {
				dir := t.TempDir()
				if err := os.WriteFile(filepath.Join(dir, p.Name+".h"), Header(p), 0o644); err != nil {
					t.Fatal(err)
				}
				c := useHeader(p)
				if err := os.WriteFile(filepath.Join(dir, "use.c"), []byte(c), 0o644); err != nil {
					t.Fatal(err)
				}
				cmd := exec.Command(tool, "-x", compiler.lang, compiler.std, "-fsyntax-only", "-Wall", "-Wextra", "-pedantic", "-Werror", "use.c")
				cmd.Dir = dir
				if out, err := cmd.CombinedOutput(); err != nil {
					t.Fatalf("%s: %v\n%s\n%s", tool, err, out, c)
				}
			})
		}
	}
}

// useHeader returns C code that includes p's header twice and calls each
// probe, guarded by its _ENABLED macro, both by function and by macro.
func useHeader(p *dynsdt.ProviderSpec) string {
	var b strings.Builder
	b.WriteString("#include \"" + p.Name + ".h\"\n#include \"" + p.Name + ".h\"\nint main(void) {\n")
	seen := make(map[string]bool)
	for _, pr := range p.Probes {
		var args []string
		for range pr.Args {
			args = append(args, "0")
		}
		call := "(" + strings.Join(args, ", ") + ");\n"
		m := macroName(p.Name, pr.Name)
		b.WriteString("\t" + dynsdt.FireSymbol(p.Name, pr.Name) + call)
		b.WriteString("\tif (" + dynsdt.SemaphoreSymbol(p.Name, pr.Name) + ") {}\n")
		if !seen[m] {
			seen[m] = true
			b.WriteString("\tif (" + m + "_ENABLED()) " + m + call)
		}
	}
	b.WriteString("\treturn 0;\n}\n")
	return b.String()
}

// genMain uses the generated package "all" (allProvider) the way a program
// does, and prints "ok" when every check holds.
const genMain = `package main

import (
	"fmt"
	"os"
	"strings"

	"example.com/gentest/all"
)

func check(ok bool, what string) {
	if !ok {
		fmt.Println("FAIL:", what)
		os.Exit(1)
	}
}

func main() {
	check(all.Path() == "" && !all.EveryTypeEnabled() && all.Close() == nil, "state before Load")
	all.EveryType(-1, -2, -3, -4, 1, 2, 3, 4, true, 0, "before", []byte("load"))
	check(all.Load(nil) == nil, "Load")
	check(all.Load(nil) == nil, "second Load")
	path := all.Path()
	maps, err := os.ReadFile("/proc/self/maps")
	check(err == nil && path != "" && strings.Contains(string(maps), path), "mapping of "+path)
	all.EveryType(-1, -2, -3, -4, 1, 2, 3, 4, true, 0, "string", []byte("bytes"))
	all.Ints(5)
	all.Tick()
	check(!all.EveryTypeEnabled() && !all.IntsEnabled() && !all.TickEnabled(), "untraced probes disabled")
	check(all.Close() == nil && all.Close() == nil, "Close twice")
	all.Ints(6)
	check(all.Path() == "", "Path after Close")
	_, err = os.Stat(path)
	check(os.IsNotExist(err), "file removed")
	fmt.Println("ok")
}
`

var allProvider = &dynsdt.ProviderSpec{Name: "all", Probes: []dynsdt.ProbeSpec{
	{Name: "every__type", Args: []dynsdt.ArgType{dynsdt.Int8, dynsdt.Int16, dynsdt.Int32, dynsdt.Int64, dynsdt.Uint8, dynsdt.Uint16, dynsdt.Uint32, dynsdt.Uint64, dynsdt.Bool, dynsdt.Pointer, dynsdt.String, dynsdt.Bytes}},
	{Name: "ints", Args: []dynsdt.ArgType{dynsdt.Int64}},
	{Name: "tick"},
}}

// TestGenerateGoRuns builds a program from generated code and this
// module's runtime, in a module of its own as a go:generate user would,
// and runs it.
func TestGenerateGoRuns(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a program")
	}
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	src, err := Go(allProvider, "all")
	if err != nil {
		t.Fatal(err)
	}
	sum, err := os.ReadFile(filepath.Join(root, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	files := map[string]string{
		"go.mod":     "module example.com/gentest\n\ngo 1.26\n\nrequire github.com/usdtkit/usdtkit v0.0.0\n\nreplace github.com/usdtkit/usdtkit => " + root + "\n",
		"go.sum":     string(sum),
		"all/all.go": string(src),
		"main.go":    genMain,
	}
	for name, data := range files {
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	build := exec.Command("go", "build", "-mod=mod", "-o", "prog", ".")
	build.Dir = dir
	build.Env = append(os.Environ(), "GOPROXY=off", "CGO_ENABLED=0", "GOFLAGS=")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	out, err := exec.Command(filepath.Join(dir, "prog")).CombinedOutput()
	if err != nil || string(out) != "ok\n" {
		t.Fatalf("program: %v\n%s", err, out)
	}
}
