package agent

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/usdtkit/usdtkit/trace"
)

// compileCheck compiles each program of cfg against each of its binary
// targets that exists, or, with none, against no object, so that what is
// wrong in the program's text (a misspelt function, an argument its probe
// does not have) stops New and Reload rather than each process's start.
// An error about where a probe is (it matches nothing in this file, an
// empty path needs a process) is left to the processes: the probe may be
// in a library they map. A binary that does not exist is a warning.
func compileCheck(cfg *Config, warn func(error)) error {
	for i := range cfg.Programs {
		p := &cfg.Programs[i]
		if p.Source == "" {
			continue // File not read yet (ParseConfig without LoadConfig)
		}
		var opts []*trace.CompileOptions
		for _, t := range p.Targets {
			if t.Binary == "" {
				continue
			}
			if _, err := os.Stat(t.Binary); err != nil {
				warn(fmt.Errorf("program %s: binary %s: %w (its processes are traced once it exists)", p.Name, t.Binary, err))
				continue
			}
			opts = append(opts, &trace.CompileOptions{Executable: t.Binary})
		}
		if len(opts) == 0 {
			opts = append(opts, nil)
		}
		for _, o := range opts {
			_, err := trace.Compile(p.Name, p.Source, o)
			if msg := textErrors(err); msg != "" {
				return &ConfigError{Offset: -1, Field: fmt.Sprintf("programs[%d].source", i),
					Msg: fmt.Sprintf("program %s does not compile: %s", p.Name, msg)}
			}
		}
	}
	return nil
}

// textErrors returns the errors of err that are about the program's text
// (a CompileError without a cause), joined by "; ", or "".
func textErrors(err error) string {
	var list trace.CompileErrors
	if !errors.As(err, &list) {
		return ""
	}
	var msgs []string
	for _, e := range list {
		if e.Err == nil {
			msgs = append(msgs, e.Error())
		}
	}
	return strings.Join(msgs, "; ")
}
