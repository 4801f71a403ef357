package btgen_test

import (
	"slices"
	"testing"

	"github.com/cilium/ebpf/asm"
	"golang.org/x/sys/unix"

	"github.com/usdtkit/usdtkit/internal/bpf/features"
	"github.com/usdtkit/usdtkit/internal/lang/btgen"
	"github.com/usdtkit/usdtkit/internal/lang/btlang"
	"github.com/usdtkit/usdtkit/internal/testutil"
)

// TestSleepableLoads generates every program of loadTests, and blocks
// with string events, with Options.CopyStr and loads them: the blocks
// that read user strings and no ustack are sleepable and call the kfunc,
// the others are as without CopyStr; without it, the former say they
// could sleep (Block.CouldSleep). Sleepable blocks read with
// bpf_probe_read_user_str first, then with the kfunc where that faulted.
func TestSleepableLoads(t *testing.T) {
	testutil.RequireBPF(t)
	id, err := features.SleepableCopyStr()
	if err != nil {
		t.Skipf("no bpf_copy_from_user_str: %v", err)
	}
	// Blocks (by test name) that read user strings and no stack.
	sleepy := map[string][]bool{
		"count by str":                        {true},
		"tuple key":                           {true},
		"string predicate":                    {true},
		"string ne":                           {true},
		"printf":                              {true},
		"cat":                                 {true},
		"tuples":                              {true},
		"buffers":                             {true},
		"variables":                           {true},
		"string map":                          {true},
		"string ternary, str variable length": {true},
		"event strings":                       {true},
		"event strings with ustack":           {false},
	}
	tests := slices.Clone(loadTests)
	tests = append(tests, struct{ name, src string }{"event strings", `uprobe:/x:f {}`},
		struct{ name, src string }{"event strings with ustack", `uprobe:/x:f { @[ustack] = count(); }`})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			prog, opts := compile(t, tt.src)
			opts.CopyStr = id
			if len(tt.name) > 5 && tt.name[:5] == "event" {
				opts.Events = []*btgen.Event{{Args: 2, Strings: 0b11}}
			}
			plain := *opts
			plain.CopyStr = 0
			without, err := btgen.Generate(prog, &plain)
			if err != nil {
				t.Fatalf("Generate without CopyStr: %v", err)
			}
			out, err := btgen.Generate(prog, opts)
			if err != nil {
				t.Fatalf("Generate: %v", err)
			}
			for i, b := range out.Blocks {
				want := i < len(sleepy[tt.name]) && sleepy[tt.name][i]
				if w := without.Blocks[i]; w.CouldSleep != want || w.Sleepable {
					t.Errorf("block %d without CopyStr: CouldSleep %v, Sleepable %v; want %v, false", i, w.CouldSleep, w.Sleepable, want)
				}
				spec := out.Spec.Programs[b.Prog]
				kfunc := slices.ContainsFunc(spec.Instructions, func(in asm.Instruction) bool { return in.IsKfuncCall() })
				helper := slices.ContainsFunc(spec.Instructions, func(in asm.Instruction) bool {
					return in.IsBuiltinCall() && in.Constant == int64(asm.FnProbeReadUserStr)
				})
				if b.Sleepable != want || (spec.Flags == unix.BPF_F_SLEEPABLE) != want || kfunc != want || (want && !helper) {
					t.Errorf("block %d: Sleepable %v, flags %#x, kfunc %v, bpf_probe_read_user_str %v; want sleepable %v", i, b.Sleepable, spec.Flags, kfunc, helper, want)
				}
			}
			mustLoad(t, out.Spec)
		})
	}
}

// TestSleepableGoStrings: blocks reading Go strings by name (args.NAME)
// are sleepable with Options.CopyStr, copy the bytes with
// bpf_copy_from_user where bpf_probe_read_user faulted, and load.
func TestSleepableGoStrings(t *testing.T) {
	testutil.RequireBPF(t)
	id, err := features.SleepableCopyStr()
	if err != nil {
		t.Skipf("no bpf_copy_from_user_str: %v", err)
	}
	tests := []struct {
		name, src string
		sleepable bool
	}{
		{"string key", `uprobe:/x:f /args.path == "/b"/ { @[args.path] = count(); }`, true},
		{"printf", `uprobe:/x:f { printf("%s %d\n", args.path, args.n); }`, true},
		{"integers only", `uprobe:/x:f { @[args.n, goid] = count(); }`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			prog, err := btlang.Compile("go.bt", []byte(tt.src), &btlang.CheckOptions{Probes: goProbes{}})
			if err != nil {
				t.Fatalf("Compile: %v", err)
			}
			opts := goSites(t, prog, false)
			opts.CopyStr = id
			out, err := btgen.Generate(prog, opts)
			if err != nil {
				t.Fatalf("Generate: %v", err)
			}
			spec := out.Spec.Programs[out.Blocks[0].Prog]
			copies := slices.ContainsFunc(spec.Instructions, func(in asm.Instruction) bool { return in.IsBuiltinCall() && in.Constant == int64(asm.FnCopyFromUser) })
			if out.Blocks[0].Sleepable != tt.sleepable || copies != tt.sleepable {
				t.Errorf("Sleepable %v, bpf_copy_from_user %v; want %v", out.Blocks[0].Sleepable, copies, tt.sleepable)
			}
			mustLoad(t, out.Spec)
		})
	}
}
