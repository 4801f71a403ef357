package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/usdtkit/usdtkit/elfnotes"
	"github.com/usdtkit/usdtkit/internal/testutil"
)

// TestRefusedFlags checks that flag values that cannot be what the user
// means are refused with exactly one line, before anything is attached:
// -p 0 and an empty -c would trace every process, a second -p of list would
// silently win.
func TestRefusedFlags(t *testing.T) {
	py := "usdt:" + testutil.Python311 + ":python:gc__start"
	tests := []struct {
		name string
		args []string
		want string // the whole line on stderr
	}{
		{"trace -p 0", []string{"trace", "-p", "0", py},
			`ERROR: pid '0' out of valid pid range [1,4194304] (leave -p out to trace every process that maps the file)`},
		{"list -p 0", []string{"list", "-p", "0"},
			`usdtkit: invalid argument "0" for "-p, --pid" flag: want a process ID above 0 (leave -p out to use every process that maps the file)`},
		{"trace -p -5", []string{"trace", "-p", "-5", py},
			`ERROR: pid '-5' out of valid pid range [1,4194304] (leave -p out to trace every process that maps the file)`},
		{"list -p twice", []string{"list", "-p", "1", "-p", "2", py},
			`usdtkit: invalid argument "2" for "-p, --pid" flag: -p is given twice: one process per run for now (several are planned)`},
		{"trace -c empty", []string{"trace", "-c", "", py},
			`usdtkit: -c: an empty command (leave -c out to trace every process that maps the file)`},
		{"trace -c blank", []string{"trace", "-c", "  ", py},
			`usdtkit: -c: an empty command (leave -c out to trace every process that maps the file)`},
		{"trace -d negative", []string{"trace", "-d", "-1s", py},
			`usdtkit: -d -1s: want a positive duration, such as 10s`},
		{"trace -d zero", []string{"trace", "-d", "0", py},
			`usdtkit: -d 0s: want a positive duration, such as 10s`},
		{"trace -c not executable", []string{"trace", "-c", "/etc/passwd", py},
			`usdtkit: -c: /etc/passwd is not executable`},
		{"trace -c directory", []string{"trace", "-c", "/usr", py},
			`usdtkit: -c: /usr is not executable`},
		{"trace -c missing path", []string{"trace", "-c", "/no/such/cmd", py},
			`usdtkit: -c: /no/such/cmd: no such command (no such file)`},
		{"trace -c missing command", []string{"trace", "-c", "no-such-command-xyz arg", py},
			`usdtkit: -c: no-such-command-xyz: no such command in $PATH`},
		{"list not ELF", []string{"list", "/etc/passwd"},
			`usdtkit: /etc/passwd: not an ELF file (a script or data? name the program itself)`},
		{"list no match", []string{"list", testutil.Python311, "nosuch:*"},
			`usdtkit: no probe matches nosuch:*`},
		{"list no function", []string{"list", "uprobe:" + testutil.Python311 + ":no_such_function_xyz*"},
			`usdtkit: no function matches uprobe:` + testutil.Python311 + `:no_such_function_xyz*`},
	}
	testutil.RequireFile(t, testutil.Python311)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			code := run(context.Background(), tt.args, &out, &errb)
			if want := tt.want + "\n"; code != 1 || out.Len() != 0 || errb.String() != want {
				t.Errorf("exit %d, stdout %q, stderr %q; want exit 1, no stdout, stderr %q", code, out.String(), errb.String(), want)
			}
		})
	}
}

// TestArgumentRefsChecked checks that an argument a probe lacks, read by
// --str, a format, a filter or --hist, is refused naming the probe and its
// arguments, instead of being ignored or printed as "<argN?>".
func TestArgumentRefsChecked(t *testing.T) {
	py := testutil.RequireFile(t, testutil.Python311)
	gc := "usdt:" + py + ":python:gc__start" // one argument
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"--str", []string{"--str", "5", gc}, "python:gc__start has 1 argument (arg0), no arg5 to read as a string"},
		{"--str probe", []string{"--str", "python:gc__start=2", gc}, "python:gc__start has 1 argument (arg0), no arg2 to read as a string"},
		{"--str other probe", []string{"--str", "python:gc__done=0", gc}, "python:gc__done is not among the traced probes (python:gc__start)"},
		{"format str", []string{"-F", `"%s", str(arg7)`, gc}, "python:gc__start has 1 argument (arg0), no arg7 to read as a string"},
		{"format int", []string{"-F", "python:gc__start=%d %d", gc}, "python:gc__start has 1 argument (arg0), no arg1 to print"},
		{"filter", []string{"--filter", "arg3 > 1", gc}, "python:gc__start has 1 argument (arg0), no arg3 to filter on"},
		{"hist", []string{"--hist", "arg5", gc}, "python:gc__start has 1 argument (arg0), no arg5 to make a histogram of"},
		{"uretprobe str", []string{"--str", "1", "uretprobe:libc:malloc"}, "uretprobe:malloc has 1 argument (arg0), no arg1 to read as a string"},
		{"uprobe hist", []string{"--hist", "arg6", "uprobe:libc:malloc"}, "uprobe:malloc has 6 arguments (arg0..arg5), no arg6 to make a histogram of"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			code := run(context.Background(), append([]string{"trace"}, tt.args...), &out, &errb)
			if want := "usdtkit: " + tt.want + "\n"; code != 1 || out.Len() != 0 || errb.String() != want {
				t.Errorf("exit %d, stdout %q, stderr %q; want exit 1, no stdout, stderr %q", code, out.String(), errb.String(), want)
			}
		})
	}
}

// TestListNoProbesSaysSo checks that a file without probes is listed with
// exit status 0 and a note on stderr, not silently.
func TestListNoProbesSaysSo(t *testing.T) {
	var out, errb bytes.Buffer
	code := run(context.Background(), []string{"list", "/bin/true"}, &out, &errb)
	if code != 0 || out.Len() != 0 || errb.String() != "usdtkit: no USDT probes found\n" {
		t.Errorf("exit %d, stdout %q, stderr %q; want 0, nothing, a note", code, out.String(), errb.String())
	}
}

// TestPIDOfThread checks that -p with a thread's ID lists its process,
// and says so: this test's own process has threads besides the main one.
func TestPIDOfThread(t *testing.T) {
	pid := os.Getpid()
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		t.Fatal(err)
	}
	tid := 0
	for _, e := range tasks {
		if n, _ := strconv.Atoi(e.Name()); n != pid && n != 0 {
			tid = n
			break
		}
	}
	if tid == 0 {
		t.Fatalf("process %d has no thread besides its main one: %v", pid, tasks)
	}
	var out, errb bytes.Buffer
	code := run(context.Background(), []string{"list", "-p", strconv.Itoa(tid), "uprobe::runtime.main"}, &out, &errb)
	wantErr := fmt.Sprintf("usdtkit: %d is a thread of process %d; listing %d\n", tid, pid, pid)
	if code != 0 || errb.String() != wantErr || !strings.Contains(out.String(), "runtime.main") {
		t.Errorf("exit %d, stdout %q, stderr %q; want 0, runtime.main, stderr %q", code, out.String(), errb.String(), wantErr)
	}
}

// TestUserMessage checks the one line errors map to at the CLI edge: no
// library internals (cilium's MEMLOCK hint, ELF magic numbers).
func TestUserMessage(t *testing.T) {
	memlock := fmt.Errorf("load program: %w", fmt.Errorf("map create: %w (MEMLOCK may be too low, consider rlimit.RemoveMemlock)", unix.EPERM))
	notELF := fmt.Errorf("/tmp/x.sh: %w", &elfnotes.FormatError{Msg: "bad magic number", Val: "23212f62", Err: elfnotes.ErrNotELF})
	bpfDenied := "permission denied: tracing needs root, or CAP_BPF and CAP_PERFMON"
	if os.Geteuid() == 0 {
		bpfDenied = "permission denied to root: on kernels before 5.11 raise the locked-memory limit (ulimit -l unlimited); otherwise a security module (lockdown, SELinux) refuses BPF"
	}
	tests := []struct {
		name string
		err  error
		want string
	}{
		{"bpf permission", memlock, bpfDenied},
		{"file permission", fmt.Errorf("list: %w", &fs.PathError{Op: "open", Path: "/root/x", Err: unix.EACCES}), "open /root/x: permission denied"},
		{"mapping permission", &fs.PathError{Op: "open", Path: "/proc/1/maps", Err: unix.EACCES},
			"open /proc/1/maps: permission denied (other processes' mappings need CAP_SYS_ADMIN, or root)"},
		{"not ELF", notELF, "/tmp/x.sh: not an ELF file (a script or data? name the program itself)"},
		{"other", errors.New("something"), "something"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if have := userMessage(tt.err); have != tt.want {
				t.Errorf("userMessage(%q) = %q, want %q", tt.err, have, tt.want)
			}
		})
	}
}
