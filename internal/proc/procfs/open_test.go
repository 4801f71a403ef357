package procfs

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/usdtkit/usdtkit/internal/testutil"
	"golang.org/x/sys/unix"
)

// guard runs fn and fails the test if it has not returned within a minute:
// an open that blocks (a FIFO without a writer) never returns.
func guard[T any](t *testing.T, what string, fn func() T) T {
	t.Helper()
	done := make(chan T, 1)
	go func() { done <- fn() }()
	select {
	case v := <-done:
		return v
	case <-time.After(time.Minute):
		t.Fatalf("%s blocked", what)
		panic("unreachable")
	}
}

func mkfifo(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "fifo")
	if err := unix.Mkfifo(path, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestOpenFile(t *testing.T) {
	img := elfImage(t)
	regular := writeTemp(t, img)
	tests := []struct {
		name    string
		path    string
		regular bool
	}{
		{"regular", regular, true},
		{"symlink to regular", func() string {
			l := filepath.Join(t.TempDir(), "link")
			if err := os.Symlink(regular, l); err != nil {
				t.Fatal(err)
			}
			return l
		}(), true},
		{"fifo", mkfifo(t), false},
		{"directory", t.TempDir(), false},
		{"character device", "/dev/null", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			type result struct {
				f   *os.File
				err error
			}
			r := guard(t, "OpenFile("+tt.path+")", func() result {
				f, err := OpenFile(tt.path)
				return result{f, err}
			})
			if !tt.regular {
				if !errors.Is(r.err, ErrNotRegular) {
					t.Errorf("have error %v, want ErrNotRegular", r.err)
				}
				if r.f != nil {
					r.f.Close()
					t.Error("have a file with the error")
				}
				return
			}
			if r.err != nil {
				t.Fatal(r.err)
			}
			defer r.f.Close()
			b := make([]byte, 4)
			if _, err := r.f.ReadAt(b, 0); err != nil || string(b) != "\x7fELF" {
				t.Errorf("have %q, %v, want \\x7fELF", b, err)
			}
			// The fd path names the same file.
			var a, c unix.Stat_t
			if err := unix.Stat(FDPath(r.f), &a); err != nil {
				t.Fatal(err)
			}
			if err := unix.Stat(regular, &c); err != nil {
				t.Fatal(err)
			}
			if a.Dev != c.Dev || a.Ino != c.Ino {
				t.Errorf("%s: have inode %d, want %d", FDPath(r.f), a.Ino, c.Ino)
			}
			id, err := IDOf(r.f)
			if err != nil || id != (FileID{c.Dev, c.Ino}) {
				t.Errorf("IDOf: have %v, %v, want %v", id, err, FileID{c.Dev, c.Ino})
			}
		})
	}
}

// TestOpenPathReplaced replaces the path of a mapped file with things that
// are not it. Open must give the mapped file through map_files, or refuse,
// and never block.
func TestOpenPathReplaced(t *testing.T) {
	testutil.RequireRoot(t)
	tests := []struct {
		name string
		with func(t *testing.T) string // what to bind-mount over the path
	}{
		{"fifo", mkfifo},
		{"character device", func(*testing.T) string { return "/dev/zero" }},
		{"other file", func(t *testing.T) string { return writeTemp(t, []byte("\x7fELF other")) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			img := elfImage(t)
			path := writeTemp(t, img)
			mapPath(t, path, len(img), unix.PROT_READ|unix.PROT_EXEC)
			if err := unix.Mount(tt.with(t), path, "", unix.MS_BIND, ""); err != nil {
				t.Fatalf("bind mount: %v", err)
			}
			t.Cleanup(func() {
				if err := unix.Unmount(path, 0); err != nil {
					t.Error(err)
				}
			})
			objs, err := Objects(os.Getpid())
			if err != nil {
				t.Fatal(err)
			}
			o := objectByPath(t, objs, path)
			type result struct {
				f   *os.File
				err error
			}
			r := guard(t, "Open", func() result {
				f, err := Open(o)
				return result{f, err}
			})
			if r.err != nil {
				t.Fatal(r.err)
			}
			name := r.f.Name()
			r.f.Close()
			if !strings.HasPrefix(name, mapFilesPrefix(os.Getpid())) {
				t.Errorf("have opened %s, want map_files", name)
			}
			checkOpen(t, o, img)
		})
	}
}

// claim returns an object of this process at path with path's device and
// inode, as if a mapping (that does not exist) mapped it.
func claim(t *testing.T, path string) Object {
	t.Helper()
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		t.Fatal(err)
	}
	return Object{PID: os.Getpid(), Path: path, Major: unix.Major(st.Dev), Minor: unix.Minor(st.Dev),
		Inode: st.Ino, Mappings: []Mapping{{Start: 0x1000, End: 0x2000}}}
}

func TestOpenRefused(t *testing.T) {
	testutil.RequireRoot(t)
	img := elfImage(t)
	path := writeTemp(t, img)
	mapPath(t, path, len(img), unix.PROT_READ|unix.PROT_EXEC)
	objs, err := Objects(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	mapped := objectByPath(t, objs, path)

	fifo := mkfifo(t)
	exited := exec.Command("true")
	if err := exited.Run(); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name   string
		obj    func() Object
		target error
	}{
		{
			// Neither the path nor the mapping is the file maps names.
			name: "inode mismatch",
			obj: func() Object {
				o := mapped
				o.Inode++
				return o
			},
			target: ErrChanged,
		},
		{
			// A FIFO whose device and inode are claimed by a mapping
			// that does not exist: refused by type, not opened.
			name:   "fifo",
			obj:    func() Object { return claim(t, fifo) },
			target: ErrNotRegular,
		},
		{
			name:   "directory",
			obj:    func() Object { return claim(t, t.TempDir()) },
			target: ErrNotRegular,
		},
		{
			name:   "character device",
			obj:    func() Object { return claim(t, "/dev/null") },
			target: ErrNotRegular,
		},
		{
			name: "process gone",
			obj: func() Object {
				o := mapped
				o.PID = exited.Process.Pid
				return o
			},
			target: ErrNoProcess,
		},
		{
			name: "deleted, process gone",
			obj: func() Object {
				o := mapped
				o.PID = exited.Process.Pid
				o.Deleted = true
				return o
			},
			target: ErrNoProcess,
		},
		{
			name:   "no mapping",
			obj:    func() Object { return Object{PID: os.Getpid(), Path: path} },
			target: nil,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := guard(t, "Open", func() error {
				f, err := Open(tt.obj())
				if f != nil {
					f.Close()
					if err == nil {
						return errors.New("opened " + f.Name())
					}
				}
				return err
			})
			if err == nil {
				t.Fatal("have no error")
			}
			if tt.target != nil && !errors.Is(err, tt.target) {
				t.Errorf("have error %v, want %v", err, tt.target)
			}
		})
	}
}

// TestOpenUnprivilegedDeleted checks that without CAP_SYS_ADMIN a deleted
// mapping gives an error wrapping os.ErrPermission (callers skip that
// object), while the process's other objects open. It runs itself as
// nobody (uid 65534).
func TestOpenUnprivilegedDeleted(t *testing.T) {
	if os.Getenv("USDTKIT_PROCFS_CHILD") == "1" {
		unprivilegedChild(t)
		return
	}
	testutil.RequireRoot(t)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "usdtkit-procfs-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(exe)
	if err != nil {
		t.Fatal(err)
	}
	copyExe := filepath.Join(dir, "procfs.test")
	if err := os.WriteFile(copyExe, b, 0o755); err != nil {
		t.Fatal(err)
	}
	tmp := filepath.Join(dir, "tmp")
	if err := os.Mkdir(tmp, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(tmp, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(copyExe, "-test.run=^TestOpenUnprivilegedDeleted$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), "USDTKIT_PROCFS_CHILD=1", "TMPDIR="+tmp)
	cmd.Dir = dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child as uid 65534: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "--- PASS: TestOpenUnprivilegedDeleted") {
		t.Fatalf("child did not run the test:\n%s", out)
	}
}

func unprivilegedChild(t *testing.T) {
	if os.Getuid() != 65534 {
		t.Fatalf("child runs as uid %d, want 65534", os.Getuid())
	}
	img := elfImage(t)
	path := writeTemp(t, img)
	mapPath(t, path, len(img), unix.PROT_READ|unix.PROT_EXEC)
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	objs, err := Objects(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	o := objectByPath(t, objs, path)
	f, err := Open(o)
	if err == nil {
		f.Close()
		t.Fatalf("opened %s of a deleted mapping without CAP_SYS_ADMIN", f.Name())
	}
	if !errors.Is(err, os.ErrPermission) {
		t.Errorf("have error %v, want os.ErrPermission", err)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	checkOpen(t, findObject(t, objs, exe), []byte("\x7fELF"))
	t.Log("uid", strconv.Itoa(os.Getuid()), "deleted mapping:", err)
}
