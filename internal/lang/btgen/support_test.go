package btgen_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/usdtkit/usdtkit/internal/bpf/argread"
	"github.com/usdtkit/usdtkit/internal/lang/btgen"
	"github.com/usdtkit/usdtkit/internal/lang/btlang"
)

// TestSupport: what Generate cannot build is refused by Support, the pass
// before it, at its position; Generate returns the same error. A program
// Support accepts generates.
func TestSupport(t *testing.T) {
	tests := []struct {
		name, src string
		cfi       bool
		err       string // "" when supported
		sites     func(*btgen.Options)
	}{
		{"tuple variable", `uprobe:/x:f { $x = (1, probe); }`, false, "test.bt:1:15: a (int64,probe) variable is not supported yet", nil},
		{"tuple value", `uprobe:/x:f { @t = (1, probe); }`, false, "test.bt:1:15: a (int64,probe) value of @t is not supported yet", nil},
		{"tuple of C values", `struct S { int a; char c[3]; } uprobe:/x:f { $t = (1, *(struct S *)arg0, (int8 *)arg1, ((struct S *)arg0)->c); @t = $t; print($t); }`, false, "", nil},
		{"struct element of a tuple", `struct S { int a; } uprobe:/x:f { $t = (1, *(struct S *)arg0); @s = $t.1; }`, false, "test.bt:1:71: this value ($t.1) is not supported yet", nil},
		{"field of a tuple's struct", `struct S { int a; } uprobe:/x:f { $t = (1, *(struct S *)arg0); @a = $t.1.a; }`, false, "test.bt:1:71: this value ($t.1) is not supported yet", nil},
		{"stack value", `uprobe:/x:f { @x = ustack; }`, false, "test.bt:1:15: a ustack[127] value of @x is not supported yet", nil},
		{"str of a string, variable length", `uprobe:/x:f { printf("%s\n", str("abc", arg1)); }`, false, "test.bt:1:41: a length of str() of a string that is not a literal is not supported yet", nil},
		{"after return: not built", `uprobe:/x:f { return; printf("%s\n", str("abc", arg1)); }`, false, "", nil},
		{"after an if that leaves: not built", `uprobe:/x:f { if (arg0) { return; } else { return; } printf("%s\n", str("abc", arg1)); }`, false, "", nil},
		{"cfi: delete", `uprobe:/x:f { @[ustack] = count(); delete(@[ustack]); }`, true, "test.bt:1:36: with stacks unwound with CFI (--unwind cfi), delete() of @, a map keyed by ustack, is not supported: clear() it, or use --unwind fp", nil},
		{"cfi: usym key", `uprobe:/x:f { @[ustack, usym(arg0)] = count(); }`, true, "test.bt:1:25: a usym() key with stacks unwound with CFI (--unwind cfi) is not supported yet", nil},
		{"cfi: hist", `uprobe:/x:f { @[ustack] = hist(arg0); }`, true, "test.bt:1:15: with stacks unwound with CFI (--unwind cfi), a map keyed by ustack counts only count() or sum(), not hist(): use --unwind fp", nil},
		{"cfi: two stacks", `uprobe:/x:f { @[ustack, ustack(3)] = count(); }`, true, "test.bt:1:15: with stacks unwound with CFI (--unwind cfi), a map key holds one ustack, not several: use --unwind fp", nil},
		{"cfi: count", `uprobe:/x:f { @[ustack, comm] = count(); @s[ustack] = sum(arg0); }`, true, "", nil},
		{"reg", `uprobe:/x:f { printf("%d\n", reg("ip")); }`, false, "", nil},
		{"BEGIN with usdt", `BEGIN, usdt:/x:p:a { @ = count(); }`, false, "test.bt:1:8: usdt:/x:p:a together with other probes in one block is not supported yet", nil},
		{"an argument no site has", `uprobe:/x:f { @ = sum(arg7); }`, false, "test.bt:1:1: arg7 is read but site 0 (offset 0x1000 in /bin/true) has 6 arguments", nil},
		{"even after return", `uprobe:/x:f { return; @ = sum(arg7); }`, false, "test.bt:1:1: arg7 is read but site 0 (offset 0x1000 in /bin/true) has 6 arguments", nil},
		{"probe of a site of no probe", `uprobe:/x:f, uprobe:/x:g { @[probe] = count(); }`, false, "test.bt:1:1: probe is read but site 0 does not say which probe it is", nil},
		{"func of a site of no function", `uprobe:/x:f { @[func] = count(); }`, false, "test.bt:1:1: func is read but site 1 (offset 0x1001 in /bin/true) does not say which function it probes",
			func(o *btgen.Options) { o.Sites[0][1].Func = "" }},
		{"retval at a site of no return value", `uretprobe:/x:f { @ = sum(retval); }`, false, "test.bt:1:1: retval is read but a site of this block is not a return probe",
			func(o *btgen.Options) { o.Sites[0][2].Ret = argread.Fetch{} }},
		{"a block of no site", `uprobe:/x:f { @ = sum(arg7); printf("%s\n", str("abc", arg1)); }`, false, "", func(o *btgen.Options) { o.Sites[0] = nil }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			prog, opts := compile(t, tt.src)
			if tt.cfi {
				opts.StackKeys = btgen.StackKeysCopy
			}
			if tt.sites != nil {
				tt.sites(opts)
			}
			_, err := btgen.Support(prog, opts)
			if tt.err == "" {
				if err != nil {
					t.Fatalf("Support: %v", err)
				}
				if _, err := btgen.Generate(prog, opts); err != nil {
					t.Fatalf("Support accepts, Generate: %v", err)
				}
				return
			}
			var e *btlang.Error
			if !errors.As(err, &e) || err.Error() != tt.err {
				t.Fatalf("Support: %v, want %s", err, tt.err)
			}
			if _, gerr := btgen.Generate(prog, opts); gerr == nil || gerr.Error() != err.Error() {
				t.Errorf("Generate: %v, want Support's error", gerr)
			}
		})
	}
}

// FuzzSupport: for any program the checker accepts, Generate never meets
// what Support should have refused (an internal error), with stacks
// unwound either way.
func FuzzSupport(f *testing.F) {
	_, srcs := corpusOf(f)
	for _, src := range srcs {
		f.Add(src, false)
	}
	f.Add(`uprobe:/x:f { @[ustack] = count(); delete(@[ustack]); }`, true)
	f.Fuzz(func(t *testing.T, src string, cfi bool) {
		prog, err := btlang.Compile("test.bt", []byte(src), nil)
		if err != nil {
			return
		}
		opts := sitesOf(t, prog)
		if cfi {
			opts.StackKeys = btgen.StackKeysCopy
		}
		if _, err := btgen.Generate(prog, opts); err != nil && strings.Contains(err.Error(), "internal error") {
			t.Fatalf("%q: %v", src, err)
		}
	})
}

// TestPlanGenerate: a plan builds the same program each time, and a copy
// made for another kernel (WithCopyStr) leaves it as it was.
func TestPlanGenerate(t *testing.T) {
	prog, opts := compile(t, `uprobe:/x:f { @[probe] = count(); } uprobe:/x:f /arg0/ { @[probe] = count(); printf("%s\n", str(arg1)); } BEGIN { @b = 1; }`)
	plan, err := btgen.Support(prog, opts)
	if err != nil {
		t.Fatal(err)
	}
	listing := func(p *btgen.Plan) string {
		t.Helper()
		out, err := p.Generate()
		if err != nil {
			t.Fatal(err)
		}
		return out.Listing()
	}
	first := listing(plan)
	if !strings.Contains(first, "block0") || !strings.Contains(first, "block2") {
		t.Fatalf("listing has not every block:\n%s", first)
	}
	if other := listing(plan.WithCopyStr(12345)); other == first {
		t.Error("WithCopyStr: the same program as without the kfunc")
	}
	if again := listing(plan); again != first {
		t.Errorf("a second Generate differs:\n%s\nfirst:\n%s", again, first)
	}
	want, err := btgen.Generate(prog, opts)
	if err != nil {
		t.Fatal(err)
	}
	if want.Listing() != first {
		t.Error("Plan.Generate differs from Generate")
	}
}
