package main

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/usdtkit/usdtkit/dynsdt"
)

// TestStartReaps checks that usdtkit removes, when it starts, the object
// files that run-time providers of ended processes left in this user's
// directory, and keeps those of a live provider.
func TestStartReaps(t *testing.T) {
	if runtime.GOARCH != "amd64" && runtime.GOARCH != "arm64" {
		t.Skip("dynsdt.Load supports amd64 and arm64")
	}
	t.Setenv("XDG_RUNTIME_DIR", t.TempDir())
	p, err := dynsdt.Load(&dynsdt.ProviderSpec{Name: "reaptest", Probes: []dynsdt.ProbeSpec{{Name: "p"}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	live := p.Path()
	// A file as a killed process leaves it: named as Load names them,
	// 0600, and no process holding its lock.
	stale := filepath.Join(filepath.Dir(live), "reaptest-1-0123456789abcdef.so")
	if err := os.WriteFile(stale, []byte("\x7fELF"), 0o600); err != nil {
		t.Fatal(err)
	}

	if code := run(context.Background(), []string{"list", "/bin/true"}, io.Discard, io.Discard); code != 0 {
		t.Fatalf("usdtkit list /bin/true: exit status %d", code)
	}
	if _, err := os.Lstat(stale); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("stale object file after start: have %v, want ErrNotExist", err)
	}
	if _, err := os.Lstat(live); err != nil {
		t.Errorf("live provider's object file after start: %v", err)
	}
}
