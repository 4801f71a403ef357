package main

import (
	"bytes"
	"context"
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
