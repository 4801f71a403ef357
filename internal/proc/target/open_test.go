package target

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/usdtkit/usdtkit/internal/proc/procfs"
	"github.com/usdtkit/usdtkit/internal/testutil"
	"golang.org/x/sys/unix"
)

// TestMain fails the package when the tests leak file descriptors.
func TestMain(m *testing.M) { testutil.MainCheckingFDs(m) }

func idOf(t *testing.T, f *os.File) procfs.FileID {
	t.Helper()
	id, err := procfs.IDOf(f)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// TestReopenFile opens a named file as a listing does, then reopens it
// as an attach does: the same file is accepted, a file renamed over it
// refused.
func TestReopenFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a.so")
	if err := os.WriteFile(path, []byte("\x7fELF one"), 0o600); err != nil {
		t.Fatal(err)
	}
	objs, err := Resolve([]string{path}, 0)
	if err != nil || len(objs) != 1 {
		t.Fatalf("Resolve: %v, %d objects", err, len(objs))
	}
	f, err := objs[0].Open()
	if err != nil {
		t.Fatal(err)
	}
	id := idOf(t, f)
	f.Close()

	g, err := Reopen(path, 0, id)
	if err != nil {
		t.Fatalf("Reopen of the same file: %v", err)
	}
	if have := idOf(t, g); have != id {
		t.Errorf("Reopen: have %+v, want %+v", have, id)
	}
	g.Close()

	next := path + ".new"
	if err := os.WriteFile(next, []byte("\x7fELF two"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(next, path); err != nil {
		t.Fatal(err)
	}
	if g, err := Reopen(path, 0, id); !errors.Is(err, procfs.ErrChanged) {
		if g != nil {
			g.Close()
		}
		t.Errorf("Reopen of a replaced file: have %v, want ErrChanged", err)
	}
}

// TestReopenProcess lists this process's mapping of a file, then reopens
// it: the same file, even after its path names another one (through
// map_files) or under another path (by identity), and an error for an
// identity the process does not map.
func TestReopenProcess(t *testing.T) {
	testutil.RequireRoot(t)
	img, err := os.ReadFile("/bin/true")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "obj.so")
	if err := os.WriteFile(path, img, 0o700); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	m, err := unix.Mmap(int(f.Fd()), 0, len(img), unix.PROT_READ|unix.PROT_EXEC, unix.MAP_PRIVATE)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Munmap(m) })
	want := testutil.StatID(t, path)

	objs, err := Resolve([]string{path}, os.Getpid())
	if err != nil || len(objs) != 1 {
		t.Fatalf("Resolve: %v, %d objects", err, len(objs))
	}
	o, err := objs[0].Open()
	if err != nil {
		t.Fatal(err)
	}
	id := idOf(t, o)
	o.Close()
	if (testutil.FileID{Dev: id.Dev, Inode: id.Inode}) != want {
		t.Fatalf("Open: have %+v, want %+v", id, want)
	}

	// Another file mounted over the path: the path now names it.
	other := filepath.Join(t.TempDir(), "other.so")
	if err := os.WriteFile(other, []byte("\x7fELF other"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount(other, path, "", unix.MS_BIND, ""); err != nil {
		t.Fatalf("bind mount: %v", err)
	}
	t.Cleanup(func() { unix.Unmount(path, 0) })

	g, err := Reopen(path, os.Getpid(), id)
	if err != nil {
		t.Fatalf("Reopen: %v", err)
	}
	if have := idOf(t, g); have != id {
		t.Errorf("Reopen: have %+v, want %+v", have, id)
	}
	g.Close()

	if g, err := Reopen(path, os.Getpid(), procfs.FileID{Dev: id.Dev, Inode: id.Inode + 1}); !errors.Is(err, procfs.ErrChanged) {
		if g != nil {
			g.Close()
		}
		t.Errorf("Reopen for another identity: have %v, want ErrChanged", err)
	}
	// Renamed since listed: found by the identity maps shows.
	g, err = Reopen("/renamed/obj.so", os.Getpid(), id)
	if err != nil {
		t.Fatalf("Reopen under another path: %v", err)
	}
	if have := idOf(t, g); have != id {
		t.Errorf("Reopen under another path: have %+v, want %+v", have, id)
	}
	g.Close()
	if g, err := Reopen("/no/such/object", os.Getpid(), procfs.FileID{Dev: id.Dev, Inode: id.Inode + 1}); !errors.Is(err, procfs.ErrChanged) {
		if g != nil {
			g.Close()
		}
		t.Errorf("Reopen of a file the process does not map: have %v, want ErrChanged", err)
	}
}

// TestResolveFIFO names a FIFO: Resolve accepts the name, Open refuses it
// without blocking.
func TestResolveFIFO(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	objs, err := Resolve([]string{fifo}, 0)
	if err != nil || len(objs) != 1 {
		t.Fatalf("Resolve: %v, %d objects", err, len(objs))
	}
	if f, err := objs[0].Open(); !errors.Is(err, procfs.ErrNotRegular) {
		if f != nil {
			f.Close()
		}
		t.Errorf("Open: have %v, want ErrNotRegular", err)
	}
}
