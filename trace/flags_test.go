package trace

import (
	"debug/elf"
	"errors"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/usdtkit/usdtkit/internal/lang/btlang"
	"github.com/usdtkit/usdtkit/internal/testutil"
)

// canonical returns program src as the language's printer writes it,
// which FlagProgram returns.
func canonical(t *testing.T, src string) string {
	t.Helper()
	prog, err := btlang.Parse("want", []byte(src))
	if err != nil {
		t.Fatalf("want %q: %v", src, err)
	}
	return prog.String()
}

// TestFlagProgram checks the program each set of flags stands for, on
// tracee.c's probes (str: a string and an int; consts: four ints),
// written as the test reads best and compared in canonical form.
func TestFlagProgram(t *testing.T) {
	bin := testutil.BuildTracee(t, "-O0")
	str, consts := "usdt:"+bin+":tracee:str", "usdt:"+bin+":tracee:consts"
	tests := []struct {
		name  string
		flags Flags
		want  string // BIN stands for the tracee
	}{
		{"count", Flags{Probes: []string{str, consts}, Count: true},
			"usdt:BIN:tracee:str,\nusdt:BIN:tracee:consts\n{ @[probe] = count(); }\n"},
		{"count by", Flags{Probes: []string{"usdt:" + bin + ":tracee:st*"}, Count: true, By: []string{"pid", "comm", "tid", "arg1", "str(arg0)"}},
			"usdt:BIN:tracee:st*\n{ @[probe, pid, comm, tid, arg1, str(arg0)] = count(); }\n"},
		{"stacks", Flags{Probes: []string{str}, Stacks: true},
			"usdt:BIN:tracee:str\n{ @[probe, ustack] = count(); }\n"},
		{"stacks by", Flags{Probes: []string{str}, Stacks: true, By: []string{"comm"}},
			"usdt:BIN:tracee:str\n{ @[probe, comm, ustack] = count(); }\n"},
		{"count by --str", Flags{Probes: []string{str}, Count: true, By: []string{"arg0"}, Strings: []string{"0"}, StrLen: 16},
			"usdt:BIN:tracee:str\n{ @[probe, str(arg0, 15)] = count(); }\n"},
		{"hist filters", Flags{Probes: []string{str}, Hist: "arg1", Filters: []string{"arg1 >= 0x10", `str(arg0) != "a\"\\\n"`}},
			"usdt:BIN:tracee:str\n/arg1 >= 16 && str(arg0) != \"a\\\"\\\\\\n\"/\n{ @[probe] = hist(arg1); }\n"},
		{"per-probe filter", Flags{Probes: []string{consts, "usdt:" + bin + ":tracee:s*r"}, Count: true, Filters: []string{"tracee:str=arg1 == 1", "arg0 != -1"}},
			"usdt:BIN:tracee:consts\n/arg0 != -1/\n{ @[probe] = count(); }\n" +
				"usdt:BIN:tracee:str\n/arg1 == 1 && arg0 != -1/\n{ @[probe] = count(); }\n"},
		{"formats", Flags{Probes: []string{str, consts}, Formats: []string{"%d, %-5u %x%%", `tracee:str="%s\t%08d\n", str(arg0), arg1`}},
			"usdt:BIN:tracee:str\n{ printf(\"%s\\t%08lld\\n\", str(arg0), arg1); }\n" +
				"usdt:BIN:tracee:consts\n{ printf(\"%lld, %-5llu %llx%%\\n\", arg0, arg1, arg2); }\n"},
		{"latency", Flags{Probes: []string{str, consts}, Latency: "str,tracee:consts", Filters: []string{"arg1 > 0"}},
			"usdt:BIN:tracee:str\n/arg1 > 0/\n{ @start[tid] = nsecs; }\n" +
				"usdt:BIN:tracee:consts\n/@start[tid] && arg1 > 0/\n{ @latency_ns[probe] = hist(nsecs - @start[tid]); delete(@start[tid]); }\n"},
		{"uretprobe", Flags{Probes: []string{"uprobe:" + bin + ":run", "uretprobe:" + bin + ":run"}, Hist: "arg0"},
			"uprobe:BIN:run\n{ @[probe] = hist(arg0); }\nuretprobe:BIN:run\n{ @[probe] = hist(retval); }\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			have, err := FlagProgram(&tt.flags, nil)
			if err != nil {
				t.Fatal(err)
			}
			if want := canonical(t, strings.ReplaceAll(tt.want, "BIN", bin)); have != want {
				t.Errorf("have\n%s\nwant\n%s", have, want)
			}
			if _, err := Compile("flags", have, nil); err != nil {
				t.Errorf("compile: %v", err)
			}
		})
	}
}

// TestFlagProgramErrors checks that malformed flags are *FlagErrors, and
// that a flag reading an argument a probe lacks names the probe.
func TestFlagProgramErrors(t *testing.T) {
	bin := testutil.BuildTracee(t, "-O2")
	str := "usdt:" + bin + ":tracee:str"
	tests := []struct {
		name  string
		flags Flags
		flag  string // the FlagError's Flag; "" for another error
		want  string
	}{
		{"two modes", Flags{Probes: []string{str}, Count: true, Hist: "arg0"}, "--count", "exclude each other"},
		{"stacks and count", Flags{Probes: []string{str}, Count: true, Stacks: true}, "--count", "exclude each other"},
		{"by without mode", Flags{Probes: []string{str}, Formats: []string{"%d"}, By: []string{"pid"}}, "--by", "needs --count, --stacks or --hist"},
		{"format and count", Flags{Probes: []string{str}, Formats: []string{"%d"}, Count: true}, "--format", "does not go with"},
		{"bad by", Flags{Probes: []string{str}, Count: true, By: []string{"cpu"}}, "--by", "want pid"},
		{"bad hist", Flags{Probes: []string{str}, Hist: "str(arg0)"}, "--hist", "want argN"},
		{"hist arg12", Flags{Probes: []string{str}, Hist: "arg12"}, "--hist", "want argN"},
		{"string order", Flags{Probes: []string{str}, Count: true, Filters: []string{`str(arg0) < "a"`}}, `--filter str(arg0) < "a"`, "== or != only"},
		{"string unclosed", Flags{Probes: []string{str}, Count: true, Filters: []string{`str(arg0) == "a`}}, `--filter str(arg0) == "a`, "a string is written"},
		{"syntax", Flags{Probes: []string{str}, Count: true, Filters: []string{"arg0 >\n )"}}, "--filter arg0 >\n )", "at byte 9: expected an expression"},
		{"two comparisons", Flags{Probes: []string{str}, Count: true, Filters: []string{"arg1 > 1 && arg1 < 3"}}, "--filter arg1 > 1 && arg1 < 3", "one comparison per --filter"},
		{"str int", Flags{Probes: []string{str}, Count: true, Filters: []string{`str(arg0) == 1`}}, "--filter str(arg0) == 1", "compares with a"},
		{"string of an int", Flags{Probes: []string{str}, Count: true, Filters: []string{`arg1 == "x"`}}, `--filter arg1 == "x"`, "read it as one with --str 1"},
		{"format flag", Flags{Probes: []string{str}, Formats: []string{"%+d"}}, "--format %+d", "not + #"},
		{"format mismatch", Flags{Probes: []string{str}, Formats: []string{`"%d", str(arg0)`}}, `--format "%d", str(arg0)`, "%s goes with str(argN)"},
		{"two formats", Flags{Probes: []string{str}, Formats: []string{"%d", "%u"}}, "--format", "two formats"},
		{"other probe", Flags{Probes: []string{str}, Count: true, Filters: []string{"tracee:consts=arg0 > 1"}}, "", "tracee:consts is not among the traced probes (tracee:str)"},
		{"latency other", Flags{Probes: []string{str}, Latency: "str,consts"}, "--latency", "must be among"},
		{"strlen", Flags{Probes: []string{str}, Count: true, StrLen: 1}, "--strlen", "want 2 to 4096"},
		{"names", Flags{Probes: []string{str}, Count: true, Filters: []string{"n > 1"}}, "--filter n > 1", "USDT probes take argN"},
		{"arg count", Flags{Probes: []string{str}, Hist: "arg3"}, "", "tracee:str has 2 arguments (arg0..arg1), no arg3 to make a histogram of"},
		{"format arg count", Flags{Probes: []string{str}, Formats: []string{"%d %s %d"}}, "", "tracee:str has 2 arguments (arg0..arg1), no arg2 to print"},
		{"no match", Flags{Probes: []string{"usdt:" + bin + ":tracee:nosuch"}, Count: true}, "", "no probe matches"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := FlagProgram(&tt.flags, nil)
			if err == nil {
				t.Fatal("no error")
			}
			var fe *FlagError
			if isFlag := errors.As(err, &fe); isFlag != (tt.flag != "") || isFlag && fe.Flag != tt.flag {
				t.Errorf("error %q (%T), want a FlagError of %q", err, err, tt.flag)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q, want %q in it", err, tt.want)
			}
		})
	}
	if _, err := FlagProgram(&Flags{Probes: []string{str}}, nil); !errors.Is(err, ErrNoProgram) {
		t.Errorf("events: error %v, want ErrNoProgram", err)
	}
}

// flagSeeds returns the values of testdata/flags.txt's lines that start
// with prefix (filter or format: seeds of the fuzz targets).
func flagSeeds(tb testing.TB, prefix string) []string {
	tb.Helper()
	data, err := os.ReadFile("testdata/flags.txt")
	if err != nil {
		tb.Fatal(err)
	}
	var seeds []string
	for _, l := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(l, prefix); ok {
			seeds = append(seeds, v)
		}
	}
	if len(seeds) == 0 {
		tb.Fatalf("testdata/flags.txt has no %q lines", prefix)
	}
	return seeds
}

// FuzzFlagFilter: a filter that parses becomes exactly one predicate,
// printed so that it parses back as itself, and a string it compares is
// the literal's value.
func FuzzFlagFilter(f *testing.F) {
	for _, s := range flagSeeds(f, "filter ") {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		// Filters by name (a Go function's value) read args.NAME.
		ff, _, err := parseFlagFilter(s)
		if err != nil {
			return
		}
		ff.probe = ""
		sp := &flagSpec{filters: []flagFilter{ff}, strs: map[string]uint16{"": 1<<maxFlagArgs - 1}, strLen: 64}
		tb := &flagTreeBuilder{prog: &btlang.Program{}}
		g := &flagGroup{probes: []*btlang.Probe{{Kind: btlang.ProbeUSDT, Path: "/x", Provider: "p", Name: "n"}}}
		tb.block(sp, g, nil, func() []btlang.Stmt { return []btlang.Stmt{tb.stmt(tb.call("exit"))} })
		src := tb.prog.String()
		prog, err := btlang.Parse("f", []byte(src))
		if err != nil {
			t.Fatalf("filter %q: program %q: %v", s, src, err)
		}
		if len(prog.Blocks) != 1 || prog.Blocks[0].Pred == nil || len(prog.Blocks[0].Body) != 1 {
			t.Fatalf("filter %q: program %q is not one block with a predicate and one statement", s, src)
		}
		if again := prog.String(); again != src {
			t.Errorf("filter %q: program %q prints back as %q", s, src, again)
		}
		if ff.isText {
			var lit *btlang.StrLit
			btlang.Inspect(prog.Blocks[0].Pred, func(n btlang.Node) bool {
				if l, ok := n.(*btlang.StrLit); ok {
					lit = l
				}
				return true
			})
			if lit == nil || lit.Val != ff.text {
				t.Errorf("filter %q: program %q compares with %+v, want %q", s, src, lit, ff.text)
			}
		}
	})
}

// FuzzFlagFormat: a format that parses becomes exactly one printf, whose
// format string is the format's text and a newline.
func FuzzFlagFormat(f *testing.F) {
	for _, s := range flagSeeds(f, "format ") {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		ff, named, err := parseFlagFormat(s)
		if err != nil || named {
			return
		}
		sp := &flagSpec{mode: modeFormat, formats: map[string]*flagFormat{"": ff}, strs: map[string]uint16{}, strLen: 64}
		probe := &btlang.Probe{Kind: btlang.ProbeUSDT, Path: "/x", Provider: "p", Name: "n"}
		tree, err := sp.program([]*flagSelector{{probe: probe, found: []flagProbe{{name: "p:n", probe: probe, args: maxFlagArgs}}}})
		if err != nil {
			t.Fatalf("format %q: %v", s, err)
		}
		src := tree.String()
		prog, err := btlang.Parse("f", []byte(src))
		if err != nil {
			t.Fatalf("format %q: program %q: %v", s, src, err)
		}
		if len(prog.Blocks) != 1 || len(prog.Blocks[0].Body) != 1 {
			t.Fatalf("format %q: program %q is not one block of one statement", s, src)
		}
		call, ok := prog.Blocks[0].Body[0].(*btlang.ExprStmt)
		if !ok || call.X.Name != "printf" || len(call.X.Args) != 1+len(ff.args) {
			t.Fatalf("format %q: program %q is not one printf of %d arguments", s, src, len(ff.args))
		}
		want := ff.text
		if !strings.HasSuffix(want, "\n") {
			want += "\n"
		}
		if lit, ok := call.X.Args[0].(*btlang.StrLit); !ok || lit.Val != want {
			t.Errorf("format %q: program %q prints %+v, want %q", s, src, call.X.Args[0], want)
		}
	})
}

// TestFlagGoFunctions checks what the flags stand for on a Go function
// (testdata/gofn's main.handle): values by name in filters, --hist and
// formats, latency pairs by goroutine, events with --field; and that each
// program compiles.
func TestFlagGoFunctions(t *testing.T) {
	bin := testutil.BuildGo(t, "testdata/gofn")
	entry, ret := "uprobe:"+bin+":main.handle", "uretprobe:"+bin+":main.handle"
	tests := []struct {
		name  string
		flags Flags
		want  string // BIN stands for the target
	}{
		{"count by name", Flags{Probes: []string{entry}, Count: true, By: []string{"pid"}, Filters: []string{"n > 3", "s.hits >= 0", `path == "/a"`, "ok != 0"}},
			"uprobe:BIN:main.handle\n/args.n > 3 && args.s.hits >= 0 && args.path == \"/a\" && args.ok != 0/\n{ @[probe, pid] = count(); }\n"},
		{"per-probe filter by name", Flags{Probes: []string{entry, ret}, Count: true, Filters: []string{"uretprobe:main.handle=status < 0"}},
			"uprobe:BIN:main.handle\n{ @[probe] = count(); }\nuretprobe:BIN:main.handle\n/args.status < 0/\n{ @[probe] = count(); }\n"},
		{"hist of a result", Flags{Probes: []string{ret}, Hist: "status"},
			"uretprobe:BIN:main.handle\n{ @[probe] = hist(args.status); }\n"},
		{"latency by goroutine", Flags{Probes: []string{entry, ret}, Latency: "uprobe:main.handle,uretprobe:main.handle"},
			"uprobe:BIN:main.handle\n/goid != 0/\n{ @start[pid, goid] = nsecs; }\n" +
				"uretprobe:BIN:main.handle\n/@start[pid, goid]/\n{ @latency_ns[probe] = hist(nsecs - @start[pid, goid]); delete(@start[pid, goid]); }\n"},
		{"format by name", Flags{Probes: []string{entry}, Formats: []string{`"%s %d %d", path, n, s.hits`}},
			"uprobe:BIN:main.handle\n{ printf(\"%s %lld %lld\\n\", args.path, args.n, args.s.hits); }\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			have, err := FlagProgram(&tt.flags, nil)
			if err != nil {
				t.Fatal(err)
			}
			if want := canonical(t, strings.ReplaceAll(tt.want, "BIN", bin)); have != want {
				t.Errorf("have\n%s\nwant\n%s", have, want)
			}
			if _, err := Compile("flags", have, nil); err != nil {
				t.Errorf("compile: %v", err)
			}
		})
	}
	// Events: --field for the entry, --str ignored for Go's own strings.
	eps, err := FlagEvents(&Flags{Probes: []string{entry, ret}, Fields: []string{"s.hits"}, Strings: []string{"0"}, Filters: []string{"uprobe:main.handle=n > 3"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []EventProbe{{Probe: entry, Filter: "args.n > 3", Fields: []string{"s.hits"}}, {Probe: ret}}
	if len(eps) != len(want) {
		t.Fatalf("events %+v, want %+v", eps, want)
	}
	for i := range want {
		if eps[i].Probe != want[i].Probe || eps[i].Filter != want[i].Filter || strings.Join(eps[i].Fields, ",") != strings.Join(want[i].Fields, ",") || len(eps[i].Strings) != 0 {
			t.Errorf("events[%d] = %+v, want %+v", i, eps[i], want[i])
		}
	}
	if _, err := CompileEvents(eps, nil); err != nil {
		t.Errorf("compile events: %v", err)
	}
}

// TestFlagGoFunctionErrors: a value by name that a probe does not have,
// of a kind the flag cannot use, or on a probe that is no Go function's
// is a *FlagError naming the flag and the probe.
func TestFlagGoFunctionErrors(t *testing.T) {
	bin := testutil.BuildGo(t, "testdata/gofn")
	tracee := testutil.BuildTracee(t, "-O0")
	entry, ret := "uprobe:"+bin+":main.handle", "uretprobe:"+bin+":main.handle"
	tests := []struct {
		name  string
		flags Flags
		flag  string
		want  string
	}{
		{"no such parameter", Flags{Probes: []string{entry}, Count: true, Filters: []string{"nope > 1"}}, "--filter nope > 1", `uprobe:main.handle has no parameter "nope" (it has path, n, code, ok, s)`},
		{"a string with a number", Flags{Probes: []string{entry}, Count: true, Filters: []string{"path > 1"}}, "--filter path > 1", "path is a string; filters and histograms take integers"},
		{"a number with a string", Flags{Probes: []string{entry}, Count: true, Filters: []string{`n == "x"`}}, `--filter n == "x"`, "n is a int; it compares with an integer, not a string"},
		{"no such result", Flags{Probes: []string{ret}, Hist: "s"}, "--hist s", `uretprobe:main.handle has no result "s" (it has status, msg)`},
		{"a parameter at a return", Flags{Probes: []string{entry, ret}, Count: true, Filters: []string{"n > 1"}}, "--filter n > 1", `has no result "n"`},
		{"a field at a return", Flags{Probes: []string{ret}, Count: true, Filters: []string{"s.hits > 1"}}, "--filter s.hits > 1", `has no result "s.hits"`},
		{"at an offset", Flags{Probes: []string{entry + "+4"}, Count: true, Filters: []string{"n > 1"}}, "--filter n > 1", "Go functions only"},
		{"a C function", Flags{Probes: []string{entry, "uprobe:" + tracee + ":run"}, Count: true, Filters: []string{"n > 1"}}, "--filter n > 1", "uprobe:run is not one"},
		{"a field without a Go function", Flags{Probes: []string{"uprobe:" + tracee + ":run"}, Fields: []string{"s.hits"}}, "--field", "no Go function is traced"},
		{"a field without a field", Flags{Probes: []string{entry}, Fields: []string{"s"}}, "--field s", "want PARAM.FIELD"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var err error
			if tt.flags.Count || tt.flags.Hist != "" {
				_, err = FlagProgram(&tt.flags, nil)
			} else {
				_, err = FlagEvents(&tt.flags, nil)
			}
			var fe *FlagError
			if !errors.As(err, &fe) || fe.Flag != tt.flag || !strings.Contains(fe.Msg, tt.want) {
				t.Errorf("have %v, want a FlagError of %s with %q", err, tt.flag, tt.want)
			}
		})
	}
	// A field that the struct lacks: Compile says so.
	_, err := CompileFlags(&Flags{Probes: []string{entry}, Fields: []string{"s.nope"}}, nil)
	if err == nil || !strings.Contains(err.Error(), "main.server has no field nope") {
		t.Errorf("--field s.nope: %v, want main.server has no field nope", err)
	}
}

// TestFlagAddress: a function selected by its address is written as its
// symbol and the offset into it.
func TestFlagAddress(t *testing.T) {
	bin := testutil.BuildTracee(t, "-O0")
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	syms, err := f.Symbols()
	if err != nil {
		t.Fatal(err)
	}
	var run uint64
	for _, s := range syms {
		if s.Name == "run" && elf.ST_TYPE(s.Info) == elf.STT_FUNC {
			run = s.Value
		}
	}
	if run == 0 {
		t.Fatal("no function run in the tracee")
	}
	for _, tt := range []struct {
		addr uint64
		want string
	}{
		{run, "uprobe:BIN:run\n{ @[probe] = count(); }\n"},
		{run + 4, "uprobe:BIN:run+4\n{ @[probe] = count(); }\n"},
	} {
		sel := "uprobe:" + bin + ":0x" + strconv.FormatUint(tt.addr, 16)
		have, err := FlagProgram(&Flags{Probes: []string{sel}, Count: true}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if want := canonical(t, strings.ReplaceAll(tt.want, "BIN", bin)); have != want {
			t.Errorf("%s: have\n%s\nwant\n%s", sel, have, want)
		}
	}
}
