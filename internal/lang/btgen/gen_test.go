package btgen_test

import (
	"debug/elf"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cilium/ebpf"

	"github.com/usdtkit/usdtkit/internal/bpf/argread"
	"github.com/usdtkit/usdtkit/internal/lang/btgen"
	"github.com/usdtkit/usdtkit/internal/lang/btlang"
	"github.com/usdtkit/usdtkit/internal/testutil"
)

// regArgs returns register fetches of the x86-64 calling convention.
func regArgs(t testing.TB, n int) []argread.Fetch {
	t.Helper()
	names := []string{"rdi", "rsi", "rdx", "rcx", "r8", "r9", "rax", "rbx", "r10", "r11", "r12", "r13"}
	var fs []argread.Fetch
	for i := range n {
		off, err := argread.PtRegs(elf.EM_X86_64, names[i])
		if err != nil {
			t.Fatal(err)
		}
		fs = append(fs, argread.Fetch{Kind: argread.FetchReg, Size: 8, Signed: true, Reg: argread.Reg{Off: off, Width: 8}})
	}
	return fs
}

func compile(t *testing.T, src string) (*btlang.Program, *btgen.Options) {
	t.Helper()
	prog, err := btlang.Compile("test.bt", []byte(src), nil)
	if err != nil {
		t.Fatalf("compile %q: %v", src, err)
	}
	return prog, sitesOf(t, prog)
}

// sitesOf returns Options with three sites of six register arguments per
// block of prog, return sites for uretprobes.
func sitesOf(tb testing.TB, prog *btlang.Program) *btgen.Options {
	tb.Helper()
	opts := &btgen.Options{Machine: elf.EM_X86_64}
	rax, _ := argread.PtRegs(elf.EM_X86_64, "rax")
	for _, b := range prog.Blocks {
		ret := b.Probes[0].Kind == btlang.ProbeUretprobe
		var sites []btgen.Site
		for i := range 3 {
			s := btgen.Site{Path: "/bin/true", Offset: uint64(0x1000 + i), Args: regArgs(tb, 6), Return: ret, Func: fmt.Sprintf("f%d", i%2)}
			if i == 2 {
				// A memory argument: argread's fetch code with a fault bit.
				s.Args[1] = argread.Fetch{Kind: argread.FetchMem, Size: 4, HasBase: true, Reg: s.Args[0].Reg, Offset: 16}
			}
			if ret {
				s.Ret = argread.Fetch{Kind: argread.FetchReg, Size: 8, Signed: true, Reg: argread.Reg{Off: rax, Width: 8}}
			}
			sites = append(sites, s)
		}
		opts.Sites = append(opts.Sites, sites)
	}
	return opts
}

var loadTests = []struct{ name, src string }{
	// bpftrace takes long flat expressions (the depth bound is 1000).
	{"flat sum of 300 terms", "uprobe:/x:f { @ = sum(arg0" + strings.Repeat(" + arg1", 299) + "); }"},
	{"count", `usdt:/x:p:a { @ = count(); }`},
	{"count by pid", `usdt:/x:p:a { @[pid] = count(); }`},
	{"count by comm", `usdt:/x:p:a { @[comm] = count(); }`},
	{"count by str", `usdt:/x:p:a { @[str(arg1)] = count(); }`},
	{"tuple key", `usdt:/x:p:a { @[pid, comm, str(arg1, 8)] = count(); }`},
	{"hist", `uprobe:/x:f { @h = hist(arg0); }`},
	{"hist keyed", `uprobe:/x:f { @h[tid] = hist(arg0 * 3 - 7); }`},
	{"lhist", `uprobe:/x:f { @l = lhist(arg0, 0, 100, 10); }`},
	{"lhist wide", `uprobe:/x:f { @l[comm] = lhist(arg2, 0, 10000, 10); }`},
	{"sum avg min max stats", `usdt:/x:p:a { @s = sum(arg0); @a = avg(arg0); @mi = min(arg0); @ma = max(arg0); @st = stats(arg0); }`},
	{"string predicate", `usdt:/x:p:a /str(arg1) == "hello"/ { @ = count(); }`},
	{"string ne", `usdt:/x:p:a /str(arg1) != comm/ { @[comm] = count(); }`},
	{"printf", `usdt:/x:p:a { printf("%d %s %x\n", arg0, str(arg1), arg2); }`},
	{"latency", `uprobe:/x:f { @start[tid] = nsecs; } uretprobe:/x:f /@start[tid]/ { @ns = hist(nsecs - @start[tid]); delete(@start[tid]); }`},
	{"retval", `uretprobe:/x:f { @r[retval] = count(); @last = retval; }`},
	{"if else", `usdt:/x:p:a { if (arg0 > 5) { @big = count(); } else if (arg0 < -5) { @neg = count(); } else { @small = count(); } }`},
	{"ternary logic", `usdt:/x:p:a { @t = arg0 > 3 && arg1 != 0 || !arg2 ? arg0 % 7 : ~arg1 >> 2; }`},
	{"variables", `usdt:/x:p:a { $x = arg0 * 2; $s = str(arg1); $x += 5; @v[$s] = $x; }`},
	{"string map", `usdt:/x:p:a { @name[pid] = str(arg1); @n2[tid] = @name[pid]; }`},
	{"compound map", `usdt:/x:p:a { @c += arg0; @d[cpu]++; @e[uid, gid] -= 2; }`},
	{"exit clear zero print", `usdt:/x:p:a { @n = count(); if (arg0 == 9) { print(@n); clear(@n); zero(@n); exit(); } }`},
	{"all args", `usdt:/x:p:a { @ = sum(arg0 + arg1 + arg2 + arg3 + arg4 + arg5); }`},
	{"two probes one block", `usdt:/x:p:a, usdt:/x:p:b { @[arg0] = count(); }`},
	{"signed compare", `usdt:/x:p:a /arg0 < 0/ { @neg = count(); }`},
	{"BEGIN END interval", `BEGIN { @b = 1; printf("hi\n"); } interval:ms:100 { @i++; } END { printf("%d\n", @b); }`},
	{"elapsed", `usdt:/x:p:a { @e = elapsed; @h = hist(elapsed / 1000000); }`},
	{"time print top", `usdt:/x:p:a { @n[arg0] = count(); print(@n, 3, 2); time(); time("%s\n"); }`},
	{"probe", `usdt:/x:p:a { @[probe, arg0] = count(); printf("%s\n", probe); }`},
	{"cgroup username", `usdt:/x:p:a { @[cgroup] = count(); printf("%s %d\n", username, cgroup); print(username); }`},
	{"tuples", `usdt:/x:p:a { $t = (arg0, str(arg1), (comm, (int8)arg2)); @m[arg0] = $t; @s = (1, "x"); @s = (2, "longer"); print($t); printf("%d %s %s\n", $t.0, $t.2.0, @m[arg0].1); @i = (1, 2).0; }`},
	{"++ as an expression", `usdt:/x:p:a { $i = 0; @n[arg0] = 1; @s = sum($i++); printf("%d %d %d\n", ++$i, @n[arg0]++, --@n[arg0]); @c = ++@c; }`},
	{"buffers", `usdt:/x:p:a { @b[buf(arg1, 8), arg2] = count(); $b = buf(arg1, arg2); @last = $b; printf("%r %rx %d\n", $b, buf(str(arg1), 5), $b == @last); }`},
	{"strcontains", `usdt:/x:p:a { @[strcontains("abc", "b")] = count(); }`},
	{"strftime", `usdt:/x:p:a { $t = strftime("%H:%M:%S.%f", nsecs); @k[strftime("%H", nsecs), arg0] = count(); @v[arg0] = $t; @tu = (arg0, $t); printf("%s %s\n", $t, @v[arg0]); }`},
	{"ntop", `usdt:/x:p:a { printf("%s %s %s\n", ntop(arg0), ntop(arg1, arg2), ntop(10, pton("::1"))); print(ntop(2, pton("1.2.3.4"))); }`},
	{"usym values", `usdt:/x:p:a { @u[tid] = usym(arg0); @last = @u[tid]; }`},
	{"cat", `usdt:/x:p:a { cat("/proc/%d/comm", pid); cat("%s", str(arg1)); }`},
	{"casts and reads", `uprobe:/x:f { @[(int8)arg0, (uint16)arg1, (uint32)arg2, (int32)arg3] = sum(*(int16*)(arg1 + 2)); printf("%d %u\n", *(uint8*)arg0, *(int64*)arg2); }`},
	{"while break continue return", `uprobe:/x:f { $i = 0; while ($i < 20) { $i++; if ($i == arg0) { continue; } if ($i > arg1) { break; } if ($i == 19) { return; } @[$i] = count(); } unroll(3) { @u++; } }`},
	{"usym", `uprobe:/x:f { @[usym(arg0), pid] = count(); printf("%s %s\n", usym(arg1), usym(reg("ip"))); print(usym(arg2)); }`},
	{"func", `uprobe:/x:f { @[func, probe] = count(); @f[func] = sum(arg0); printf("%s %s %d\n", func, probe, arg0); } uretprobe:/x:f { @r[func] = count(); }`},
	{"func and probe values", `uprobe:/x:f { @f[tid] = func; @p[tid] = probe; } uretprobe:/x:f { @by[@f[tid], @p[tid]] = count(); printf("%s %s\n", @f[tid], @p[tid]); delete(@f[tid]); }`},
	{"string ternary, str variable length", `usdt:/x:p:a { @s[arg0 > 5 ? "big" : comm] = count(); printf("%s\n", str(arg1, arg2)); }`},
	{"ustack keys", `uprobe:/x:f { @[ustack] = count(); @p[ustack(perf, 5), comm] = sum(arg0); @u[ustack(bpftrace, 3)] = count(); }`},
	{"ustack printf", `uprobe:/x:f { printf("%s %d %s\n", ustack, pid, ustack(perf, 4)); }`},
	{"ustack key and printf, usdt", `usdt:/x:p:a { @[ustack(2)] = count(); printf("%s\n", ustack(2)); delete(@[ustack(2)]); }`},
	{"profile ustack keys", `profile:hz:99 { @[ustack] = count(); @p[ustack(perf, 5), comm, cpu] = count(); }`},
	{"profile printf", `profile:ms:10 /pid == 1/ { printf("%s %s %s\n", probe, ustack, ustack(perf, 3)); @[tid] = count(); }`},
	{"profile and uprobe stacks", `uprobe:/x:f { @[ustack] = count(); } p:us:500 { @[ustack] = count(); @e = max(elapsed); }`},
	{"big constants", `usdt:/x:p:a { @b = arg0 & 0xffffffffff; @c[0x123456789abc] = count(); printf("%s\n", "a long literal string of many bytes"); }`},
}

func TestGenerateLoads(t *testing.T) {
	testutil.RequireBPF(t)
	n := 0
	for _, tt := range loadTests {
		t.Run(tt.name, func(t *testing.T) {
			prog, err := btlang.Compile("test.bt", []byte(tt.src), nil)
			if err != nil {
				t.Fatalf("compile: %v", err)
			}
			_, opts := compile(t, tt.src)
			out, err := btgen.Generate(prog, opts)
			if err != nil {
				t.Fatalf("Generate: %v", err)
			}
			mustLoad(t, out.Spec)
			n++
		})
	}
	if n < 20 {
		t.Errorf("%d programs loaded, want at least 20", n)
	}
}

// TestGenerateFuncNames: func is a name id per site, in the table of probe
// names, and a site that does not name its function cannot read it.
func TestGenerateFuncNames(t *testing.T) {
	prog, opts := compile(t, `uprobe:/x:f { @[func] = count(); }`)
	out, err := btgen.Generate(prog, opts)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(out.Probes, "f0") || !slices.Contains(out.Probes, "f1") {
		t.Errorf("names %q, want f0 and f1 among them", out.Probes)
	}
	opts.Sites[0][1].Func = ""
	if _, err := btgen.Generate(prog, opts); err == nil || !strings.Contains(err.Error(), "func is read but site 1") {
		t.Errorf("a site without its function: %v, want an error", err)
	}
}

// TestGenerateUnsupported: what the slice does not compile is an error at
// its position, never a program.
func TestGenerateUnsupported(t *testing.T) {
	tests := []struct{ name, src, pos string }{
		{"BEGIN with usdt", `BEGIN, usdt:/x:p:a { @ = count(); }`, "test.bt:1:8"},
		{"two intervals", `interval:s:1, interval:s:2 { exit(); }`, "test.bt:1:15"},
		{"tuple of a probe", `usdt:/x:p:a { @t = (1, probe); }`, "test.bt:1:15"},
		{"strcontains of a variable", `usdt:/x:p:a { $s = "ab"; @ = strcontains($s, "a"); }`, "test.bt:1:30"},
		{"username key", `usdt:/x:p:a { @[username] = count(); }`, "test.bt:1:15"},
		{"too many printf'd stacks", `usdt:/x:p:a { printf("%s\n", ustack); printf("%s\n", ustack); printf("%s\n", ustack); printf("%s\n", ustack); }`, "test.bt:1:102"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			prog, opts := compile(t, tt.src)
			out, err := btgen.Generate(prog, opts)
			var e *btlang.Error
			if !errors.As(err, &e) {
				t.Fatalf("Generate = %v, %v; want a *btlang.Error", out, err)
			}
			if e.Pos.String() != tt.pos {
				t.Errorf("error at %s, want %s: %v", e.Pos, tt.pos, e)
			}
		})
	}
}

// TestCorpus generates every program of btlang's valid corpus (with three
// sites of six register arguments per block, return sites for
// uretprobes): each either loads in the kernel or is rejected with a
// positioned error — never a panic, never a program the verifier refuses.
func TestCorpus(t *testing.T) {
	testutil.RequireBPF(t)
	names, srcs := corpus(t)
	loaded := 0
	for i, src := range srcs {
		t.Run(names[i], func(t *testing.T) {
			prog, err := btlang.Compile("corpus.bt", []byte(src), &btlang.CheckOptions{Probes: anyArgs{}})
			if err != nil {
				// args.NAME of Go functions needs their binaries.
				var e *btlang.Error
				if !errors.As(err, &e) {
					t.Fatalf("Compile: %v", err)
				}
				return
			}
			_, opts := compile(t, src)
			out, err := btgen.Generate(prog, opts)
			if err != nil {
				var e *btlang.Error
				if !errors.As(err, &e) {
					t.Fatalf("Generate: %v, want a *btlang.Error", err)
				}
				t.Logf("rejected: %v", err)
				return
			}
			mustLoad(t, out.Spec)
			loaded++
		})
	}
	t.Logf("%d of %d corpus programs loaded", loaded, len(srcs))
	if loaded < len(srcs)/2 {
		t.Errorf("only %d of %d corpus programs loaded", loaded, len(srcs))
	}
}

// corpus returns the names and sources of btlang's corpus of valid programs.
func corpus(t *testing.T) (names, srcs []string) {
	t.Helper()
	return corpusOf(t)
}

// corpusOf returns the names and sources of btlang's valid corpus.
func corpusOf(t testing.TB) (names, srcs []string) {
	t.Helper()
	data, err := os.ReadFile("../btlang/testdata/valid.txt")
	if err != nil {
		t.Fatal(err)
	}
	for l := range strings.Lines(string(data)) {
		if strings.HasPrefix(l, "-- ") {
			names = append(names, strings.Trim(l, "- \n"))
			srcs = append(srcs, "")
			continue
		}
		if len(srcs) > 0 {
			srcs[len(srcs)-1] += l
		}
	}
	if len(srcs) < 20 {
		t.Fatalf("%d corpus entries", len(srcs))
	}
	return names, srcs
}

type anyArgs struct{}

func (anyArgs) Args(*btlang.Probe) (btlang.ProbeArgs, error) { return btlang.ProbeArgs{Count: -1}, nil }

// TestMapKinds: maps without keys and maps keyed only by probe are arrays
// (per-CPU for aggregations) with a set flag after the value; other keys,
// and maps a delete() names, stay hash maps.
func TestMapKinds(t *testing.T) {
	tests := []struct {
		name, src string
		want      map[string]ebpf.MapType // language name → BPF map type
	}{
		{"scalar count", `usdt:/x:p:a { @c = count(); }`, map[string]ebpf.MapType{"@c": ebpf.PerCPUArray}},
		{"scalar int and string", `usdt:/x:p:a { @i = arg0; @s = comm; }`, map[string]ebpf.MapType{"@i": ebpf.Array, "@s": ebpf.Array}},
		{"probe keys", `usdt:/x:p:a { @[probe] = hist(arg0); } usdt:/x:p:b { @[probe] = hist(arg1); @l[probe] = 1; }`, map[string]ebpf.MapType{"@": ebpf.PerCPUArray, "@l": ebpf.Array}},
		{"other keys", `usdt:/x:p:a { @p[pid] = count(); @t[probe, 1] = sum(arg0); }`, map[string]ebpf.MapType{"@p": ebpf.PerCPUHash, "@t": ebpf.PerCPUHash}},
		{"deleted", `usdt:/x:p:a { @c = count(); @v = 1; delete(@c); delete(@v); }`, map[string]ebpf.MapType{"@c": ebpf.PerCPUHash, "@v": ebpf.Hash}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			prog, opts := compile(t, tt.src)
			out, err := btgen.Generate(prog, opts)
			if err != nil {
				t.Fatal(err)
			}
			if len(out.Maps) != len(tt.want) {
				t.Fatalf("have %d maps, want %d", len(out.Maps), len(tt.want))
			}
			for _, mi := range out.Maps {
				spec := out.Spec.Maps[mi.BPF]
				if have, want := spec.Type, tt.want[mi.Map.Name]; have != want {
					t.Errorf("%s: have %v, want %v", mi.Map.Name, have, want)
				}
				if !mi.Array {
					continue
				}
				slots := uint32(1)
				if len(mi.Keys) > 0 {
					slots = uint32(len(out.Probes))
				}
				if spec.KeySize != 4 || spec.MaxEntries != slots || mi.SetOff+8 != mi.ValueSize {
					t.Errorf("%s: key %d bytes, %d slots, set flag at %d of %d; want 4 bytes, %d slots, last 8 bytes", mi.Map.Name, spec.KeySize, spec.MaxEntries, mi.SetOff, mi.ValueSize, slots)
				}
			}
		})
	}
}

// TestGenerateProfile: a profile block is a perf-event program without
// sites, sampling at its rate or period, with the process filter map; it
// loads with each way of capturing stacks.
func TestGenerateProfile(t *testing.T) {
	const src = `profile:hz:99 { @[ustack] = count(); printf("%s\n", ustack); } profile:us:250 { @s[ustack(perf)] = sum(1); }`
	for _, tt := range []struct {
		name string
		opts btgen.Options
	}{
		{"walk", btgen.Options{}},
		{"kernel frames for printf", btgen.Options{StackCopy: -1}},
		{"keys copied", btgen.Options{StackKeys: btgen.StackKeysCopy}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			prog, base := compile(t, src)
			opts := tt.opts
			opts.Machine, opts.Sites = base.Machine, base.Sites
			out, err := btgen.Generate(prog, &opts)
			if err != nil {
				t.Fatal(err)
			}
			want := []struct {
				freq   uint64
				period time.Duration
			}{{99, 0}, {0, 250 * time.Microsecond}}
			for i, b := range out.Blocks {
				ps := out.Spec.Programs[b.Prog]
				if b.Kind != btlang.ProbeProfile || len(b.Sites) != 0 || b.Freq != want[i].freq || b.Period != want[i].period || ps.Type != ebpf.PerfEvent {
					t.Errorf("block %d: kind %v, %d sites, freq %d, period %v, program type %v; want profile, none, %d, %v, PerfEvent",
						i, b.Kind, len(b.Sites), b.Freq, b.Period, ps.Type, want[i].freq, want[i].period)
				}
			}
			if _, ok := out.Spec.Maps[btgen.MapProfilePIDs]; !ok {
				t.Errorf("no %s map", btgen.MapProfilePIDs)
			}
			if !slices.Contains(out.Probes, "profile:hz:99") {
				t.Errorf("probe names %q lack profile:hz:99", out.Probes)
			}
			testutil.RequireBPF(t)
			mustLoad(t, out.Spec)
		})
	}
}

// TestGenerateProfileRefused: a profile probe with other probes in one
// block, and a rate past the bounds, are errors at the probe.
func TestGenerateProfileRefused(t *testing.T) {
	for _, src := range []string{
		`profile:hz:99, uprobe:/x:f { @ = count(); }`,
		`profile:hz:2000000 { @ = count(); }`,
		`profile:s:100000 { @ = count(); }`,
	} {
		prog, opts := compile(t, src)
		_, err := btgen.Generate(prog, opts)
		var be *btlang.Error
		if !errors.As(err, &be) {
			t.Errorf("%s: error %v, want a *btlang.Error", src, err)
		}
	}
}

// mustLoad loads spec into the kernel, failing t with the verifier's log
// if it refuses it, and closes it.
func mustLoad(t *testing.T, spec *ebpf.CollectionSpec) {
	t.Helper()
	coll, err := ebpf.NewCollection(spec)
	if err != nil {
		var ve *ebpf.VerifierError
		if errors.As(err, &ve) {
			t.Fatalf("load: %+v", ve)
		}
		t.Fatalf("load: %v", err)
	}
	coll.Close()
}

// TestGenerateSizeLimits: a program whose jumps a 16-bit offset cannot
// reach, or past the kernel's instruction limit (nested unrolls), is
// refused with a sentence at the block, before anything is loaded; the
// second without first building every copy of the body.
func TestGenerateSizeLimits(t *testing.T) {
	tests := []struct{ name, src, want string }{
		{"jump out of range", `uprobe:/x:f { $i = 0; unroll(100) { unroll(100) { $i++; } } @ = sum($i); }`, "more than a BPF jump reaches"},
		{"too many instructions", `uprobe:/x:f { $i = 0; unroll(100) { unroll(100) { unroll(100) { unroll(100) { $i++; } } } } @ = sum($i); }`, "more than 1000000 instructions"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			prog, opts := compile(t, tt.src)
			_, err := btgen.Generate(prog, opts)
			var e *btlang.Error
			if !errors.As(err, &e) || e.Pos.Line != 1 || e.Pos.Col != 1 || !strings.Contains(e.Msg, tt.want) {
				t.Errorf("Generate: %v; want an error at 1:1 saying %q", err, tt.want)
			}
		})
	}
}
