package btgen_test

import (
	"debug/elf"
	"errors"
	"strings"
	"testing"

	"github.com/usdtkit/usdtkit/internal/bpf/argread"
	"github.com/usdtkit/usdtkit/internal/lang/btgen"
	"github.com/usdtkit/usdtkit/internal/lang/btlang"
	"github.com/usdtkit/usdtkit/internal/testutil"
)

// goProbes gives every probe the named values of a Go function: path (a
// string), n (signed), ok, and goid.
type goProbes struct{}

func (goProbes) Args(*btlang.Probe) (btlang.ProbeArgs, error) {
	named := []btlang.NamedArg{
		{Name: "path", Type: btlang.StringType(btlang.DefaultStrLen)},
		{Name: "n", Type: btlang.Type{Kind: btlang.KindInt, Size: 8, Signed: true}},
		{Name: "ok", Type: btlang.Type{Kind: btlang.KindInt, Size: 8}},
	}
	for _, s := range []string{"a", "b", "c", "d", "e", "f"} {
		named = append(named, btlang.NamedArg{Name: s, Type: btlang.StringType(btlang.DefaultStrLen)})
	}
	return btlang.ProbeArgs{Named: named, GoID: true}, nil
}

// goSites returns Go sites for every block: the values in registers, a
// string's length on the stack, goid through r14 unless noGoid.
func goSites(t *testing.T, prog *btlang.Program, noGoid bool) *btgen.Options {
	t.Helper()
	m := elf.EM_X86_64
	word := func(reg string, sp int64, size int64, signed bool) argread.Fetch {
		f, err := argread.WordFetch(m, reg, sp, size, signed)
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	goid, err := argread.GoIDFetch(m, "r14", 152)
	if err != nil {
		t.Fatal(err)
	}
	if noGoid {
		goid = argread.Fetch{}
	}
	named := []btgen.NamedFetch{
		{Name: "path", Value: word("rax", 0, 8, false), Len: word("", 16, 8, false)},
		{Name: "n", Value: word("rcx", 0, 8, true)},
		{Name: "ok", Value: word("rdi", 0, 1, false)},
	}
	for _, s := range []string{"a", "b", "c", "d", "e", "f"} {
		named = append(named, btgen.NamedFetch{Name: s, Value: word("rsi", 0, 8, false), Len: word("r8", 0, 8, false)})
	}
	opts := &btgen.Options{Machine: m}
	for range prog.Blocks {
		var sites []btgen.Site
		for i := range 2 {
			sites = append(sites, btgen.Site{Path: "/bin/true", Offset: uint64(0x1000 + i), Named: named, GoID: goid,
				Ret: word("rax", 0, 8, true)})
		}
		opts.Sites = append(opts.Sites, sites)
	}
	return opts
}

// TestGenerateGo generates and loads programs reading Go values by name:
// the verifier accepts the string copies bounded by a length read at run
// time, also for more values than argread has argument slots; goid at a
// site that cannot read it is an error at the block.
func TestGenerateGo(t *testing.T) {
	tests := []struct {
		name, src string
		noGoid    bool
		err       string // "": loads
	}{
		{"string key and predicate", `uprobe:/x:f /args.path == "/b" && args.n > 3/ { @[args.path, args.ok] = count(); @s[str(args.path)] = sum(args.n); }`, false, ""},
		{"printf", `uprobe:/x:f { printf("%s %d %d\n", args.path, args.n, goid); }`, false, ""},
		{"latency by goid", `uprobe:/x:f { @start[goid] = nsecs; } uretprobe:/x:f /@start[goid]/ { @ns = hist(nsecs - @start[goid]); @r = sum(retval); delete(@start[goid]); }`, false, ""},
		{"string variable and map value", `uprobe:/x:f { $p = args.path; @last[goid] = $p; @cut = str(args.path, 4); }`, false, ""},
		{"six strings fit", `uprobe:/x:f { @[args.a, args.b, args.c, args.d, args.e, args.f] = count(); }`, false, ""},
		{"more words than positional arguments", `uprobe:/x:f { @[args.a, args.b, args.c, args.d, args.e, args.f, goid, args.n, args.ok] = count(); printf("%s\n", args.path); }`, false, ""},
		{"goid unreadable", `uprobe:/x:f { @[goid] = count(); }`, true, "goid is read but site 0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			prog, err := btlang.Compile("go.bt", []byte(tt.src), &btlang.CheckOptions{Probes: goProbes{}})
			if err != nil {
				t.Fatalf("Compile: %v", err)
			}
			out, err := btgen.Generate(prog, goSites(t, prog, tt.noGoid))
			if tt.err != "" {
				var e *btlang.Error
				if !errors.As(err, &e) || !strings.Contains(e.Msg, tt.err) {
					t.Fatalf("Generate: %v, want a *btlang.Error with %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Generate: %v", err)
			}
			testutil.RequireBPF(t)
			mustLoad(t, out.Spec)
		})
	}
}
