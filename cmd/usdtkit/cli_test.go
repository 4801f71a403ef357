package main

import (
	"bytes"
	"context"
	"github.com/usdtkit/usdtkit/internal/testutil"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// deadPID returns the PID of a process that has exited and been reaped.
func deadPID(t *testing.T) int {
	t.Helper()
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	return cmd.Process.Pid
}

// TestListErrors checks that each mistake a user can make gives exit status
// 1, nothing on stdout and one line on stderr that says what is wrong.
func TestListErrors(t *testing.T) {
	notELF := filepath.Join(t.TempDir(), "notes.txt")
	if err := os.WriteFile(notELF, []byte("not an ELF file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		args []string
		want string // in the one line on stderr
	}{
		{"no target", []string{"list"}, "name a file, a library or a process (-p PID)"},
		{"missing file", []string{"list", "/no/such/file"}, "no such file or directory"},
		{"unknown library", []string{"list", "libno-such-lib-xyz"}, "no such file, and no library of that name"},
		{"directory", []string{"list", "/usr"}, "is a directory"},
		{"not ELF", []string{"list", notELF}, notELF},
		{"dead process", []string{"list", "-p", strconv.Itoa(deadPID(t))}, "is the PID right"},
		{"bad output", []string{"list", "-o", "yaml", "/bin/true"}, `--output "yaml"`},
		{"bad selector", []string{"list", "a:b:c"}, "PROVIDER:NAME"},
		{"bad glob", []string{"list", "usdt:/bin/true:[:x"}, "glob"},
		{"both kinds", []string{"list", "python:x", "uprobe:/bin/true:main"}, "not both"},
		{"trace no probe", []string{"trace"}, "name a probe, or give a program with -e or FILE.bt"},
		{"trace no match", []string{"trace", "usdt:" + testutil.Python311 + ":python:nosuch"}, "no probe matches"},
		{"trace two modes", []string{"trace", "--count", "--hist", "arg0", "python:x"}, "exclude each other"},
		{"trace -p and -c", []string{"trace", "-p", "1", "-c", "true", "python:x"}, "exclude each other"},
		{"trace bad str", []string{"trace", "--str", "12", "python:x"}, "--str 12"},
		{"trace bad probe str", []string{"trace", "--str", "x=1", "python:x"}, "PROVIDER:NAME=N"},
		{"trace bad hist", []string{"trace", "--hist", "x", "python:x"}, "USDT probes take argN"},
		{"trace bad hist arg", []string{"trace", "--hist", "arg99", "python:x"}, "want argN"},
		{"trace bad latency", []string{"trace", "--latency", "a", "python:x"}, "START,DONE"},
		{"trace bad filter", []string{"trace", "--filter", "arg0 ~ 1", "python:x"}, "argN OP VALUE"},
		{"trace bad format", []string{"trace", "-F", `"%s", arg0`, "python:x"}, "str(argN)"},
		{"trace format and count", []string{"trace", "--count", "-F", "%d", "python:x"}, "--format prints events"},
		{"trace count-by", []string{"trace", "--count", "--count-by", "cpu", "python:x"}, "want pid, tid, comm, argN or str(argN)"},
		{"trace dead pid", []string{"trace", "-p", strconv.Itoa(deadPID(t)), "python:x"}, "is the PID right"},
		{"trace latency probe", []string{"trace", "--latency", "a,b", "usdt:" + testutil.Python311 + ":python:line"}, "must be among the traced probes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			code := run(context.Background(), tt.args, &out, &errb)
			lines := strings.Split(strings.TrimSuffix(errb.String(), "\n"), "\n")
			if code != 1 || out.Len() != 0 || len(lines) != 1 || !strings.Contains(lines[0], tt.want) {
				t.Errorf("exit %d, stdout %q, stderr %q; want exit 1, no stdout, one line with %q", code, out.String(), errb.String(), tt.want)
			}
		})
	}
}
