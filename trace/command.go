package trace

import (
	"fmt"
	"os"
	"os/exec"
	"time"

	"github.com/usdtkit/usdtkit/internal/proc/launch"
)

// DefaultCommandGrace is how long Run waits for Options.Command to exit
// after SIGTERM when the trace ends first, before it sends SIGKILL.
const DefaultCommandGrace = 2 * time.Second

// command is Options.Command once started.
type command struct {
	p     *launch.Process
	grace time.Duration
	// state and ended once it has ended (done).
	state *os.ProcessState
	ended bool
	done  bool
}

// startCommand starts c stopped before its first instruction.
func startCommand(c *exec.Cmd, grace time.Duration) (*command, error) {
	if c.Process != nil {
		return nil, fmt.Errorf("start: field Command was started already")
	}
	if grace < 0 {
		return nil, fmt.Errorf("start: field CommandGrace is %v", grace)
	}
	if grace == 0 {
		grace = DefaultCommandGrace
	}
	p, err := launch.Start(c)
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", c.Path, err)
	}
	return &command{p: p, grace: grace}, nil
}

func (c *command) pid() int { return c.p.PID() }

func (c *command) resume() error { return c.p.Resume() }

// end waits for the command to exit, or ends it (SIGTERM, then SIGKILL).
func (c *command) end() {
	if c.done {
		return
	}
	c.state, c.ended = c.p.End(c.grace)
	c.done = true
}

// kill kills the command unless it has ended.
func (c *command) kill() {
	if c.done {
		return
	}
	c.p.Kill()
	c.state, c.ended, c.done = c.p.Cmd.ProcessState, true, true
}

// CommandState says how Options.Command ended, once Run has returned (or
// Close killed it): its state (exit code, signal), and whether the tracer
// ended it (Run ended first and signalled it, or Close killed it) rather
// than it exiting by itself. state is nil without a Command or while it
// runs.
func (t *Tracer) CommandState() (state *os.ProcessState, ended bool) {
	if t.cmd == nil || !t.cmd.done {
		return nil, false
	}
	return t.cmd.state, t.cmd.ended
}
