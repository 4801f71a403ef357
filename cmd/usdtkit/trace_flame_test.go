package main

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/pprof/profile"

	"github.com/usdtkit/usdtkit/internal/bpf/stackcap/stacktest"
	"github.com/usdtkit/usdtkit/internal/lang/flame"
	"github.com/usdtkit/usdtkit/internal/testutil"
)

// levelsChain is chain.c's "levels" call chain, outermost first, as a
// folded line lists it after its root.
var levelsChain = []string{"main", "level1", "level2", "level3", "leaf"}

// traceLevels traces chain.c's leaf with args added (after -p), makes the
// tracee run "levels" n times and exit, and returns the trace's stdout
// and stderr.
func traceLevels(t *testing.T, bin string, n int, args ...string) (string, string) {
	t.Helper()
	tc := testutil.StartTracee(t, bin)
	tc.WaitReady(t)
	run := startTrace(t, append([]string{"trace", "-p", strconv.Itoa(tc.PID())}, args...)...)
	for range n {
		tc.Do(t, "levels")
	}
	tc.Quit(t)
	code, out, errs := run.wait(t)
	if code != 0 {
		t.Fatalf("usdtkit %q: exit %d: %s", args, code, errs)
	}
	return out, errs
}

// outerFrames returns the frames of a folded stack from main out to the
// leaf: what comes after main (libc's start) is left out, since the
// frame-pointer walk ends there where the C library's build says.
func outerFrames(frames []string) []string {
	i := slices.Index(frames, "main")
	if i < 0 {
		return frames
	}
	return frames[i:]
}

// TestTraceStacksFolded: --stacks -o folded on stdout is one folded line
// per stack, its root the probe and then main → level1 → level2 →
// level3 → leaf with the number of calls; what the trace prints (the map)
// goes to stderr.
func TestTraceStacksFolded(t *testing.T) {
	bin := stacktest.BuildChain(t, "-O0", "-fno-omit-frame-pointer")
	probe := "uprobe:" + bin + ":leaf"
	out, errs := traceLevels(t, bin, 3, probe, "--stacks", "-o", "folded")
	samples, err := flame.ParseFolded(strings.NewReader(out))
	if err != nil {
		t.Fatalf("%v:\n%s", err, out)
	}
	if len(samples) != 1 {
		t.Fatalf("%d stacks, want 1:\n%s", len(samples), out)
	}
	s := samples[0]
	// ParseFolded's frames are leaf first, the root (the first folded
	// name) among them.
	var names []string
	for i := len(s.Frames) - 1; i >= 0; i-- {
		names = append(names, s.Frames[i].Symbol)
	}
	if len(names) == 0 || names[0] != probe || !slices.Equal(outerFrames(names), levelsChain) || s.Count != 3 {
		t.Errorf("folded %q: want root %s, frames ending %v and count 3", out, probe, levelsChain)
	}
	if !strings.Contains(errs, "\n    level3+") || !strings.Contains(errs, "Wrote 1 stacks (3 hits) as folded to stdout.") {
		t.Errorf("stderr lacks the map or the summary:\n%s", errs)
	}
}

// TestTraceStacksPprof: -o FILE.pb.gz writes a profile that
// github.com/google/pprof/profile reads, whose one sample has the chain's
// functions and its count, while stdout gets the map as -o text prints
// it.
func TestTraceStacksPprof(t *testing.T) {
	bin := stacktest.BuildChain(t, "-O0", "-fno-omit-frame-pointer")
	file := filepath.Join(t.TempDir(), "leaf.pb.gz")
	out, _ := traceLevels(t, bin, 2, "-e", "uprobe:"+bin+":leaf { @[ustack] = count(); }", "-o", file)
	if !strings.Contains(out, "@[\n    leaf+0\n    level3+") {
		t.Errorf("stdout lacks the map:\n%s", out)
	}
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	p, err := profile.Parse(f)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Sample) != 1 || len(p.Sample[0].Value) != 1 || p.Sample[0].Value[0] != 2 {
		t.Fatalf("profile samples %v, want one of value 2", p.Sample)
	}
	var names []string // outermost first
	locs := p.Sample[0].Location
	for i := len(locs) - 1; i >= 0; i-- {
		for j := len(locs[i].Line) - 1; j >= 0; j-- {
			names = append(names, locs[i].Line[j].Function.Name)
		}
	}
	if !slices.Equal(outerFrames(names), levelsChain) {
		t.Errorf("profile's stack %v: want it to end %v", names, levelsChain)
	}
	if p.SampleType[0].Type != "hits" {
		t.Errorf("sample type %v, want hits", p.SampleType[0])
	}
}

// TestTraceStacksHTML: -o FILE.html writes a flame graph page holding
// each frame's name (internal/lang/flame tests the page in a browser).
func TestTraceStacksHTML(t *testing.T) {
	bin := stacktest.BuildChain(t, "-O0", "-fno-omit-frame-pointer")
	file := filepath.Join(t.TempDir(), "flame.html")
	traceLevels(t, bin, 1, "uprobe:"+bin+":leaf", "--stacks", "-o", file)
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	page := string(b)
	if !strings.Contains(page, "<title>usdtkit trace uprobe:"+bin+":leaf</title>") {
		t.Errorf("%s lacks the title naming the probe", file)
	}
	if !strings.HasPrefix(page, "<!DOCTYPE html>") {
		t.Errorf("%s does not begin as an HTML page: %.100q", file, page)
	}
	for _, fn := range append(levelsChain, "uprobe:"+bin+":leaf") {
		if !strings.Contains(page, strconv.Quote(fn)) {
			t.Errorf("%s lacks %q", file, fn)
		}
	}
}

// TestTraceStacksFlagAsProgram: --stacks prints exactly what the program
// it stands for prints, text and JSON.
func TestTraceStacksFlagAsProgram(t *testing.T) {
	bin := stacktest.BuildChain(t, "-O0", "-fno-omit-frame-pointer")
	probe := "uprobe:" + bin + ":leaf"
	for _, output := range []string{"text", "json"} {
		t.Run(output, func(t *testing.T) {
			flags, _ := traceLevels(t, bin, 2, "-o", output, probe, "--stacks", "--by", "comm")
			prog, _ := traceLevels(t, bin, 2, "-o", output, "-e", probe+" { @[probe, comm, ustack] = count(); }")
			// The "stack" lines of JSON have the processes' pids and
			// addresses, which differ: both must have one.
			if n, m := len(stackLines.FindAllString(flags, -1)), len(stackLines.FindAllString(prog, -1)); n != m || output == "json" && n != 1 {
				t.Errorf("%d and %d stack lines, want as many, one for JSON:\n%s\n%s", n, m, flags, prog)
			}
			flags, prog = stackLines.ReplaceAllString(flags, ""), stackLines.ReplaceAllString(prog, "")
			if flags != prog || !strings.Contains(flags, "level3+") {
				t.Errorf("--stacks prints\n%s\nthe program prints\n%s", flags, prog)
			}
		})
	}
}

// TestTraceFlameOutputRefused: a flame graph output of a trace that counts
// no stacks, an unknown output and --stacks with a program are errors
// before anything runs. (--stacks on a Go function works: see
// TestTraceStackGoInlined.)
func TestTraceFlameOutputRefused(t *testing.T) {
	bin := stacktest.BuildChain(t, "-O0", "-fno-omit-frame-pointer")
	testutil.RequireBPF(t)
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"uprobe:" + bin + ":leaf", "--count", "-o", "folded"}, "-o folded writes the counts of stacks, and this trace counts none"},
		{[]string{"-e", "uprobe:" + bin + ":leaf { @[comm] = count(); }", "-o", "x.html"}, "-o x.html writes the counts of stacks"},
		{[]string{"uprobe:" + bin + ":leaf", "--stacks", "-o", "flame.svg"}, `--output "flame.svg": want text, json, folded, pprof, html`},
		{[]string{"-e", "uprobe:" + bin + ":leaf { @[ustack] = count(); }", "--stacks"}, "-e and --stacks exclude each other"},
	} {
		var out, errb strings.Builder
		code := run(t.Context(), append([]string{"trace"}, tt.args...), &out, &errb)
		if code == 0 || !strings.Contains(errb.String(), tt.want) {
			t.Errorf("%q: exit %d, stderr %q: want an error with %q", tt.args, code, errb.String(), tt.want)
		}
	}
}
