package dynsdt_test

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"syscall"
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

// leaveFiles starts helpers loading into dir and ends all but one without
// Close: killed with SIGKILL, terminated with SIGTERM, exited. It returns
// the live helper and the object paths of the live, killed, terminated and
// exited ones, all still on disk.
func leaveFiles(t *testing.T, dir string) (live *exec.Cmd, livePath, killedPath, termPath, exitedPath string) {
	t.Helper()
	live, _, livePath = startHelper(t, dir)
	killed, _, killedPath := startHelper(t, dir)
	term, _, termPath := startHelper(t, dir)
	exited, exitedStdin, exitedPath := startHelper(t, dir)

	if err := killed.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	killed.Wait()
	if err := term.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := term.Wait(); err == nil {
		t.Fatal("helper ended by SIGTERM exited with status 0")
	}
	exitedStdin.Close()
	if err := exited.Wait(); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{livePath, killedPath, termPath, exitedPath} {
		if _, err := os.Lstat(path); err != nil {
			t.Fatalf("before the next Load: %v", err)
		}
	}
	return live, livePath, killedPath, termPath, exitedPath
}

// TestReap checks that Load removes the files of processes that ended
// without Close — killed with SIGKILL or SIGTERM, or exited — and keeps
// those of live processes.
func TestReap(t *testing.T) {
	hostSupported(t)
	dir := t.TempDir()
	live, livePath, killedPath, termPath, exitedPath := leaveFiles(t, dir)

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
		{"terminated", termPath, false},
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

// TestReapExported checks Reap, which usdtkit calls at start: it removes
// the files of ended processes and nothing else — not a live process's
// file, a symbolic link or a file with another name — and reports what it
// removed; it neither fails on nor creates a missing default directory.
func TestReapExported(t *testing.T) {
	hostSupported(t)
	dir := t.TempDir()
	live, livePath, killedPath, termPath, exitedPath := leaveFiles(t, dir)
	// A link with an object file's name, to a stale object file
	// elsewhere: neither may go.
	target := filepath.Join(t.TempDir(), filepath.Base(killedPath))
	if err := os.WriteFile(target, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "ktest-1-0123456789abcdef.so")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(dir, "notes.txt")
	if err := os.WriteFile(other, nil, 0o600); err != nil {
		t.Fatal(err)
	}

	removed, err := dynsdt.Reap(dir)
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(removed)
	want := []string{filepath.Base(killedPath), filepath.Base(termPath), filepath.Base(exitedPath)}
	slices.Sort(want)
	if !slices.Equal(removed, want) {
		t.Errorf("Reap removed %v, want %v", removed, want)
	}
	for _, tt := range []struct {
		name, path string
		kept       bool
	}{
		{"live", livePath, true},
		{"killed", killedPath, false},
		{"terminated", termPath, false},
		{"exited", exitedPath, false},
		{"link", link, true},
		{"link target", target, true},
		{"other name", other, true},
	} {
		_, err := os.Lstat(tt.path)
		if have := err == nil; have != tt.kept {
			t.Errorf("%s %s: kept %v, want %v", tt.name, filepath.Base(tt.path), have, tt.kept)
		}
	}
	live.Process.Kill()

	t.Run("missing default", func(t *testing.T) {
		runtime := t.TempDir()
		t.Setenv("XDG_RUNTIME_DIR", runtime)
		removed, err := dynsdt.Reap("")
		if err != nil || removed != nil {
			t.Errorf("Reap(\"\") without the directory: have %v, %v, want nil, nil", removed, err)
		}
		if _, err := os.Lstat(filepath.Join(runtime, "usdtkit")); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("Reap created the default directory: %v", err)
		}
	})
	t.Run("unsafe dir", func(t *testing.T) {
		d := t.TempDir()
		if err := os.Chmod(d, 0o777); err != nil {
			t.Fatal(err)
		}
		if _, err := dynsdt.Reap(d); !errors.Is(err, dynsdt.ErrUnsafeDir) {
			t.Errorf("Reap of a directory writable by others: have %v, want ErrUnsafeDir", err)
		}
	})
}
