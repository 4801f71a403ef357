package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/usdtkit/usdtkit/agent"
)

// TestAgentCommand runs usdtkit-agent in-process: it serves /metrics on
// the address it prints, reloads its config on SIGHUP, and ends without
// error when its context ends.
func TestAgentCommand(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "agent.json")
	conf := `{"programs": [{"name": "none", "source": "usdt::x:y { @ = count(); }", "targets": [{"comm": "no-such-comm-7"}]}]}`
	if err := os.WriteFile(cfg, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	root := newAgentCmd()
	root.SetArgs([]string{"--config", cfg, "--listen", "127.0.0.1:0"})
	pr, pw := io.Pipe()
	root.SetErr(pw)
	root.SetOut(io.Discard)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	finished := false
	go func() { done <- root.ExecuteContext(ctx); pw.Close() }()
	t.Cleanup(func() {
		cancel()
		if !finished {
			<-done
		}
	})
	lines := bufio.NewScanner(pr)
	next := func() string {
		if !lines.Scan() {
			t.Fatalf("stderr ended: %v", lines.Err())
		}
		return lines.Text()
	}
	l := next()
	url, ok := strings.CutPrefix(l, "usdtkit agent: serving ")
	if !ok {
		t.Fatalf("first line %q", l)
	}
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || !strings.Contains(string(body), `usdtkit_agent_processes{program="none"} 0`) {
		t.Fatalf("GET %s: %v\n%s", url, err, body)
	}
	if err := syscall.Kill(os.Getpid(), syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	if l := next(); l != "usdtkit agent: reloaded "+cfg {
		t.Errorf("after SIGHUP: %q", l)
	}
	// A config whose program does not compile is refused: the running
	// one stays, and the agent says so once, not "reloaded".
	broken := strings.Replace(conf, "count()", "cnt()", 1)
	if err := os.WriteFile(cfg, []byte(broken), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(os.Getpid(), syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	if l := next(); !strings.HasPrefix(l, "usdtkit agent: reload: ") || !strings.HasSuffix(l, "(keeping the running config)") {
		t.Errorf("after SIGHUP with a broken program: %q", l)
	}
	cancel()
	select {
	case err := <-done:
		finished = true
		if err != nil {
			t.Errorf("agent: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("agent did not end with its context")
	}
	go io.Copy(io.Discard, pr)
}

func TestAgentCommandErrors(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "bad.json")
	if err := os.WriteFile(bad, []byte(`{"programs": []}`), 0o600); err != nil {
		t.Fatal(err)
	}
	noCompile := filepath.Join(t.TempDir(), "cnt.json")
	conf := `{"programs": [{"name": "c", "source": "usdt::x:y { @ = cnt(); }", "targets": [{"comm": "no-such-comm-7"}]}]}`
	if err := os.WriteFile(noCompile, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		args []string
		is   func(error) bool
	}{
		{"no config", []string{}, func(err error) bool { return err != nil }},
		{"missing", []string{"--config", bad + ".none"}, func(err error) bool { return errors.Is(err, os.ErrNotExist) }},
		{"invalid", []string{"--config", bad}, func(err error) bool {
			var ce *agent.ConfigError
			return errors.As(err, &ce) && ce.Field == "programs"
		}},
		{"does not compile", []string{"--config", noCompile}, func(err error) bool {
			var ce *agent.ConfigError
			return errors.As(err, &ce) && ce.Field == "programs[0].source"
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := newAgentCmd()
			root.SetArgs(tt.args)
			root.SetOut(io.Discard)
			root.SetErr(io.Discard)
			if err := root.Execute(); !tt.is(err) {
				t.Errorf("have %v", err)
			}
		})
	}
}

// TestAgentHelp: --help names the command as users type it.
func TestAgentHelp(t *testing.T) {
	var out bytes.Buffer
	root := newAgentCmd()
	root.SetArgs([]string{"--help"})
	root.SetOut(&out)
	if err := root.Execute(); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"usdtkit agent --config FILE", "help for usdtkit agent\n"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("--help has no %q:\n%s", want, out.String())
		}
	}
}
