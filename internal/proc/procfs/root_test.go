package procfs

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// TestOpenInRoot resolves names inside a directory taken as a root:
// absolute symlinks and ".." stay inside it, FIFOs are refused.
func TestOpenInRoot(t *testing.T) {
	dir := t.TempDir()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Join(dir, "etc"), 0o755))
	must(os.WriteFile(filepath.Join(dir, "etc", "passwd"), []byte("inside"), 0o644))
	must(os.Symlink("/etc/passwd", filepath.Join(dir, "abs")))
	must(os.Symlink("../../../../../../etc/passwd", filepath.Join(dir, "etc", "up")))
	must(unix.Mkfifo(filepath.Join(dir, "fifo"), 0o644))

	fd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	must(err)
	root := os.NewFile(uintptr(fd), dir)
	defer root.Close()

	for _, name := range []string{"/etc/passwd", "abs", "etc/up", "/../etc/passwd"} {
		f, err := OpenInRoot(root, name)
		if err != nil {
			t.Errorf("OpenInRoot(%q): %v", name, err)
			continue
		}
		b := make([]byte, 16)
		n, _ := f.Read(b)
		f.Close()
		if string(b[:n]) != "inside" {
			t.Errorf("OpenInRoot(%q) read %q, want the file inside the root", name, b[:n])
		}
	}
	if f, err := OpenInRoot(root, "fifo"); !errors.Is(err, ErrNotRegular) {
		if f != nil {
			f.Close()
		}
		t.Errorf("OpenInRoot(fifo): err = %v, want ErrNotRegular", err)
	}
	if _, err := OpenInRoot(root, "missing"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("OpenInRoot(missing): err = %v, want ErrNotExist", err)
	}
}

func TestOpenRootNoProcess(t *testing.T) {
	if _, err := OpenRoot(1 << 30); !errors.Is(err, ErrNoProcess) {
		t.Errorf("OpenRoot(1<<30): err = %v, want ErrNoProcess", err)
	}
}
