package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

func TestAgentPath(t *testing.T) {
	dir := t.TempDir()
	exe := filepath.Join(dir, "usdtkit")
	beside := filepath.Join(dir, agentProgram)
	plain := filepath.Join(t.TempDir(), "usdtkit")
	if err := os.WriteFile(filepath.Join(filepath.Dir(plain), agentProgram), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(beside, nil, 0o755); err != nil {
		t.Fatal(err)
	}
	onPath := func(string) (string, error) { return "/opt/bin/" + agentProgram, nil }
	nowhere := func(name string) (string, error) { return "", &exec.Error{Name: name, Err: exec.ErrNotFound} }
	tests := []struct {
		name     string
		exe      string
		lookPath func(string) (string, error)
		want     string
		err      error
	}{
		{"beside", exe, nowhere, beside, nil},
		{"beside first", exe, onPath, beside, nil},
		{"not executable beside", plain, onPath, "/opt/bin/" + agentProgram, nil},
		{"on PATH", "", onPath, "/opt/bin/" + agentProgram, nil},
		{"nowhere", plain, nowhere, "", exec.ErrNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			have, err := agentPath(tt.exe, tt.lookPath)
			if have != tt.want || !errors.Is(err, tt.err) || (err == nil) != (tt.err == nil) {
				t.Errorf("have %q, %v; want %q, %v", have, err, tt.want, tt.err)
			}
		})
	}
}

// TestAgentRunsAgentProgram builds usdtkit and usdtkit-agent side by side,
// as make build does: usdtkit agent is usdtkit-agent, given the same
// arguments (its help, its error for a missing config file).
func TestAgentRunsAgentProgram(t *testing.T) {
	if testing.Short() {
		t.Skip("builds both commands")
	}
	dir := t.TempDir()
	goTool := filepath.Join(runtime.GOROOT(), "bin", "go")
	for _, pkg := range []string{".", "../usdtkit-agent"} {
		out, err := exec.Command(goTool, "build", "-o", dir, pkg).CombinedOutput()
		if err != nil {
			t.Fatalf("go build %s: %v\n%s", pkg, err, out)
		}
	}
	usdtkit := filepath.Join(dir, "usdtkit")
	help, err := exec.Command(usdtkit, "agent", "--help").Output()
	if err != nil || !strings.Contains(string(help), "--listen") {
		t.Errorf("usdtkit agent --help: %v\n%s", err, help)
	}
	missing := filepath.Join(dir, "none.json")
	cmd := exec.Command(usdtkit, "agent", "--config", missing)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	err = cmd.Run()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 || !strings.HasPrefix(stderr.String(), "usdtkit agent: ") || !strings.Contains(stderr.String(), missing) {
		t.Errorf("usdtkit agent --config %s: %v, stderr %q; want exit status 1 and usdtkit-agent's sentence", missing, err, stderr.String())
	}
}

// TestLinksNoAgent checks that usdtkit links none of what only the agent
// needs: every process usdtkit starts would initialise it.
func TestLinksNoAgent(t *testing.T) {
	out, err := exec.Command(filepath.Join(runtime.GOROOT(), "bin", "go"), "list", "-deps", "github.com/usdtkit/usdtkit/cmd/usdtkit").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	deps := strings.Fields(string(out))
	if len(deps) == 0 {
		t.Fatal("go list -deps listed nothing")
	}
	for _, dep := range deps {
		for _, heavy := range []string{"github.com/usdtkit/usdtkit/agent", "github.com/prometheus/", "go.opentelemetry.io/", "google.golang.org/grpc", "google.golang.org/protobuf"} {
			if dep == heavy || strings.HasPrefix(dep, heavy) {
				t.Errorf("usdtkit links %s", dep)
			}
		}
	}
}
