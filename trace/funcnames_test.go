package trace

import (
	"reflect"
	"testing"

	"github.com/usdtkit/usdtkit/internal/lang/btlang"
	"github.com/usdtkit/usdtkit/internal/testutil"
)

func TestNoteFunctionNames(t *testing.T) {
	for _, tc := range []struct {
		name string
		src  string
		exe  string // CompileOptions.Executable, without a process
		want map[string][]string
	}{
		{"names", `uprobe:libc:malloc { } uretprobe:libc:malloc { } uprobe:libc:free { }`, "",
			map[string][]string{"libc": {"malloc", "free"}}},
		{"glob", `uprobe:libc:malloc { } uprobe:libc:mall* { }`, "", nil},
		{"paths", `uprobe:libc:malloc { } uprobe:/bin/x:f* { } uprobe:/bin/x:main, uprobe:/bin/y:main { }`, "",
			map[string][]string{"libc": {"malloc"}, "/bin/y": {"main"}}},
		{"executable", `uprobe::main { } uprobe:/bin/x:main { }`, "/bin/x", map[string][]string{"/bin/x": {"main"}}},
		{"usdt", `usdt:libc:p:n { } BEGIN { }`, "", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			prog, err := btlang.Parse("t.bt", []byte(tc.src))
			if err != nil {
				t.Fatal(err)
			}
			r := &resolver{pids: []int{0}, opts: CompileOptions{Executable: tc.exe}}
			r.noteFunctionNames(prog)
			if len(r.funcNames) != len(tc.want) || (len(tc.want) > 0 && !reflect.DeepEqual(r.funcNames, tc.want)) {
				t.Errorf("have %v, want %v", r.funcNames, tc.want)
			}
		})
	}
}

// TestCompileNamedFunctions compiles a program that names functions of
// libc, whose symbols are then read by name only, and the same program
// with globs matching the same names, whose symbols are all read: both
// attach to the same sites of the same objects.
func TestCompileNamedFunctions(t *testing.T) {
	tc := testutil.StartTracee(t, testutil.BuildTracee(t, "-O2", "-DTRACEE_NO_WIDE"))
	tc.WaitReady(t)
	opts := &CompileOptions{PID: tc.PID()}
	named, err := Compile("n.bt", `uprobe:libc:malloc { @a = count(); } uretprobe:libc:free, uprobe:libc:calloc { @b = count(); }`, opts)
	if err != nil {
		t.Fatal(err)
	}
	glob, err := Compile("g.bt", `uprobe:libc:mallo[c] { @a = count(); } uretprobe:libc:fre[e], uprobe:libc:callo[c] { @b = count(); }`, opts)
	if err != nil {
		t.Fatal(err)
	}
	if named.Sites() != 3 {
		t.Errorf("have %d sites, want 3", named.Sites())
	}
	if !reflect.DeepEqual(named.files, glob.files) || !reflect.DeepEqual(named.ProbeNames(), glob.ProbeNames()) {
		t.Errorf("named: %v %v; glob: %v %v", named.files, named.ProbeNames(), glob.files, glob.ProbeNames())
	}
	if len(named.gen.Blocks) != len(glob.gen.Blocks) {
		t.Fatalf("have %d blocks, want %d", len(named.gen.Blocks), len(glob.gen.Blocks))
	}
	for i := range named.gen.Blocks {
		n, g := named.gen.Blocks[i].Sites, glob.gen.Blocks[i].Sites
		if len(n) != len(g) {
			t.Fatalf("block %d: have %d sites, want %d", i, len(n), len(g))
		}
		for j := range n {
			if n[j].Offset != g[j].Offset || n[j].Return != g[j].Return || n[j].PID != g[j].PID {
				t.Errorf("block %d site %d: named %+v, glob %+v", i, j, n[j], g[j])
			}
		}
	}
}
