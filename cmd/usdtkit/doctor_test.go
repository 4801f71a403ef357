package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/usdtkit/usdtkit/internal/testutil"
)

// doctorChecks are the checks doctor prints, in order.
var doctorChecks = []string{"bpf", "btf", "uprobe-pmu", "ref-ctr", "uprobe-multi", "cookies", "nop5-optimization", "sleepable-strings", "bpf-loop"}

func doctorLines(s string) []string {
	return strings.Split(strings.TrimSuffix(s, "\n"), "\n")
}

// TestDoctorText runs doctor as root on our CI machines, which have every
// feature: one "ok" line per check, in order, and exit status 0.
func TestDoctorText(t *testing.T) {
	testutil.RequireBPF(t)
	var out, errb bytes.Buffer
	if code := run(context.Background(), []string{"doctor"}, &out, &errb); code != 0 || errb.Len() != 0 {
		t.Fatalf("exit %d, stderr %q; want 0 and nothing", code, errb.String())
	}
	lines := doctorLines(out.String())
	var names []string
	for _, l := range lines {
		f := strings.Fields(l)
		if len(f) < 3 {
			t.Errorf("line %q: want status, name and detail", l)
			continue
		}
		names = append(names, f[1])
		// nop5-optimization is missing on kernels before 6.18,
		// sleepable-strings before 6.12; the features package asserts
		// which kernels have them.
		if f[0] != "ok" && f[1] != "nop5-optimization" && f[1] != "sleepable-strings" {
			t.Errorf("line %q: want ok", l)
		}
	}
	if !slices.Equal(names, doctorChecks) {
		t.Errorf("have checks %q, want %q", names, doctorChecks)
	}
}

// TestDoctorJSON checks that every line is one object with exactly the
// documented keys.
func TestDoctorJSON(t *testing.T) {
	testutil.RequireBPF(t)
	var out, errb bytes.Buffer
	if code := run(context.Background(), []string{"doctor", "-o", "json"}, &out, &errb); code != 0 {
		t.Fatalf("exit %d, stderr %q; want 0", code, errb.String())
	}
	wantKeys := []string{"detail", "error", "impact", "name", "ok"}
	var names []string
	for _, l := range doctorLines(out.String()) {
		var obj map[string]any
		if err := json.Unmarshal([]byte(l), &obj); err != nil {
			t.Fatalf("line %q: %v", l, err)
		}
		var keys []string
		for k := range obj {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		if !slices.Equal(keys, wantKeys) {
			t.Errorf("line %q: have keys %q, want %q", l, keys, wantKeys)
		}
		name, _ := obj["name"].(string)
		names = append(names, name)
		ok, isBool := obj["ok"].(bool)
		if !isBool || ok != (obj["error"] == nil) {
			t.Errorf("line %q: ok must be a bool, true exactly when error is null", l)
		}
	}
	if !slices.Equal(names, doctorChecks) {
		t.Errorf("have checks %q, want %q", names, doctorChecks)
	}
}

func TestDoctorUsageErrors(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string // in the one line on stderr
	}{
		{"bad output", []string{"doctor", "-o", "yaml"}, `--output "yaml"`},
		{"argument", []string{"doctor", "extra"}, "unknown command"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			code := run(context.Background(), tt.args, &out, &errb)
			lines := doctorLines(errb.String())
			if code != 1 || out.Len() != 0 || len(lines) != 1 || !strings.Contains(lines[0], tt.want) {
				t.Errorf("exit %d, stdout %q, stderr %q; want exit 1, no stdout, one line with %q", code, out.String(), errb.String(), tt.want)
			}
		})
	}
}

// TestDoctorUnprivileged builds usdtkit and runs `usdtkit doctor` as
// nobody: the bpf check is missing, and the one line on stderr says what
// tracing needs.
func TestDoctorUnprivileged(t *testing.T) {
	testutil.RequireRoot(t) // to switch to another user
	goTool := testutil.RequireTool(t, "go")
	// t.TempDir is 0700; nobody must be able to run the binary.
	dir, err := os.MkdirTemp("", "usdtkit-doctor-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "usdtkit")
	build := exec.Command(goTool, "build", "-o", bin, ".")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}

	const nobody = 65534
	cmd := exec.Command(bin, "doctor")
	cmd.Dir = "/"
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Credential: &syscall.Credential{Uid: nobody, Gid: nobody, NoSetGroups: true},
	}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err = cmd.Run()
	if code := cmd.ProcessState.ExitCode(); code != 1 {
		t.Fatalf("exit %d (%v), stderr %q; want 1", code, err, errb.String())
	}
	lines := doctorLines(errb.String())
	if len(lines) != 1 || !strings.Contains(lines[0], "needs root or CAP_BPF+CAP_PERFMON") {
		t.Errorf("stderr %q: want one line saying tracing needs root or CAP_BPF+CAP_PERFMON", errb.String())
	}
	stdout := doctorLines(out.String())
	if len(stdout) != len(doctorChecks) {
		t.Fatalf("stdout %q: want %d lines", out.String(), len(doctorChecks))
	}
	if f := strings.Fields(stdout[0]); len(f) < 2 || f[0] != "missing" || f[1] != "bpf" {
		t.Errorf("first line %q: want missing bpf", stdout[0])
	}
	if !strings.Contains(stdout[0], "uid 65534") {
		t.Errorf("first line %q: want the uid", stdout[0])
	}
}
