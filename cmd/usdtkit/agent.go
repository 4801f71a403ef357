package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"

	"github.com/spf13/cobra"
)

// agentProgram is the agent's own executable: usdtkit does not link the
// agent (see cmd/usdtkit-agent).
const agentProgram = "usdtkit-agent"

// newAgentCmd runs usdtkit-agent in usdtkit's place with the arguments
// after agent, flags and --help included.
func newAgentCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "agent --config FILE",
		Short: "Run programs in every matching process and export their maps to Prometheus",
		Long: `Run the programs of a config file for a long time in every process their
targets select, and serve their maps as Prometheus metrics: usdtkit agent --help
says more.

The agent is a program of its own, usdtkit-agent, which usdtkit agent runs with
the same arguments; it is looked for beside usdtkit, then on PATH (make build
builds both).`,
		Example: `  sudo usdtkit agent --config /etc/usdtkit/agent.json
  sudo usdtkit agent --config agent.json --listen :9435`,
		DisableFlagParsing: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			exe, _ := os.Executable()
			path, err := agentPath(exe, exec.LookPath)
			if err != nil {
				return err
			}
			if err := syscall.Exec(path, append([]string{path}, args...), os.Environ()); err != nil {
				return fmt.Errorf("run %s: %w", path, err)
			}
			return nil
		},
	}
}

// agentPath returns the agent program beside exe (usdtkit's own path),
// else the one lookPath finds on PATH; the error wraps lookPath's
// (exec.ErrNotFound when there is none).
func agentPath(exe string, lookPath func(string) (string, error)) (string, error) {
	if exe != "" {
		p := filepath.Join(filepath.Dir(exe), agentProgram)
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	p, err := lookPath(agentProgram)
	if err != nil {
		return "", fmt.Errorf("usdtkit agent runs %s, which is neither beside %s nor on PATH (make build builds both): %w", agentProgram, exe, err)
	}
	return p, nil
}
