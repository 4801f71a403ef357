package main

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"

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
		`BEGIN { if (1) { printf("x\n"); exit(); } printf("after\n"); @b = 1 }`,
		`BEGIN { $i = 0; while ($i < 5) { $i++; if ($i == 2) { exit(); } @n = $i; } @after = 1; }`,
		`BEGIN { @a = 1; exit(); @a = 2; } END { @e = 1; exit(); @e = 2 }`,
	}
	// bpftrace's interval block may run again before it reads exit()'s
	// event: usdtkit's does not, and each run stops at exit().
	if code, ours, errOut := runStdin(t, "", "trace", "-q", "-e", `interval:ms:10 { @++; exit(); @++ }`); code != 0 || ours != "\n\n@: 1\n" {
		t.Errorf("interval: exit %d, stdout %q, stderr %q; want @: 1", code, ours, errOut)
	}
	for _, p := range progs {
		t.Run(p, func(t *testing.T) {
			code, ours, errOut := runStdin(t, "", "trace", "-q", "-e", p)
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

// TestSIGUSR1AgainstBpftrace: SIGUSR1 prints every map, as at exit
// without the two newlines before them, and the trace goes on, in text
// and JSON, as bpftrace does.
func TestSIGUSR1AgainstBpftrace(t *testing.T) {
	testutil.RequireBPF(t)
	bpftrace := testutil.RequireTool(t, "bpftrace")
	const prog = `BEGIN { @scalar = 5; @m[1] = 2; @h = hist(3); printf("hi\n"); } interval:s:2 { @after = 1; exit(); }`
	for _, json := range []bool{false, true} {
		t.Run(fmt.Sprint("json=", json), func(t *testing.T) {
			btArgs, usArgs := []string{"-e", prog}, []string{"trace", "-e", prog}
			if json {
				btArgs = append([]string{"-f", "json"}, btArgs...)
				usArgs = append(usArgs, "-o", "json")
			}
			// bpftrace prints the maps once it reads a record after the
			// signal: the interval block's.
			bt := exec.Command(bpftrace, btArgs...)
			stdout, err := bt.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := bt.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { bt.Process.Kill(); bt.Wait() })
			var theirs strings.Builder
			sc := bufio.NewScanner(stdout)
			for sc.Scan() {
				if strings.HasPrefix(sc.Text(), "Attaching") || strings.Contains(sc.Text(), "attached_probes") {
					continue
				}
				theirs.WriteString(sc.Text() + "\n")
				if strings.Contains(sc.Text(), "hi") {
					break
				}
			}
			if err := bt.Process.Signal(syscall.SIGUSR1); err != nil {
				t.Fatal(err)
			}
			for sc.Scan() {
				theirs.WriteString(sc.Text() + "\n")
			}
			if err := bt.Wait(); err != nil {
				t.Fatalf("bpftrace: %v", err)
			}

			run := startTrace(t, usArgs...)
			run.waitStdout(t, 10*time.Second)
			if err := syscall.Kill(os.Getpid(), syscall.SIGUSR1); err != nil {
				t.Fatal(err)
			}
			code, ours, errOut := run.wait(t)
			if code != 0 {
				t.Fatalf("usdtkit: exit %d: %s", code, errOut)
			}
			if ours != theirs.String() {
				t.Errorf("have\n%s\nwant (bpftrace)\n%s", ours, theirs.String())
			}
			if strings.Count(theirs.String(), "@scalar") != 2 || strings.Count(theirs.String(), "@after") != 1 {
				t.Errorf("bpftrace did not print the maps twice, @after once:\n%s", theirs.String())
			}
		})
	}
}

// TestAttachingLineAgainstBpftrace: the first line on stdout is
// bpftrace's "Attaching N probes...", N counted as bpftrace counts (a
// block per attach point, each USDT location, a function once), or its
// JSON object; -q leaves it out.
func TestAttachingLineAgainstBpftrace(t *testing.T) {
	testutil.RequireBPF(t)
	bpftrace := testutil.RequireTool(t, "bpftrace")
	bin := buildBtTarget(t)
	progs := []string{
		`BEGIN { exit(); }`,
		`BEGIN { exit(); } END { printf("end\n"); }`,
		`uprobe:BIN:work { @a = count(); } uprobe:BIN:work,uretprobe:BIN:work { @b = count(); }
usdt:BIN:demo:* { @c = count(); } BEGIN { printf("begin\n"); } interval:s:100 { exit(); }`,
	}
	for _, p := range progs {
		p = strings.ReplaceAll(p, "BIN", bin)
		for _, flags := range [][]string{nil, {"-q"}, {"-f", "json"}, {"-q", "-f", "json"}} {
			t.Run(fmt.Sprint(p, flags), func(t *testing.T) {
				args := append(append([]string{"-c", bin + " run"}, flags...), "-e", p)
				cmd := exec.Command(bpftrace, args...)
				var errb strings.Builder
				cmd.Stderr = &errb
				out, err := cmd.Output()
				if err != nil {
					t.Fatalf("bpftrace %q: %v\n%s", args, err, errb.String())
				}
				code, ours, errOut := runStdin(t, "", append([]string{"trace"}, args...)...)
				if code != 0 {
					t.Fatalf("usdtkit: exit %d: %s", code, errOut)
				}
				theirs := firstLine(string(out))
				if have := firstLine(ours); have != theirs {
					t.Errorf("first line %q, want (bpftrace) %q", have, theirs)
				}
				quiet := len(flags) > 0 && flags[0] == "-q"
				if strings.Contains(theirs, "ttach") == quiet {
					t.Errorf("bpftrace's first line %q, with -q %v", theirs, quiet)
				}
			})
		}
	}
}

// firstLine returns s's first line that the -c target (bttarget) did not
// print.
func firstLine(s string) string {
	for l := range strings.Lines(s) {
		if strings.HasPrefix(l, "ready ") || l == "done\n" {
			continue
		}
		return l
	}
	return ""
}

// TestUSDTFileActivationAgainstBpftrace: with --usdt-file-activation and
// no process, a probe's semaphore is raised in a process started once the
// probes are attached, as bpftrace raises it.
func TestUSDTFileActivationAgainstBpftrace(t *testing.T) {
	testutil.RequireBPF(t)
	bpftrace := testutil.RequireTool(t, "bpftrace")
	bin := buildBtTarget(t)
	src := strings.ReplaceAll(`usdt:BIN:demo:sem { @s = sum(arg0); @n = count(); } usdt:BIN:demo:done { exit(); }`, "BIN", bin)
	runTarget := func() {
		if out, err := exec.Command(bin, "run").CombinedOutput(); err != nil {
			t.Fatalf("%s run: %v\n%s", bin, err, out)
		}
	}

	bt := exec.Command(bpftrace, "--usdt-file-activation", "-e", `BEGIN { printf("READY\n"); } `+src)
	stdout, err := bt.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := bt.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { bt.Process.Kill(); bt.Wait() })
	sc := bufio.NewScanner(stdout)
	for sc.Scan() && sc.Text() != "READY" {
	}
	runTarget()
	var theirs strings.Builder
	for sc.Scan() {
		theirs.WriteString(sc.Text() + "\n")
	}
	if err := bt.Wait(); err != nil {
		t.Fatalf("bpftrace: %v", err)
	}

	run := startTrace(t, "trace", "--usdt-file-activation", "-e", src)
	runTarget()
	code, ours, errOut := run.wait(t)
	if code != 0 {
		t.Fatalf("usdtkit: exit %d: %s", code, errOut)
	}
	if ours != theirs.String() || !strings.Contains(ours, "@s: 45") {
		t.Errorf("have\n%s\nwant (bpftrace, with @s: 45)\n%s", ours, theirs.String())
	}
}
