package agent_test

import (
	"errors"
	"fmt"
	"io/fs"
	"os/exec"
	"sync"
	"testing"
	"time"

	"github.com/usdtkit/usdtkit/agent"
	"github.com/usdtkit/usdtkit/internal/testutil"
	"github.com/usdtkit/usdtkit/trace"
)

// warnings collects an agent's warnings.
type warnings struct {
	mu   sync.Mutex
	errs []error
}

func (w *warnings) add(err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.errs = append(w.errs, err)
}

// count returns how many warnings match.
func (w *warnings) count(match func(error) bool) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	for _, err := range w.errs {
		if match(err) {
			n++
		}
	}
	return n
}

// TestAgentCompileCheck: New compiles each program against its binary
// targets that exist: an error in the program's text stops it, naming
// the program's source; a binary that does not exist is one warning; a
// probe that is not in the binary (it may be in a library) is not an
// error.
func TestAgentCompileCheck(t *testing.T) {
	target := buildTarget(t)
	tests := []struct {
		name    string
		source  string
		target  string
		wantErr bool
		// warns is how many warnings wrap fs.ErrNotExist.
		warns int
	}{
		{"misspelt function", "usdt::agentt:hit { @ = cnt(); }", `{"comm": "agtarget"}`, true, 0},
		{"misspelt function with a binary", "usdt::agentt:hit { @ = cnt(); }", fmt.Sprintf(`{"binary": %q}`, target), true, 0},
		{"argument the probe has not", "usdt::agentt:hit { @ = sum(arg2); }", fmt.Sprintf(`{"binary": %q}`, target), true, 0},
		{"binary missing", "usdt::agentt:hit { @ = count(); }", `{"binary": "/nonexistent/agtarget"}`, false, 1},
		{"probe in no binary", "usdt::agentt:other { @ = count(); }", fmt.Sprintf(`{"binary": %q}`, target), false, 0},
		{"compiles", "usdt::agentt:hit { @ = sum(arg0); }", fmt.Sprintf(`{"binary": %q}`, target), false, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := agent.ParseConfig(fmt.Appendf(nil, `{"programs": [
				{"name": "chk", "source": %q, "targets": [%s]}]}`, tc.source, tc.target))
			if err != nil {
				t.Fatal(err)
			}
			var w warnings
			_, err = agent.New(cfg, &agent.Options{Warn: w.add})
			var ce *agent.ConfigError
			if have := errors.As(err, &ce); have != tc.wantErr {
				t.Fatalf("have error %v, want a ConfigError: %v", err, tc.wantErr)
			}
			if tc.wantErr && ce.Field != "programs[0].source" {
				t.Errorf("have field %q, want programs[0].source", ce.Field)
			}
			if have := w.count(func(err error) bool { return errors.Is(err, fs.ErrNotExist) }); have != tc.warns {
				t.Errorf("have %d warnings of a missing file, want %d (all: %v)", have, tc.warns, w.errs)
			}
			if have := w.count(func(error) bool { return true }); have != tc.warns {
				t.Errorf("have %d warnings, want %d: %v", have, tc.warns, w.errs)
			}
		})
	}
}

// TestAgentReloadError: a Reload with a program that does not compile
// returns the error, and the running program goes on counting into the
// same series.
func TestAgentReloadError(t *testing.T) {
	testutil.RequireBPF(t)
	burst := buildC(t, "agburst")
	a := newAgent(t, fmt.Appendf(nil, `{"scan_interval": "1h", "programs": [
		{"name": "rl", "source": "usdt::agburst:hit { @hits = count(); }", "targets": [{"binary": %q}]}]}`, burst))
	startAgent(t, a)
	waitFor(t, "file-wide attach", 10*time.Second, func() (bool, string) {
		v := series(t, a)[`usdtkit_agent_attached_sites{program="rl"}`]
		return v == 1, fmt.Sprint(v, " sites")
	})
	run := func() {
		t.Helper()
		if b, err := exec.Command(burst, "5").CombinedOutput(); err != nil {
			t.Fatalf("%v\n%s", err, b)
		}
	}
	run()
	bad, err := agent.ParseConfig(fmt.Appendf(nil, `{"programs": [
		{"name": "rl2", "source": "usdt::agburst:hit { @hits = cnt(); }", "targets": [{"binary": %q}]}]}`, burst))
	if err != nil {
		t.Fatal(err)
	}
	var ce *agent.ConfigError
	if err := a.Reload(bad); !errors.As(err, &ce) {
		t.Fatalf("reload: have %v, want a ConfigError", err)
	}
	run()
	s := series(t, a)
	want := map[string]float64{`usdtkit_rl_hits_total{}`: 10, `usdtkit_agent_attached_sites{program="rl"}`: 1}
	if ok, diff := check(s, want); !ok {
		t.Fatal(diff)
	}
	if _, ok := s[`usdtkit_agent_processes{program="rl2"}`]; ok {
		t.Error("the refused config's program is exported")
	}
}

// TestAgentAttachErrorsOnce: a program that compiles at config time (no
// binary to compile against) but not against the processes its comm
// target selects (they have no arg2) counts an attach error per process
// and warns once.
func TestAgentAttachErrorsOnce(t *testing.T) {
	testutil.RequireBPF(t)
	// Other tests on the machine may run agtarget: a comm of this
	// run's own.
	target, comm := uniqueComm(t, buildTarget(t))
	cfg, err := agent.ParseConfig(fmt.Appendf(nil, `{"scan_interval": "50ms", "programs": [
		{"name": "ae", "source": "usdt::agentt:hit { @ = sum(arg2); }", "targets": [{"comm": %q}]}]}`, comm))
	if err != nil {
		t.Fatal(err)
	}
	var w warnings
	a, err := agent.New(cfg, &agent.Options{Warn: w.add})
	if err != nil {
		t.Fatal(err)
	}
	startAgent(t, a)
	// The targets wait for a semaphore nobody raises: they live until
	// the test ends.
	startChild(t, target, "1", "wait")
	startChild(t, target, "1", "wait")
	waitFor(t, "attach errors", 10*time.Second, func() (bool, string) {
		v := series(t, a)[`usdtkit_agent_attach_errors_total{}`]
		return v == 2, fmt.Sprint(v, " attach errors")
	})
	// Further scans neither count nor warn again.
	scans := series(t, a)[`usdtkit_agent_scans_total{}`]
	waitFor(t, "more scans", 10*time.Second, func() (bool, string) {
		v := series(t, a)[`usdtkit_agent_scans_total{}`]
		return v >= scans+3, fmt.Sprint(v, " scans")
	})
	if v := series(t, a)[`usdtkit_agent_attach_errors_total{}`]; v != 2 {
		t.Errorf("have %v attach errors, want 2", v)
	}
	var list trace.CompileErrors
	if have := w.count(func(err error) bool { return errors.As(err, &list) }); have != 1 {
		t.Errorf("have %d warnings of the compile error, want 1: %v", have, w.errs)
	}
}
