package btgen_test

import (
	"testing"

	"github.com/cilium/ebpf/asm"

	"github.com/usdtkit/usdtkit/internal/lang/btgen"
	"github.com/usdtkit/usdtkit/internal/testutil"
)

// TestCountBlocks: a block that only counts into array maps (@ = count(),
// @[probe] = count(), or nothing) runs no helper but the verifier-inlined
// array lookup, never touches the scratch value and adds atomically; it
// reads the attach cookie only when its sites are different probes. Other
// blocks keep the general prologue, and add atomically only to maps a
// counting block also counts into. Every program loads.
func TestCountBlocks(t *testing.T) {
	testutil.RequireBPF(t)
	type want struct {
		counting bool // no scratch, no busy flag
		cookie   bool // calls bpf_get_attach_cookie
		atomic   int  // atomic adds
	}
	tests := []struct {
		name   string
		src    string
		probes []string // per site (three per block), "" for the block's probe
		want   []want   // per block
	}{
		{"scalar", `usdt:/x:p:a { @ = count(); }`, nil, []want{{true, false, 1}}},
		{"by probe, one probe", `usdt:/x:p:a { @[probe] = count(); }`, nil, []want{{true, false, 1}}},
		{"two maps", `usdt:/x:p:a { @a = count(); @b[probe] = count(); }`, nil, []want{{true, false, 2}}},
		{"empty action", `usdt:/x:p:a { }`, nil, []want{{true, false, 0}}},
		{"by probe, two probes", `usdt:/x:p:a, usdt:/x:p:b { @[probe] = count(); }`,
			[]string{"usdt:/x:p:a", "usdt:/x:p:b", "usdt:/x:p:a"}, []want{{true, true, 1}}},
		{"two probes, no probe key", `usdt:/x:p:a, usdt:/x:p:b { @ = count(); }`,
			[]string{"usdt:/x:p:a", "usdt:/x:p:b", "usdt:/x:p:a"}, []want{{true, false, 1}}},
		{"shared with a predicate block", `usdt:/x:p:a { @c = count(); } usdt:/x:p:b /arg0 > 0/ { @c = count(); @d = count(); }`,
			nil, []want{{true, false, 1}, {false, false, 1}}},
		{"predicate", `usdt:/x:p:a /arg0 > 0/ { @ = count(); }`, nil, []want{{false, false, 0}}},
		{"pid key", `usdt:/x:p:a { @[pid] = count(); }`, nil, []want{{false, false, 0}}},
		{"sum", `usdt:/x:p:a { @ = sum(arg0); }`, nil, []want{{false, false, 0}}},
		{"count and printf", `usdt:/x:p:a { @ = count(); printf("hi\n"); }`, nil, []want{{false, false, 0}}},
		{"deleted", `usdt:/x:p:a { @ = count(); delete(@); }`, nil, []want{{false, false, 0}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			prog, opts := compile(t, tt.src)
			for _, sites := range opts.Sites {
				for i := range sites {
					if tt.probes != nil {
						sites[i].Probe = tt.probes[i]
					}
				}
			}
			out, err := btgen.Generate(prog, opts)
			if err != nil {
				t.Fatal(err)
			}
			if len(out.Blocks) != len(tt.want) {
				t.Fatalf("%d blocks, want %d", len(out.Blocks), len(tt.want))
			}
			for i, b := range out.Blocks {
				insns := out.Spec.Programs[b.Prog].Instructions
				var have want
				have.counting = true
				for _, in := range insns {
					if in.IsLoadFromMap() && in.Reference() == btgen.MapScratch {
						have.counting = false
					}
					if fn, ok := builtin(in); ok {
						switch fn {
						case asm.FnGetAttachCookie:
							have.cookie = true
						case asm.FnMapLookupElem:
						default:
							if have.counting {
								t.Errorf("block %d calls %v", i, fn)
							}
						}
					}
					if in.OpCode.AtomicOp() == asm.AddAtomic {
						have.atomic++
					}
				}
				if have != tt.want[i] {
					t.Errorf("block %d: have %+v, want %+v\n%v", i, have, tt.want[i], insns)
				}
			}
			mustLoad(t, out.Spec)
		})
	}
}

// builtin returns the helper an instruction calls.
func builtin(in asm.Instruction) (asm.BuiltinFunc, bool) {
	if !in.IsBuiltinCall() {
		return 0, false
	}
	return asm.BuiltinFunc(in.Constant), true
}
