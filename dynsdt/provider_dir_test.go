package dynsdt_test

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/usdtkit/usdtkit/dynsdt"
	"github.com/usdtkit/usdtkit/internal/testutil"
)

// TestLoadHostileDefaultDir pre-creates the default directory
// (usdtkit-<euid> in $TMPDIR) as another user could in a shared /tmp, and
// checks that Load still works, with a memfd, and writes nothing into what
// was planted. Before, every Load failed with ErrUnsafeDir.
func TestLoadHostileDefaultDir(t *testing.T) {
	hostSupported(t)
	tests := []struct {
		name    string
		plant   func(t *testing.T, path, target string)
		private bool // the directory is fine: Load writes a file in it
	}{
		{"absent", func(t *testing.T, path, target string) {}, true},
		{"private", func(t *testing.T, path, target string) { mkdir(t, path, 0o700) }, true},
		{"mode 0777", func(t *testing.T, path, target string) { mkdir(t, path, 0o777) }, false},
		{"mode 0755", func(t *testing.T, path, target string) { mkdir(t, path, 0o755) }, false},
		{"symlink", func(t *testing.T, path, target string) {
			if err := os.Symlink(target, path); err != nil {
				t.Fatal(err)
			}
		}, false},
		{"regular file", func(t *testing.T, path, target string) {
			if err := os.WriteFile(path, nil, 0o600); err != nil {
				t.Fatal(err)
			}
		}, false},
		{"other owner", func(t *testing.T, path, target string) {
			testutil.RequireRoot(t)
			mkdir(t, path, 0o700)
			if err := os.Chown(path, 65534, 65534); err != nil {
				t.Fatal(err)
			}
		}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tmp := t.TempDir()
			t.Setenv("TMPDIR", tmp)
			t.Setenv("XDG_RUNTIME_DIR", "")
			dir := filepath.Join(tmp, "usdtkit-"+strconv.Itoa(os.Geteuid()))
			target := filepath.Join(tmp, "target")
			mkdir(t, target, 0o700)
			tt.plant(t, dir, target)

			p, err := dynsdt.Load(&loadSpec, nil)
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			path := p.Path()
			if tt.private {
				if filepath.Dir(path) != dir {
					t.Errorf("path %s, want a file in %s", path, dir)
				}
			} else if !strings.HasPrefix(path, "/memfd:") {
				t.Errorf("path %s, want a memfd", path)
			}
			if len(objectMappings(t, path)) == 0 {
				t.Errorf("%s is not mapped", path)
			}
			p.Probe("ints").Fire(1, 2, 3, 4, 5, 6, 7, 8, 1)
			if err := p.Close(); err != nil {
				t.Error(err)
			}
			for _, d := range []string{dir, target} {
				if fi, err := os.Lstat(d); err == nil && fi.IsDir() {
					if entries, err := os.ReadDir(d); err != nil || len(entries) != 0 {
						t.Errorf("%s: left %v (%v)", d, entries, err)
					}
				}
			}
		})
	}
}

func mkdir(t *testing.T, path string, mode os.FileMode) {
	t.Helper()
	if err := os.Mkdir(path, mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, mode); err != nil {
		t.Fatal(err)
	}
}

// TestCloseThroughDir moves the directory away after Load and puts a
// decoy under the object file's old path: Close must remove its own file,
// through the directory it holds, and not whatever its path now names.
func TestCloseThroughDir(t *testing.T) {
	hostSupported(t)
	tmp := t.TempDir()
	dir, moved := filepath.Join(tmp, "dir"), filepath.Join(tmp, "moved")
	mkdir(t, dir, 0o700)
	p, err := dynsdt.Load(&loadSpec, &dynsdt.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	name := filepath.Base(p.Path())
	if err := os.Rename(dir, moved); err != nil {
		t.Fatal(err)
	}
	mkdir(t, dir, 0o700)
	decoy := filepath.Join(dir, name)
	if err := os.WriteFile(decoy, []byte("decoy"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := p.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	if _, err := os.Lstat(decoy); err != nil {
		t.Errorf("decoy at the old path: %v, want it kept", err)
	}
	if _, err := os.Lstat(filepath.Join(moved, name)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("object file in the moved directory: %v, want it removed", err)
	}
}

// TestReapPIDNamespace runs load helpers in PID namespaces of their own,
// where each is PID 1, as in a container sharing the directory: the file
// of one that was killed is reaped (PID 1 always exists here, so a reaper
// that asks whether the PID lives never removes it), the live one's stays.
func TestReapPIDNamespace(t *testing.T) {
	hostSupported(t)
	testutil.RequireRoot(t) // CLONE_NEWPID needs CAP_SYS_ADMIN
	dir := t.TempDir()
	start := func() (*exec.Cmd, string) {
		cmd := exec.Command(os.Args[0], "-test.run=^TestHelperLoad$")
		cmd.Env = append(os.Environ(), helperEnv+"="+dir)
		cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWPID}
		_, path := dynsdt.StartLoadHelper(t, cmd, dir)
		return cmd, path
	}
	live, livePath := start()
	killed, killedPath := start()
	for _, path := range []string{livePath, killedPath} {
		if !strings.HasPrefix(filepath.Base(path), "ktest-1-") {
			t.Fatalf("%s: want the name of PID 1 in its namespace", path)
		}
	}
	if err := killed.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	killed.Wait()

	p, err := dynsdt.Load(&loadSpec, &dynsdt.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	if _, err := os.Lstat(killedPath); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("killed helper's file %s: %v, want it reaped", killedPath, err)
	}
	if _, err := os.Lstat(livePath); err != nil {
		t.Errorf("live helper's file %s: %v, want it kept", livePath, err)
	}
	live.Process.Kill()
}
