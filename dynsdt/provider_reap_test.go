package dynsdt_test

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/usdtkit/usdtkit/dynsdt"
)

// helperEnv makes the test binary run TestHelperLoad as a child process
// that loads loadSpec into the directory the variable names.
const helperEnv = dynsdt.HelperDirEnv

// TestHelperLoad is the child process of TestReap: it loads the provider,
// prints the object's path and waits for its stdin to close; it exits
// without Close.
func TestHelperLoad(t *testing.T) {
	dir := os.Getenv(helperEnv)
	if dir == "" {
		t.Skip("child process of TestReap")
	}
	p, err := dynsdt.Load(&loadSpec, &dynsdt.Options{Dir: dir})
	if err != nil {
		fmt.Println("error", err)
		os.Exit(1)
	}
	fmt.Println(p.Path())
	io.Copy(io.Discard, os.Stdin)
	os.Exit(0)
}

// startHelper runs TestHelperLoad with dir and returns it with the path of
// its object file.
func startHelper(t *testing.T, dir string) (*exec.Cmd, io.Closer, string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperLoad$")
	cmd.Env = append(os.Environ(), helperEnv+"="+dir)
	stdin, path := dynsdt.StartLoadHelper(t, cmd, dir)
	return cmd, stdin, path
}

// TestReap checks that Load removes the files of processes that ended
// without Close — killed with SIGKILL, or exited — and keeps those of live
// processes.
func TestReap(t *testing.T) {
	hostSupported(t)
	dir := t.TempDir()
	live, _, livePath := startHelper(t, dir)
	killed, _, killedPath := startHelper(t, dir)
	exited, exitedStdin, exitedPath := startHelper(t, dir)

	if err := killed.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	killed.Wait()
	exitedStdin.Close()
	if err := exited.Wait(); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{livePath, killedPath, exitedPath} {
		if _, err := os.Lstat(path); err != nil {
			t.Fatalf("before the next Load: %v", err)
		}
	}

	p, err := dynsdt.Load(&loadSpec, &dynsdt.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	for _, tt := range []struct {
		name, path string
		kept       bool
	}{
		{"live", livePath, true},
		{"killed", killedPath, false},
		{"exited", exitedPath, false},
		{"own", p.Path(), true},
	} {
		_, err := os.Lstat(tt.path)
		if have := err == nil; have != tt.kept {
			t.Errorf("%s process's file %s: kept %v, want %v", tt.name, filepath.Base(tt.path), have, tt.kept)
		}
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			t.Error(err)
		}
	}
	live.Process.Kill()
}
