package main

import (
	"bytes"
	"context"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/usdtkit/usdtkit/internal/bpf/stackcap/stacktest"
	"github.com/usdtkit/usdtkit/internal/lang/flame"
	"github.com/usdtkit/usdtkit/internal/testutil"
)

// TestTraceStacksUnwindCFI: --stacks -o folded on chain.c built -O2
// -fomit-frame-pointer has the full chains by default (--unwind cfi-bpf,
// the walk with CFI in the program) and with --unwind cfi (unwound in
// usdtkit): main → level1 → level2 → level3 → leaf three times, and
// main → sort_them → qsort's C library frames → cmp → leaf for every hit
// under qsort; with --unwind fp the walk loses the frames the missing
// frame pointers hide, and no stack reaches sort_them.
func TestTraceStacksUnwindCFI(t *testing.T) {
	bin := stacktest.BuildChain(t, "-O2", "-fomit-frame-pointer")
	probe := "uprobe:" + bin + ":leaf"
	for _, unwind := range []string{"fp", "cfi", "cfi-bpf", "default"} {
		t.Run(unwind, func(t *testing.T) {
			args := []string{"trace", "-p", "PID", probe, "--stacks", "-o", "folded"}
			if unwind != "default" {
				args = append(args, "--unwind", unwind)
			}
			full := unwind != "fp"
			tc := testutil.StartTracee(t, bin)
			tc.WaitReady(t)
			args[2] = strconv.Itoa(tc.PID())
			run := startTrace(t, args...)
			for range 3 {
				tc.Do(t, "levels")
			}
			tc.Do(t, "sort")
			tc.Quit(t)
			code, out, errs := run.wait(t)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errs)
			}
			samples, err := flame.ParseFolded(strings.NewReader(out))
			if err != nil {
				t.Fatalf("%v:\n%s", err, out)
			}
			if len(samples) == 0 {
				t.Fatalf("no stacks:\n%s", errs)
			}
			levels, sorts := uint64(0), uint64(0)
			for _, s := range samples {
				var names []string // outermost first, the root (probe) first
				for i := len(s.Frames) - 1; i >= 0; i-- {
					names = append(names, s.Frames[i].Symbol)
				}
				outer := outerFrames(names)
				switch {
				case slices.Equal(outer, levelsChain):
					levels += s.Count
				case len(outer) > 4 && slices.Equal(outer[:2], []string{"main", "sort_them"}) && slices.Equal(outer[len(outer)-2:], []string{"cmp", "leaf"}) && slices.ContainsFunc(outer, func(n string) bool { return strings.Contains(n, "qsort") }):
					sorts += s.Count
				case full:
					t.Errorf("stack %q: neither chain", names)
				}
			}
			if full && (levels != 3 || sorts == 0) {
				t.Errorf("levels stacks %d, sort stacks %d: want 3 and some:\n%s", levels, sorts, out)
			}
			if unwind == "fp" && (levels != 0 || sorts != 0) {
				t.Errorf("with frame pointers: %d full levels stacks, %d full sort stacks; want none (the walk stops early):\n%s", levels, sorts, out)
			}
			if strings.Contains(errs, "Lost") || strings.Contains(errs, "warning") {
				t.Errorf("losses or warnings:\n%s", errs)
			}
		})
	}
}

// TestTraceUnwindFlag: --unwind takes cfi-bpf, fp or cfi.
func TestTraceUnwindFlag(t *testing.T) {
	var out, errb bytes.Buffer
	code := run(context.Background(), []string{"trace", "--unwind", "dwarf", "-e", "BEGIN { exit(); }"}, &out, &errb)
	if code != 1 || !strings.Contains(errb.String(), `--unwind "dwarf": want cfi-bpf, fp or cfi`) {
		t.Errorf("exit %d, stderr %q", code, errb.String())
	}
}

// TestTraceStacksJSONUnwindCFI: with --unwind cfi, --stacks -o json's map
// and "stack" lines have the stacks unwound in usdtkit: leaf, level3,
// level2, level1, main in chain.c built -O2 -fomit-frame-pointer, whose
// frame-pointer walk loses them, counted twice.
func TestTraceStacksJSONUnwindCFI(t *testing.T) {
	bin := stacktest.BuildChain(t, "-O2", "-fomit-frame-pointer")
	out, _ := traceLevels(t, bin, 2, "uprobe:"+bin+":leaf", "--stacks", "--unwind", "cfi", "-o", "json")
	maps, stacks := splitStacksJSON(t, out)
	if len(maps) != 1 || len(stacks) != 1 {
		t.Fatalf("%d map lines and %d stack lines, want 1 and 1:\n%s", len(maps), len(stacks), out)
	}
	if !strings.Contains(maps[0], `level1+`) || !strings.Contains(maps[0], `main+`) {
		t.Errorf("map line lacks level1 and main: %s", maps[0])
	}
	checkLevelsStack(t, stacks[0], bin, false)
}
