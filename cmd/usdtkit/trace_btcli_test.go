package main

import (
	"bytes"
	"context"
	"os/exec"
	"path/filepath"
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
		code, ours, errOut := runStdin(t, prog, "trace", "-", "abc")
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

// TestProgramFileMissing: a program file that does not exist, .bt or not,
// is an error naming the file with exit status 1, as bpftrace's "failed to
// open file" (bpftrace, too, reads any first argument as the file).
func TestProgramFileMissing(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"missing.bt", "missing"} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(dir, name)
			code, out, errOut := runStdin(t, "", "trace", path)
			if want := "usdtkit: program file: open " + path + ": no such file or directory"; code != 1 || out != "" || !strings.HasPrefix(errOut, want) {
				t.Errorf("exit %d, stdout %q, stderr %q; want exit 1 and stderr starting %q", code, out, errOut, want)
			}
			btCode, _, btErr := bpftraceStdin(t, "", path)
			if btCode == 0 || !strings.Contains(btErr, path) {
				t.Errorf("bpftrace: exit %d, stderr %q; want a failure naming %s", btCode, btErr, path)
			}
		})
	}
}
