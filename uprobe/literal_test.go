package uprobe

import (
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/usdtkit/usdtkit/internal/testutil"
)

func TestSelectorLiteral(t *testing.T) {
	for _, tc := range []struct {
		sel  string
		want bool
	}{
		{"uprobe:libc:malloc", true},
		{"uprobe:libc:malloc+4", true},
		{"uretprobe:libc:malloc", true},
		{"uprobe:libstdc++:ns::f(int)", true},
		{"uprobe:libc:malloc@GLIBC_2.2.5", true},
		{"uprobe:libc:mall*", false},
		{"uprobe:libc:mallo?", false},
		{"uprobe:libc:mallo[c]", false},
		{`uprobe:libc:mall\*`, false},
		{"uprobe:libc:*", false},
		{"uprobe:/bin/x:0x1000", false},
	} {
		t.Run(tc.sel, func(t *testing.T) {
			sel, err := ParseSelector(tc.sel)
			if err != nil {
				t.Fatal(err)
			}
			if have := sel.Literal(); have != tc.want {
				t.Errorf("have %v, want %v", have, tc.want)
			}
		})
	}
	if (Selector{Path: "libc"}).Literal() {
		t.Error("a selector without FUNC is literal")
	}
}

func TestKeepNames(t *testing.T) {
	for _, tc := range []struct {
		name  string
		funcs []string
		keep  []string
		drop  []string
	}{
		{"name", []string{"malloc"}, []string{"malloc", "_ZN2ns1fEi", "_RNvCs1_4core3foo", "malloc[go.shape.int]"},
			[]string{"mallocx", "__libc_malloc", "free", "malloc@GLIBC_2.2.5", "_"}},
		{"names", []string{"malloc", "free"}, []string{"malloc", "free"}, []string{"calloc"}},
		{"versioned", []string{"foo@@V2"}, []string{"foo"}, []string{"foo@@V2", "bar"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var sels []Selector
			for _, f := range tc.funcs {
				sels = append(sels, Selector{Path: "x", Func: f})
			}
			keep := keepNames(sels)
			if keep == nil {
				t.Fatal("no filter")
			}
			for _, p := range tc.keep {
				if !keep(p) {
					t.Errorf("%v drops %q, want it kept", tc.funcs, p)
				}
			}
			for _, p := range tc.drop {
				if keep(p) {
					t.Errorf("%v keeps %q, want it dropped", tc.funcs, p)
				}
			}
		})
	}
	for _, sels := range [][]Selector{nil, {{Path: "x"}}, {{Path: "x", Func: "malloc"}, {Path: "x", Func: "m*"}}, {{Path: "x", Address: 0x1000}}} {
		if keepNames(sels) != nil {
			t.Errorf("keepNames(%v) filters, want every symbol kept", sels)
		}
	}
}

// cxxSrc has C++ functions that only their demangled names name plainly.
const cxxSrc = `
namespace ns {
__attribute__((noinline)) int f(int x) { return x + 1; }
__attribute__((noinline)) int f(double d) { return (int)d; }
struct S { int m() const; };
__attribute__((noinline)) int S::m() const { return 1; }
}
extern "C" __attribute__((noinline)) int plain_c(void) { return 2; }
int main() { ns::S s; return ns::f(1) + ns::f(2.0) + s.m() + plain_c(); }
`

// goGenericSrc has a generic function, whose instances are listed as
// main.Map[...] and selected as main.Map.
const goGenericSrc = `package main

//go:noinline
func Map[T any](x T) T { return x }

func main() { println(Map(1), Map("a")) }
`

// buildCxx compiles cxxSrc with g++ and returns the executable.
func buildCxx(t *testing.T) string {
	t.Helper()
	gxx := testutil.RequireTool(t, "g++")
	dir := t.TempDir()
	src := filepath.Join(dir, "prog.cc")
	writeFile(t, src, cxxSrc)
	bin := filepath.Join(dir, "prog")
	if msg, err := exec.Command(gxx, "-O1", "-o", bin, src).CombinedOutput(); err != nil {
		t.Fatalf("g++: %v\n%s", err, msg)
	}
	return bin
}

// TestListLiteralAgrees checks that a listing whose selectors all name
// functions by name, which reads only the symbols they can match, lists
// what the listing of every symbol gives for them: for every name,
// demangled name and Go generic function of each object, looked up in
// groups of names (one List each; a sample of the names of a large
// object). The objects: libc as a running C
// program maps it (with its separate debug file where one is installed),
// a gcc-built program, a versioned library, a g++-built program and a Go
// binary with a generic function.
func TestListLiteralAgrees(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts func(t *testing.T) ListOptions
		// want are names that must be among the literal names tried.
		want []string
	}{
		{"libc", func(t *testing.T) ListOptions {
			tc := testutil.StartTracee(t, testutil.BuildTracee(t, "-O2"))
			tc.WaitReady(t)
			return ListOptions{PID: tc.PID(), Selectors: []Selector{{Path: "libc"}}}
		}, []string{"malloc", "free"}},
		{"gcc-exe", func(t *testing.T) ListOptions {
			p := buildC(t, sizeZeroSrc, "sizezero")
			return ListOptions{Paths: []string{p}}
		}, []string{"main", "nosize"}},
		{"gcc-versioned-lib", func(t *testing.T) ListOptions {
			return ListOptions{Paths: []string{buildVersionedLib(t)}}
		}, []string{"foo", "bar"}},
		{"g++", func(t *testing.T) ListOptions {
			return ListOptions{Paths: []string{buildCxx(t)}}
		}, []string{"ns::f(int)", "ns::f(double)", "ns::S::m() const", "plain_c"}},
		{"go-generic", func(t *testing.T) ListOptions {
			return ListOptions{Paths: []string{testutil.BuildGoSource(t, goGenericSrc)}}
		}, []string{"main.Map", "main.main"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := tc.opts(t)
			path := ""
			if len(opts.Paths) > 0 {
				path = opts.Paths[0]
			} else {
				path = opts.Selectors[0].Path
			}
			full, err := List(&opts)
			if err != nil || len(full) != 1 {
				t.Fatalf("List(%s) = %d objects, %v; want 1", path, len(full), err)
			}
			var names []string
			seen := make(map[string]bool)
			add := func(n string) {
				if n != "" && !seen[n] && (Selector{Func: n}).Literal() {
					seen[n] = true
					names = append(names, n)
				}
			}
			for _, s := range full[0].Symbols {
				add(s.Name)
				add(s.Demangled)
				if i := strings.IndexByte(s.Name, '['); i > 0 && strings.HasSuffix(s.Name, "]") {
					add(s.Name[:i])
				}
			}
			for _, n := range tc.want {
				if !seen[n] {
					t.Errorf("no symbol of %s is named %q", path, n)
				}
			}
			// Checking each name against each symbol costs their product:
			// in a large object, every k-th name and the wanted ones
			// (internal/elf/symtab's TestReadKeepAgrees reads every name).
			if k := len(names) / 400; k > 1 {
				some := slices.Clone(tc.want)
				for i := 0; i < len(names); i += k {
					some = append(some, names[i])
				}
				names = some
			}
			const group = 50
			for chunk := range slices.Chunk(names, group) {
				sels := make([]Selector, len(chunk))
				for i, n := range chunk {
					sels[i] = Selector{Path: path, Func: n}
				}
				lopts := opts
				lopts.Selectors = sels
				have, err := List(&lopts)
				if err != nil || len(have) != 1 {
					t.Fatalf("List(%v) = %d objects, %v; want 1", chunk, len(have), err)
				}
				var want []Symbol
				for _, s := range full[0].Symbols {
					if slices.ContainsFunc(sels, func(sel Selector) bool { return sel.MatchSymbol(&s) }) {
						want = append(want, s)
					}
				}
				h, w := have[0], full[0]
				if h.Path != w.Path || h.PID != w.PID || h.Dev != w.Dev || h.Inode != w.Inode || h.Machine != w.Machine || h.Go != w.Go {
					t.Errorf("have object %+v, want %+v", h, w)
				}
				if !reflect.DeepEqual(h.Symbols, want) {
					t.Errorf("%v:\nhave %+v\nwant %+v", chunk, h.Symbols, want)
				}
			}
			// Functions, which tracers call, reads the same way.
			sel := Selector{Path: path, Func: tc.want[0]}
			fopts := opts
			fopts.Selectors = []Selector{sel}
			have, err := Functions(&fopts)
			if err != nil {
				t.Fatal(err)
			}
			if want := FunctionsOf(full, []Selector{sel}); len(have) == 0 || !reflect.DeepEqual(have, want) {
				t.Errorf("Functions(%v):\nhave %+v\nwant %+v", sel, have, want)
			}
		})
	}
}
