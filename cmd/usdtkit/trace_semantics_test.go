package main

import (
	"strings"

	"testing"

	"github.com/usdtkit/usdtkit/internal/testutil"
)

// This file compares what programs do at run time with bpftrace 0.17, for
// the cases its runtime test suite checks (issue 27): exit(), the order
// of several probes on one site, SIGUSR1.

// TestExitEndsBlockAgainstBpftrace: exit() ends the block it is called
// in, as a return would, in BEGIN, END, interval blocks, an if and a
// while; the maps print as bpftrace prints them.
func TestExitEndsBlockAgainstBpftrace(t *testing.T) {
	testutil.RequireBPF(t)
	progs := []string{
		`BEGIN { @a = 1; exit(); @a = 2; }`,
		`interval:ms:10 { @++; exit(); @++ }`,
		`BEGIN { if (1) { printf("x\n"); exit(); } printf("after\n"); @b = 1 }`,
		`BEGIN { $i = 0; while ($i < 5) { $i++; if ($i == 2) { exit(); } @n = $i; } @after = 1; }`,
		`BEGIN { @a = 1; exit(); @a = 2; } END { @e = 1; exit(); @e = 2 }`,
	}
	for _, p := range progs {
		t.Run(p, func(t *testing.T) {
			code, ours, errOut := runStdin(t, "", "trace", "-e", p)
			if code != 0 {
				t.Fatalf("usdtkit: exit %d: %s", code, errOut)
			}
			btCode, theirs, btErr := bpftraceStdin(t, "", "-e", p)
			if btCode != 0 {
				t.Fatalf("bpftrace: exit %d: %s", btCode, btErr)
			}
			if ours != theirs {
				t.Errorf("have\n%q\nwant (bpftrace)\n%q", ours, theirs)
			}
		})
	}
}

// TestProbeOrderAgainstBpftrace: blocks on one site (a function's entry,
// its return, a USDT probe) run in the program's order, as bpftrace
// runs them.
func TestProbeOrderAgainstBpftrace(t *testing.T) {
	testutil.RequireBPF(t)
	bpftrace := testutil.RequireTool(t, "bpftrace")
	bin := buildBtTarget(t)
	src := strings.ReplaceAll(`uprobe:BIN:work /arg0 < 3/ { printf("entry 1 "); }
uprobe:BIN:work /arg0 < 3/ { printf("entry 2 "); }
uprobe:BIN:work /arg0 < 3/ { printf("entry 3\n"); }
uretprobe:BIN:work /retval < 20/ { printf("return 1 "); }
uretprobe:BIN:work /retval < 20/ { printf("return 2\n"); }
usdt:BIN:demo:req /arg0 < 3/ { printf("req 1 "); }
usdt:BIN:demo:req /arg0 < 3/ { printf("req 2\n"); }`, "BIN", bin)
	cmdline := bin + " run"
	ours := runProgramCLI(t, "trace", "-c", cmdline, "-e", src)
	theirs := runBpftrace(t, bpftrace, "-c", cmdline, "-e", src)
	if ours != theirs {
		t.Errorf("have\n%s\nwant (bpftrace)\n%s", ours, theirs)
	}
	for _, want := range []string{"entry 1 entry 2 entry 3\n", "return 1 return 2\n", "req 1 req 2\n"} {
		if !strings.Contains(theirs, want) {
			t.Errorf("bpftrace printed no %q:\n%s", want, theirs)
		}
	}
}
