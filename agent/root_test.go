package agent_test

import (
	"errors"
	"fmt"
	"sync"
	"syscall"
	"testing"

	"github.com/usdtkit/usdtkit/agent"
	"github.com/usdtkit/usdtkit/internal/testutil"
)

const quietConfig = `{%s"programs": [{"name": "q", "source": "usdt::x:y { @ = count(); }", "targets": [{"comm": "no-such-comm-7"}]}]}`

func quiet(t *testing.T, listen string) *agent.Config {
	t.Helper()
	l := ""
	if listen != "" {
		l = `"listen": "` + listen + `", `
	}
	cfg, err := agent.ParseConfig([]byte(fmt.Sprintf(quietConfig, l)))
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// TestNewNotRoot: New refuses to run without root, rather than serve
// empty metrics.
func TestNewNotRoot(t *testing.T) {
	testutil.RequireRoot(t)
	// The effective UID only, for the call: the saved UID stays 0, so
	// it comes back.
	if err := syscall.Setresuid(-1, 65534, -1); err != nil {
		t.Fatal(err)
	}
	_, err := agent.New(quiet(t, ""), nil)
	if err := syscall.Setresuid(-1, 0, -1); err != nil {
		t.Fatal(err)
	}
	if !errors.Is(err, agent.ErrNotRoot) {
		t.Errorf("New as UID 65534: have %v, want ErrNotRoot", err)
	}
}

// TestReloadListen: a Reload that changes listen warns that it is
// ignored; one that keeps it does not.
func TestReloadListen(t *testing.T) {
	testutil.RequireRoot(t)
	var mu sync.Mutex
	var warns []error
	a, err := agent.New(quiet(t, "127.0.0.1:9435"), &agent.Options{Warn: func(err error) {
		mu.Lock()
		defer mu.Unlock()
		warns = append(warns, err)
	}})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, listen string
		warns        int
	}{
		{"same listen", "127.0.0.1:9435", 0},
		{"new listen", "0.0.0.0:9435", 1},
		{"no listen", "", 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mu.Lock()
			warns = nil
			mu.Unlock()
			if err := a.Reload(quiet(t, tt.listen)); err != nil {
				t.Fatal(err)
			}
			mu.Lock()
			defer mu.Unlock()
			if len(warns) != tt.warns {
				t.Errorf("have warnings %v, want %d", warns, tt.warns)
			}
		})
	}
}
