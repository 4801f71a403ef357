package main

import (
	"bytes"
	"context"
	"debug/elf"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/usdtkit/usdtkit/internal/testutil"
)

// This file tests bpftrace's command line as users type it at usdtkit
// trace (issue 27): the program on stdin, -f, -o FILE, --dry-run, -l
// and the BPFTRACE_* variables that change what is printed.

// runStdin runs usdtkit in-process with stdin and returns its exit code,
// stdout and stderr.
func runStdin(t *testing.T, stdin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = runIn(context.Background(), args, strings.NewReader(stdin), &out, &errb)
	return code, out.String(), errb.String()
}

// bpftraceStdin runs bpftrace with args and stdin, bounded to a minute,
// and returns its exit status (-1 when it did not end), stdout without
// its "Attaching" line, and stderr.
func bpftraceStdin(t *testing.T, stdin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	bin := testutil.RequireTool(t, "bpftrace")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.WaitDelay = 5 * time.Second
	var out, errb bytes.Buffer
	cmd.Stdin, cmd.Stdout, cmd.Stderr = strings.NewReader(stdin), &out, &errb
	err := cmd.Run()
	code = cmd.ProcessState.ExitCode()
	if ctx.Err() != nil {
		t.Fatalf("bpftrace %q did not end within a minute: %v\n%s", args, err, errb.String())
	}
	var b strings.Builder
	for l := range strings.Lines(out.String()) {
		if !strings.HasPrefix(l, "Attaching ") {
			b.WriteString(l)
		}
	}
	return code, b.String(), errb.String()
}

// TestProgramStdin: `trace -` reads the program from stdin, as bpftrace's
// program file "-"; the arguments after it are its positional parameters,
// and its errors are at stdin:LINE:COL, as bpftrace's.
func TestProgramStdin(t *testing.T) {
	t.Run("error position", func(t *testing.T) {
		// No kernel needed: the program fails to parse.
		const bad = "BEGIN { @x = count( }\n"
		code, out, errOut := runStdin(t, bad, "trace", "-")
		if want := "usdtkit: stdin:1:21: "; code != 1 || out != "" || !strings.HasPrefix(errOut, want) {
			t.Errorf("exit %d, stdout %q, stderr %q; want exit 1 and stderr starting %q", code, out, errOut, want)
		}
		btCode, _, btErr := bpftraceStdin(t, bad, "-")
		if btCode == 0 || !strings.Contains(btErr, "stdin:1:21") {
			t.Errorf("bpftrace: exit %d, stderr %q; want a failure at stdin:1:21", btCode, btErr)
		}
	})
	t.Run("runs", func(t *testing.T) {
		testutil.RequireBPF(t)
		const prog = `BEGIN { printf("hi %s %d\n", str($1), $#); @n = 3; exit(); }`
		code, ours, errOut := runStdin(t, prog, "trace", "-q", "-", "abc")
		if code != 0 {
			t.Fatalf("usdtkit trace -: exit %d: %s", code, errOut)
		}
		btCode, theirs, btErr := bpftraceStdin(t, prog, "-", "abc")
		if btCode != 0 {
			t.Fatalf("bpftrace -: exit %d: %s", btCode, btErr)
		}
		if want := "hi abc 1\n\n\n@n: 3\n"; ours != want || theirs != want {
			t.Errorf("have %q, bpftrace %q; want %q from both", ours, theirs, want)
		}
	})
}

// TestPIDRefusedAsBpftrace: a -p that is not a decimal number, or is out
// of bpftrace's range, is refused with bpftrace's error line, word for
// word, and exit status 1, before the program is read.
func TestPIDRefusedAsBpftrace(t *testing.T) {
	for _, pid := range []string{"a1111", "111a1", "not_a_pid", "5000000", "0", "-5"} {
		t.Run(pid, func(t *testing.T) {
			code, out, errOut := runStdin(t, "", "trace", "-p", pid, "missing.bt")
			btCode, _, btErr := bpftraceStdin(t, "", "-p", pid, "missing.bt")
			line, _, _ := strings.Cut(btErr, "\n")
			if btCode == 0 || !strings.HasPrefix(line, "ERROR: pid '"+pid+"' ") {
				t.Fatalf("bpftrace: exit %d, stderr %q; want its pid error", btCode, btErr)
			}
			if code != 1 || out != "" || !strings.HasPrefix(errOut, line) || strings.Count(errOut, "\n") != 1 {
				t.Errorf("exit %d, stdout %q, stderr %q; want exit 1 and one line starting %q", code, out, errOut, line)
			}
		})
	}
}

// TestProgramFileMissing: a program file that does not exist, .bt or not,
// is bpftrace's error line, word for word ("ERROR: failed to open file
// 'NAME': No such file or directory"), with exit status 1 (bpftrace, too,
// reads any first argument as the file).
func TestProgramFileMissing(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"missing.bt", "missing"} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(dir, name)
			code, out, errOut := runStdin(t, "", "trace", path)
			btCode, _, btErr := bpftraceStdin(t, "", path)
			want := "ERROR: failed to open file '" + path + "': No such file or directory"
			if btCode == 0 || !strings.Contains(btErr, want+"\n") {
				t.Errorf("bpftrace: exit %d, stderr %q; want a failure with %q", btCode, btErr, want)
			}
			if code != 1 || out != "" || !strings.HasPrefix(errOut, want) {
				t.Errorf("exit %d, stdout %q, stderr %q; want exit 1 and stderr starting %q", code, out, errOut, want)
			}
		})
	}
}

// TestUnknownFlagUsage: a flag trace does not know is an error followed by
// the command's usage, as bpftrace prints its usage after getopt's error.
func TestUnknownFlagUsage(t *testing.T) {
	code, out, errOut := runStdin(t, "", "trace", "-idonotexist")
	if want := "usdtkit: unknown shorthand flag: 'i' in -idonotexist\n\nUSAGE:\n  usdtkit trace "; code != 1 || out != "" || !strings.HasPrefix(errOut, want) {
		t.Errorf("exit %d, stdout %q, stderr %q; want exit 1 and stderr starting %q", code, out, errOut, want)
	}
	btCode, _, btErr := bpftraceStdin(t, "", "-idonotexist")
	if btCode == 0 || !strings.Contains(btErr, "USAGE:") {
		t.Errorf("bpftrace: exit %d, stderr %q; want its usage", btCode, btErr)
	}
	// A usage error of another kind prints no usage.
	if code, _, errOut := runStdin(t, "", "trace", "-o", "yaml", "-e", "BEGIN { exit(); }"); code != 1 || strings.Contains(errOut, "USAGE:") {
		t.Errorf("exit %d, stderr %q; want exit 1 without the usage", code, errOut)
	}
}

// TestParseOutput: how -o and -f are read together. -o keeps what it
// meant (a format name, a flame graph file; a bare word or FILE.svg is a
// mistake); any other path with a dot or a slash gets what would go to
// stdout, in -f's format, as bpftrace's -f FORMAT -o FILE.
func TestParseOutput(t *testing.T) {
	type flameWant struct{ format, path string }
	tests := []struct {
		name           string
		output, format string
		wantErr        bool
		wantFormat     string
		wantFlame      *flameWant
		wantFile       string
	}{
		{name: "default", wantFormat: "text"},
		{name: "-o json", output: "json", wantFormat: "json"},
		{name: "-o folded", output: "folded", wantFormat: "text", wantFlame: &flameWant{"folded", ""}},
		{name: "-o FILE.pb.gz", output: "x.pb.gz", wantFormat: "text", wantFlame: &flameWant{"pprof", "x.pb.gz"}},
		{name: "-o FILE.html", output: "d/x.html", wantFormat: "text", wantFlame: &flameWant{"html", "d/x.html"}},
		{name: "-o yaml", output: "yaml", wantErr: true},
		{name: "-o FILE.svg", output: "flame.svg", wantErr: true},
		{name: "-f json", format: "json", wantFormat: "json"},
		{name: "-f text", format: "text", wantFormat: "text"},
		{name: "-f html", format: "html", wantFormat: "text", wantFlame: &flameWant{"html", ""}},
		{name: "-f ndjson", format: "ndjson", wantErr: true},
		{name: "-o json -f json", output: "json", format: "json", wantFormat: "json"},
		{name: "-o json -f text", output: "json", format: "text", wantErr: true},
		{name: "-o out.txt", output: "out.txt", wantFormat: "text", wantFile: "out.txt"},
		{name: "-o ./json", output: "./json", wantFormat: "text", wantFile: "./json"},
		{name: "-o /tmp/x -f json", output: "/tmp/x", format: "json", wantFormat: "json", wantFile: "/tmp/x"},
		{name: "-o out.txt -f folded", output: "out.txt", format: "folded", wantFormat: "text", wantFlame: &flameWant{"folded", "out.txt"}},
		{name: "-o FILE.folded -f json", output: "x.folded", format: "json", wantFormat: "json", wantFlame: &flameWant{"folded", "x.folded"}},
		{name: "-o FILE.folded -f html", output: "x.folded", format: "html", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			have, err := parseOutput(tt.output, tt.format)
			if tt.wantErr {
				if err == nil {
					t.Errorf("parseOutput(%q, %q) = %+v; want an error", tt.output, tt.format, have)
				}
				return
			}
			if err != nil {
				t.Fatalf("parseOutput(%q, %q): %v", tt.output, tt.format, err)
			}
			var flame *flameWant
			if have.flame != nil {
				flame = &flameWant{string(have.flame.format), have.flame.path}
			}
			if have.format != tt.wantFormat || have.file != tt.wantFile || (flame == nil) != (tt.wantFlame == nil) || flame != nil && *flame != *tt.wantFlame {
				t.Errorf("parseOutput(%q, %q) = format %q, file %q, flame %+v; want %q, %q, %+v", tt.output, tt.format, have.format, have.file, flame, tt.wantFormat, tt.wantFile, tt.wantFlame)
			}
		})
	}
}

// TestOutputFlagErrors: an unknown -f lists the valid formats (bpftrace's
// are text and json); a format -o and -f disagree on is refused.
func TestOutputFlagErrors(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string // on stderr
	}{
		{"-f unknown", []string{"trace", "-f", "ndjson", "-e", "BEGIN { exit(); }"}, `usdtkit: -f "ndjson": want one of text, json, folded, pprof, html`},
		{"-o and -f", []string{"trace", "-o", "json", "-f", "text", "-e", "BEGIN { exit(); }"}, "usdtkit: -o json and -f text ask for two formats"},
		{"-f flame without stacks", []string{"trace", "-f", "folded", "-e", "BEGIN { @[1] = count(); exit(); }"}, "usdtkit: -f folded writes the counts of stacks"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errOut := runStdin(t, "", tt.args...)
			if code != 1 || out != "" || !strings.HasPrefix(errOut, tt.want) {
				t.Errorf("exit %d, stdout %q, stderr %q; want exit 1 and stderr starting %q", code, out, errOut, tt.want)
			}
		})
	}
}

// TestOutputFileAgainstBpftrace: -f FORMAT -o FILE writes to FILE what
// would go to stdout, in FORMAT, and nothing to stdout; its lines are
// bpftrace's -f FORMAT -o FILE's. (bpftrace 0.17 writes its "Attaching"
// line to the file and the blank lines before the maps to stdout: blank
// lines and that line are not compared.)
func TestOutputFileAgainstBpftrace(t *testing.T) {
	testutil.RequireBPF(t)
	testutil.RequireTool(t, "bpftrace")
	const prog = `BEGIN { printf("a %d %s\n", 1, "x"); @x[1] = 2; @s = hist(3); @c = count(); exit(); }`
	for _, format := range []string{"text", "json"} {
		t.Run(format, func(t *testing.T) {
			dir := t.TempDir()
			ourFile, theirFile := filepath.Join(dir, "ours.out"), filepath.Join(dir, "theirs.out")
			code, stdout, errOut := runStdin(t, "", "trace", "-f", format, "-o", ourFile, "-e", prog)
			if code != 0 || stdout != "" {
				t.Fatalf("usdtkit: exit %d, stdout %q, stderr %s; want exit 0 and nothing on stdout", code, stdout, errOut)
			}
			code, wantStdout, errOut := runStdin(t, "", "trace", "-f", format, "-e", prog)
			if code != 0 {
				t.Fatalf("usdtkit without -o: exit %d: %s", code, errOut)
			}
			ours := string(readFile(t, ourFile))
			if ours != wantStdout {
				t.Errorf("-o FILE has\n%q\nwant what stdout has without it\n%q", ours, wantStdout)
			}
			if _, err := testutil.RunBpftrace(t, "-f", format, "-o", theirFile, "-e", prog); err != nil {
				t.Fatal(err)
			}
			// The "Attaching" line included.
			theirLines := nonEmptyLines(string(readFile(t, theirFile)))
			if ourLines := nonEmptyLines(ours); !slices.Equal(ourLines, theirLines) {
				t.Errorf("have lines\n%q\nbpftrace\n%q", ourLines, theirLines)
			}
		})
	}
}

// TestDryRun: --dry-run compiles, loads and attaches, then exits 0 having
// run nothing: no BEGIN or END output, no maps, and the -c command killed
// before its first instruction. bpftrace 0.17 has no --dry-run; 0.2x's man
// page: "Terminate execution right after attaching all the probes".
func TestDryRun(t *testing.T) {
	testutil.RequireBPF(t)
	bin := buildBtTarget(t)
	touch := testutil.RequireTool(t, "touch")
	mark := filepath.Join(t.TempDir(), "ran")
	prog := `BEGIN { printf("begin\n"); @b = 1; } uprobe:` + bin + `:work { @c = count(); } END { printf("end\n"); }`
	code, out, errOut := runStdin(t, "", "trace", "--dry-run", "-c", touch+" "+mark, "-e", prog)
	if code != 0 || out != "" || !strings.HasPrefix(errOut, "Dry run: ") {
		t.Errorf("exit %d, stdout %q, stderr %q; want exit 0, nothing on stdout and the dry run's line", code, out, errOut)
	}
	if _, err := os.Stat(mark); err == nil {
		t.Errorf("the -c command ran: %s exists", mark)
	}
	// Without -c: the probes of a file, attached for every process.
	code, out, errOut = runStdin(t, "", "trace", "--dry-run", "-e", prog)
	if code != 0 || out != "" || !strings.HasPrefix(errOut, "Dry run: ") {
		t.Errorf("without -c: exit %d, stdout %q, stderr %q; want exit 0, nothing on stdout and the dry run's line", code, out, errOut)
	}
	// A program that does not compile is still an error.
	code, _, errOut = runStdin(t, "", "trace", "--dry-run", "-e", "uprobe:"+bin+":nosuch { @ = count(); }")
	if code != 1 || !strings.Contains(errOut, "matches nothing") {
		t.Errorf("no match: exit %d, stderr %q; want exit 1 and the compile error", code, errOut)
	}
}

// definedFuncs returns the names of the functions path defines (not the
// ones it imports), from its symbol tables.
func definedFuncs(t *testing.T, path string) map[string]bool {
	t.Helper()
	f, err := elf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	names := map[string]bool{}
	syms, _ := f.Symbols()
	dyn, _ := f.DynamicSymbols()
	for _, s := range append(syms, dyn...) {
		typ := elf.ST_TYPE(s.Info)
		if s.Section != elf.SHN_UNDEF && (typ == elf.STT_FUNC || typ == elf.STT_GNU_IFUNC) {
			names[s.Name] = true
		}
	}
	return names
}

// TestTraceListAgainstBpftrace: trace -l prints the probes bpftrace -l
// prints, line for line (sorted), by file, by PID and with wildcards; the
// expectations are bpftrace's output on this machine's python3.11.
// bpftrace 0.17 also lists the functions a file imports (undefined
// symbols, which cannot be probed there): those are left out of its lines.
func TestTraceListAgainstBpftrace(t *testing.T) {
	testutil.RequireRoot(t)
	py := testutil.RequireFile(t, testutil.Python311)
	bpftraceLines := func(t *testing.T, args ...string) []string {
		t.Helper()
		out, err := testutil.RunBpftrace(t, args...)
		if err != nil {
			t.Fatal(err)
		}
		lines := nonEmptyLines(string(out))
		slices.Sort(lines)
		return slices.Compact(lines)
	}
	defined := definedFuncs(t, py)
	pid := strconv.Itoa(testutil.StartCmd(t, exec.Command(py, "-c", "import sys; print('ready', flush=True); sys.stdin.read()")).PID())
	tests := []struct {
		name string
		args []string // after -l, for both
	}{
		{"usdt by file", []string{"usdt:" + py + ":*"}},
		{"usdt glob", []string{"usdt:" + py + ":python:*gc*"}},
		{"uprobe by file", []string{"uprobe:" + py + ":*"}},
		{"uprobe glob", []string{"uprobe:" + py + ":PyObject_Get*"}},
		{"usdt by PID", []string{"-p", pid, "usdt:*"}},
		{"uprobe by PID and file", []string{"-p", pid, "uprobe:" + py + ":Py_Initialize*"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var want []string
			for _, l := range bpftraceLines(t, append([]string{"-l"}, tt.args...)...) {
				if fn, ok := strings.CutPrefix(l, "uprobe:"+py+":"); ok && !defined[fn] {
					continue
				}
				want = append(want, l)
			}
			if len(want) == 0 {
				t.Fatalf("bpftrace -l %q listed nothing", tt.args)
			}
			ours := nonEmptyLines(usdtkit(t, append([]string{"trace", "-l"}, tt.args...)...))
			if !slices.Equal(ours, want) {
				t.Errorf("trace -l %q:\nhave %d lines %q\nbpftrace %d lines %q", tt.args, len(ours), head(ours), len(want), head(want))
			}
		})
	}
}

// TestTraceListVerbose: -lv prints under each USDT probe its arguments as
// bpftrace types with their specs, as many as the probe's notes have
// (bpftrace 0.17's -lv prints no arguments for USDT probes), and the same
// probe lines as -l.
func TestTraceListVerbose(t *testing.T) {
	py := testutil.RequireFile(t, testutil.Python311)
	search := "usdt:" + py + ":*"
	plain := nonEmptyLines(usdtkit(t, "trace", "-l", search))
	verbose := usdtkit(t, "trace", "-lv", search)
	nargs := map[string]int{}
	for _, l := range listJSON(t, py) {
		nargs["usdt:"+py+":"+l.Provider+":"+l.Name] = len(l.Args)
	}
	argRE := regexp.MustCompile(`^    u?int(8|16|32|64) arg([0-9]+) \(.+\)$`)
	var probes []string
	seen := map[string]int{}
	for l := range strings.Lines(verbose) {
		l = strings.TrimSuffix(l, "\n")
		m := argRE.FindStringSubmatch(l)
		if m == nil {
			probes = append(probes, l)
			continue
		}
		if len(probes) == 0 {
			t.Fatalf("argument line %q before a probe", l)
		}
		last := probes[len(probes)-1]
		if n, _ := strconv.Atoi(m[2]); n != seen[last] {
			t.Errorf("%s: line %q, want arg%d", last, l, seen[last])
		}
		seen[last]++
	}
	total := 0
	for _, p := range probes {
		if seen[p] != nargs[p] {
			t.Errorf("%s: %d argument lines, want %d", p, seen[p], nargs[p])
		}
		total += seen[p]
	}
	if total == 0 {
		t.Errorf("-lv printed no argument:\n%s", verbose)
	}
	if !slices.Equal(probes, plain) {
		t.Errorf("-lv probes %q, want -l's %q", probes, plain)
	}
}

// TestEnvStrLen: BPFTRACE_MAX_STRLEN (bpftrace 0.2x) or else
// BPFTRACE_STRLEN (0.17) sets the bytes str() reads; a value that is not
// a length is an error, as in bpftrace.
func TestEnvStrLen(t *testing.T) {
	tests := []struct {
		name    string
		env     map[string]string
		want    int
		wantErr bool
	}{
		{"unset", nil, 0, false},
		{"STRLEN", map[string]string{"BPFTRACE_STRLEN": "8"}, 8, false},
		{"MAX_STRLEN", map[string]string{"BPFTRACE_MAX_STRLEN": "300"}, 300, false},
		{"both", map[string]string{"BPFTRACE_STRLEN": "8", "BPFTRACE_MAX_STRLEN": "16"}, 16, false},
		{"not a number", map[string]string{"BPFTRACE_STRLEN": "abc"}, 0, true},
		{"zero", map[string]string{"BPFTRACE_MAX_STRLEN": "0"}, 0, true},
		{"too large", map[string]string{"BPFTRACE_MAX_STRLEN": "1025"}, 0, true},
		{"others ignored", map[string]string{"BPFTRACE_MAP_KEYS_MAX": "abc"}, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			have, err := envStrLen(func(k string) string { return tt.env[k] })
			if have != tt.want || (err != nil) != tt.wantErr {
				t.Errorf("envStrLen = %d, %v; want %d, error %v", have, err, tt.want, tt.wantErr)
			}
		})
	}
}

// TestStrLenAgainstBpftrace: BPFTRACE_STRLEN cuts what str() reads, as in
// bpftrace 0.17 (N bytes with the NUL: N-1 characters); its newer name
// BPFTRACE_MAX_STRLEN, which bpftrace 0.17 does not read, does the same.
func TestStrLenAgainstBpftrace(t *testing.T) {
	testutil.RequireBPF(t)
	bin := buildBtTarget(t)
	prog := `usdt:` + bin + `:demo:req /arg0 < 4/ { printf("%s|\n", str(arg1)); @[str(arg1)] = count(); }`
	t.Run("BPFTRACE_STRLEN", func(t *testing.T) {
		t.Setenv("BPFTRACE_STRLEN", "4")
		ours := runProgramCLI(t, "trace", "-c", bin+" run", "-e", prog)
		theirs := runBpftrace(t, testutil.RequireTool(t, "bpftrace"), "-c", bin+" run", "-e", prog)
		want := "alp|\nbet|\ngam|\ndel|\n\n\n@[alp]: 1\n@[bet]: 1\n@[del]: 1\n@[gam]: 1\n"
		if ours != want {
			t.Errorf("have\n%q\nwant\n%q", ours, want)
		}
		compareProgramOutput(t, ours, theirs)
	})
	t.Run("BPFTRACE_MAX_STRLEN", func(t *testing.T) {
		t.Setenv("BPFTRACE_MAX_STRLEN", "3")
		ours := runProgramCLI(t, "trace", "-c", bin+" run", "-e", prog)
		want := "al|\nbe|\nga|\nde|\n\n\n@[al]: 1\n@[be]: 1\n@[de]: 1\n@[ga]: 1\n"
		if ours != want {
			t.Errorf("have\n%q\nwant\n%q", ours, want)
		}
	})
	t.Run("invalid", func(t *testing.T) {
		t.Setenv("BPFTRACE_STRLEN", "abc")
		code, out, errOut := runStdin(t, "", "trace", "-e", prog)
		if code != 1 || out != "" || !strings.HasPrefix(errOut, "usdtkit: BPFTRACE_STRLEN=abc: ") {
			t.Errorf("exit %d, stdout %q, stderr %q; want exit 1 and the variable named", code, out, errOut)
		}
	})
}

// TestTraceListSearchesAgainstBpftrace: trace -l reads a SEARCH as
// bpftrace 0.17 does, line for line against bpftrace -l on testdata's
// bttarget (two copies, in ./bin, searched by relative paths): the
// return-probe type and aliases, a probe type with a wildcard (uprobe
// and usdt), a file glob keeping "./", a glob matching several files,
// and with -p the executable's functions and every USDT probe.
func TestTraceListSearchesAgainstBpftrace(t *testing.T) {
	testutil.RequireRoot(t)
	bin := buildBtTarget(t)
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"bttarget", "bttarget2"} {
		b, err := os.ReadFile(bin)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "bin", name), b, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Chdir(dir)
	// bttarget waits on its stdin, which StartCmd holds open.
	pid := strconv.Itoa(testutil.StartCmd(t, exec.Command("./bin/bttarget")).PID())
	tests := [][]string{ // after -l, for both
		{"uretprobe:./bin/bttarget:*"},
		{"ur:./bin/bttarget:w*"},
		{"U:./bin/bttarget:*"},
		{"*:./bin/bttarget:*"},
		{"u*:./bin/bttarget:*"},
		{"*probe:./bin/bttarget:ma*"},
		{"uprobe:./bin/bttarget*:*"},
		{"uprobe:./bin/bt*:wo*"},
		{"usdt:./bin/bttarget*:demo:r*"},
		{"uprobe:./*/bttarget2:main"},
		{"-p", pid},
		{"-p", pid, "uprobe:*"},
		{"-p", pid, "uprobe:wo*"},
		{"-p", pid, "usdt:*"},
		{"-p", pid, "*:*"},
	}
	for _, args := range tests {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			out, err := testutil.RunBpftrace(t, append([]string{"-l"}, args...)...)
			if err != nil {
				t.Fatal(err)
			}
			want := nonEmptyLines(string(out))
			slices.Sort(want)
			want = slices.Compact(want)
			if len(want) == 0 {
				t.Fatalf("bpftrace -l %q listed nothing", args)
			}
			ours := nonEmptyLines(usdtkit(t, append([]string{"trace", "-l"}, args...)...))
			if !slices.Equal(ours, want) {
				t.Errorf("trace -l %q:\nhave %d lines %q\nbpftrace %d lines %q", args, len(ours), head(ours), len(want), head(want))
			}
		})
	}
}

// TestTraceListSearchErrors: a SEARCH usdtkit cannot list says why.
func TestTraceListSearchErrors(t *testing.T) {
	for _, s := range []string{"kprobe:vfs_read", "*:vfs_*", "uprobe:a:b:c"} {
		var out, errb bytes.Buffer
		if code := run(context.Background(), []string{"trace", "-l", s}, &out, &errb); code == 0 || !strings.Contains(errb.String(), s) {
			t.Errorf("trace -l %q: exit %d, stderr %q; want an error naming the search", s, code, errb.String())
		}
	}
}

// TestTraceListVerboseCFunctions: -lv prints a C function's parameters
// from DWARF under its line, as bpftrace 0.17's -lv does ("long int n",
// "const char* s"), compared byte for byte with bpftrace's output on
// testdata's bttarget; bpftrace prints none under uretprobe lines.
func TestTraceListVerboseCFunctions(t *testing.T) {
	testutil.RequireRoot(t)
	bin := buildBtTarget(t)
	for _, search := range []string{"uprobe:" + bin + ":*", "uretprobe:" + bin + ":wo*"} {
		out, err := testutil.RunBpftrace(t, "-lv", search)
		if err != nil {
			t.Fatal(err)
		}
		want := string(out)
		if strings.HasPrefix(search, "uprobe:") && !strings.Contains(want, "\n    ") {
			t.Fatalf("bpftrace -lv %q printed no parameter:\n%s", search, want)
		}
		if have := usdtkit(t, "trace", "-lv", search); have != want {
			t.Errorf("trace -lv %q:\n%s\nbpftrace:\n%s", search, have, want)
		}
	}
}
