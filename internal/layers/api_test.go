package layers

import (
	"bytes"
	"encoding/json"
	"fmt"
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// public reports whether the package at path (relative to the module)
// is one a user imports: not internal, not a command, an example or a
// benchmark.
func public(path string) bool {
	for _, p := range strings.Split(path, "/") {
		if p == "internal" {
			return false
		}
	}
	top, _, _ := strings.Cut(path, "/")
	return top != "cmd" && top != "examples" && top != "bench"
}

// TestNoInternalTypesInAPI: no exported identifier of a public package
// has a type from one of the module's internal packages (an alias, a
// signature, a field, a variable or constant): users read `go doc`,
// and internal packages stay free to change (STYLE.md, "Public API").
func TestNoInternalTypesInAPI(t *testing.T) {
	out, err := exec.Command("go", "list", "-export", "-deps", "-json=ImportPath,Export,Standard", module+"...").Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		t.Fatalf("go list -export: %v\n%s", err, stderr)
	}
	export := map[string]string{}
	var pkgs []string
	for dec := json.NewDecoder(bytes.NewReader(out)); dec.More(); {
		var p struct {
			ImportPath, Export string
		}
		if err := dec.Decode(&p); err != nil {
			t.Fatal(err)
		}
		export[p.ImportPath] = p.Export
		if rel, ours := strings.CutPrefix(p.ImportPath, module); ours && public(rel) {
			pkgs = append(pkgs, p.ImportPath)
		}
	}
	if len(pkgs) < 8 {
		t.Fatalf("%d public packages: %v", len(pkgs), pkgs)
	}
	imp := importer.ForCompiler(token.NewFileSet(), "gc", func(path string) (io.ReadCloser, error) {
		f, ok := export[path]
		if !ok || f == "" {
			return nil, fmt.Errorf("no export data for %s", path)
		}
		return os.Open(f)
	})
	for _, path := range pkgs {
		p, err := imp.Import(path)
		if err != nil {
			t.Fatal(err)
		}
		for _, where := range internalInAPI(p) {
			t.Errorf("%s.%s: exported with a type of an internal package; give it an exported type of its own", strings.TrimPrefix(path, module), where)
		}
	}
}

// internalInAPI lists the exported identifiers of p (and exported
// fields and methods of its exported types) whose types name a type of
// one of the module's internal packages.
func internalInAPI(p *types.Package) []string {
	var bad []string
	check := func(where string, t types.Type) {
		if n := internalIn(t, map[types.Type]bool{}); n != "" {
			bad = append(bad, where+" ("+n+")")
		}
	}
	scope := p.Scope()
	for _, name := range scope.Names() {
		obj := scope.Lookup(name)
		if !obj.Exported() {
			continue
		}
		tn, ok := obj.(*types.TypeName)
		if !ok {
			check(name, obj.Type())
			continue
		}
		if tn.IsAlias() {
			check(name, types.Unalias(tn.Type()))
			continue
		}
		named, ok := tn.Type().(*types.Named)
		if !ok {
			continue
		}
		check(name, named.Underlying())
		for m := range named.Methods() {
			if m.Exported() {
				check(name+"."+m.Name(), m.Type())
			}
		}
	}
	return bad
}

// internalIn returns the name of an internal package's type that t
// names, directly or in its parts (exported fields of a struct, a
// signature, elements), or "". Named types of other packages are not
// looked into: theirs is their own API.
func internalIn(t types.Type, seen map[types.Type]bool) string {
	if seen[t] {
		return ""
	}
	seen[t] = true
	switch t := t.(type) {
	case *types.Alias:
		return internalIn(types.Unalias(t), seen)
	case *types.Named:
		if pkg := t.Obj().Pkg(); pkg != nil && strings.HasPrefix(pkg.Path(), module) && !public(strings.TrimPrefix(pkg.Path(), module)) {
			return pkg.Path() + "." + t.Obj().Name()
		}
		for a := range t.TypeArgs().Types() {
			if n := internalIn(a, seen); n != "" {
				return n
			}
		}
	case *types.Pointer:
		return internalIn(t.Elem(), seen)
	case *types.Slice:
		return internalIn(t.Elem(), seen)
	case *types.Array:
		return internalIn(t.Elem(), seen)
	case *types.Chan:
		return internalIn(t.Elem(), seen)
	case *types.Map:
		if n := internalIn(t.Key(), seen); n != "" {
			return n
		}
		return internalIn(t.Elem(), seen)
	case *types.Signature:
		for _, tup := range []*types.Tuple{t.Params(), t.Results()} {
			for v := range tup.Variables() {
				if n := internalIn(v.Type(), seen); n != "" {
					return n
				}
			}
		}
	case *types.Struct:
		for f := range t.Fields() {
			if f.Exported() {
				if n := internalIn(f.Type(), seen); n != "" {
					return f.Name() + ": " + n
				}
			}
		}
	case *types.Interface:
		for m := range t.Methods() {
			if m.Exported() {
				if n := internalIn(m.Type(), seen); n != "" {
					return m.Name() + ": " + n
				}
			}
		}
	}
	return ""
}

// TestInternalInAPI: the check finds an internal type behind an alias,
// in a signature, an exported field, an embedded struct, a method and a
// variable, and not in unexported fields or a public package's types.
func TestInternalInAPI(t *testing.T) {
	fset := token.NewFileSet()
	pkgs := map[string]*types.Package{}
	check := func(path, src string) *types.Package {
		f, err := parser.ParseFile(fset, path+".go", src, 0)
		if err != nil {
			t.Fatal(err)
		}
		conf := types.Config{Importer: importerFunc(func(p string) (*types.Package, error) { return pkgs[p], nil })}
		p, err := conf.Check(path, fset, []*ast.File{f}, nil)
		if err != nil {
			t.Fatal(err)
		}
		pkgs[path] = p
		return p
	}
	check(module+"internal/in", "package in\ntype T struct{ X int }\ntype U int\n")
	check(module+"pub", "package pub\ntype P struct{ X int }\n")
	p := check(module+"api", `package api
import (
	in "`+module+`internal/in"
	pub "`+module+`pub"
)
type Alias = in.T
func F(x int) (*in.T, error) { return nil, nil }
type S struct {
	Field []in.U
	hidden in.T
	Fine  pub.P
}
type E struct{ in.T }
type M struct{}
func (M) Get() map[string]in.U { return nil }
func (M) get() in.U { return 0 }
var V in.U
type OK struct{ P *pub.P }
func G(p pub.P) int { return 0 }
`)
	have := internalInAPI(p)
	var names []string
	for _, h := range have {
		name, _, _ := strings.Cut(h, " ")
		names = append(names, name)
	}
	want := []string{"Alias", "E", "F", "M.Get", "S", "V"}
	if !slices.Equal(names, want) {
		t.Errorf("have %q, want %v", have, want)
	}
}

type importerFunc func(string) (*types.Package, error)

func (f importerFunc) Import(path string) (*types.Package, error) { return f(path) }
