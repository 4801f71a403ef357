package procfs

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/usdtkit/usdtkit/internal/testutil"
)

// findObject returns the object of objs whose file is the one at path.
func findObject(t *testing.T, objs []Object, path string) Object {
	t.Helper()
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		if o.Inode == st.Ino && o.Major == unix.Major(st.Dev) && o.Minor == unix.Minor(st.Dev) {
			return o
		}
	}
	t.Fatalf("no object for %s (inode %d) among %d objects", path, st.Ino, len(objs))
	return Object{}
}

// checkOpen opens o and compares its first bytes with want.
func checkOpen(t *testing.T, o Object, want []byte) {
	t.Helper()
	f, err := Open(o)
	if err != nil {
		t.Fatalf("open %s: %v", o.Path, err)
	}
	defer f.Close()
	have := make([]byte, len(want))
	if _, err := io.ReadFull(f, have); err != nil {
		t.Fatalf("read %s: %v", f.Name(), err)
	}
	if !bytes.Equal(have, want) {
		t.Errorf("%s: have content %q..., want %q...", f.Name(), have[:min(16, len(have))], want[:min(16, len(want))])
	}
}

// route returns the name of the file Open(o) opens: which way it went.
func route(t *testing.T, o Object) string {
	t.Helper()
	f, err := Open(o)
	if err != nil {
		t.Fatalf("open %s: %v", o.Path, err)
	}
	defer f.Close()
	return f.Name()
}

func rootPath(pid int, path string) string { return fmt.Sprintf("/proc/%d/root%s", pid, path) }

func mapFilesPrefix(pid int) string { return fmt.Sprintf("/proc/%d/map_files/", pid) }

// mmapFile maps size bytes of fd with prot and unmaps them in t.Cleanup.
func mmapFile(t *testing.T, fd, size, prot int) {
	t.Helper()
	b, err := unix.Mmap(fd, 0, size, prot, unix.MAP_PRIVATE)
	if err != nil {
		t.Fatalf("mmap: %v", err)
	}
	t.Cleanup(func() {
		if err := unix.Munmap(b); err != nil {
			t.Error(err)
		}
	})
}

// elfImage returns the bytes of /bin/true, a real ELF file to map.
func elfImage(t *testing.T) []byte {
	t.Helper()
	b, err := os.ReadFile("/bin/true")
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// writeTemp writes b to a new file in a test directory.
func writeTemp(t *testing.T, b []byte) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "obj.so")
	if err := os.WriteFile(path, b, 0o700); err != nil {
		t.Fatal(err)
	}
	return path
}

// mapPath opens path, maps it with each prot in turn and closes it.
func mapPath(t *testing.T, path string, size int, prots ...int) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, prot := range prots {
		mmapFile(t, int(f.Fd()), size, prot)
	}
}

func TestObjectsSelf(t *testing.T) {
	pid := os.Getpid()
	objs, err := Objects(pid)
	if err != nil {
		t.Fatal(err)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	o := findObject(t, objs, exe)
	if have, want := route(t, o), rootPath(pid, o.Path); have != want {
		t.Errorf("have opened %q, want %q", have, want)
	}
	if o.Deleted || o.Memfd {
		t.Errorf("test binary: have Deleted=%v Memfd=%v, want false", o.Deleted, o.Memfd)
	}
	checkOpen(t, o, []byte("\x7fELF"))
	for _, o := range objs {
		if strings.HasPrefix(o.Path, "[") || o.Inode == 0 {
			t.Errorf("pseudo mapping listed as object: %+v", o)
		}
	}
}

// startDynamic starts cat, a dynamically linked program, and returns once
// it has echoed a line: by then the loader has mapped all its libraries.
func startDynamic(t *testing.T) int {
	t.Helper()
	cat := testutil.StartCmd(t, exec.Command("cat"))
	cat.Send(t, "ready")
	cat.Expect(t, "ready")
	return cat.PID()
}

// lddPaths runs ldd(1) on prog and returns the paths it resolved.
func lddPaths(t *testing.T, prog string) []string {
	t.Helper()
	out, err := exec.Command("ldd", prog).Output()
	if err != nil {
		t.Fatalf("ldd %s: %v", prog, err)
	}
	var paths []string
	for _, line := range strings.Split(string(out), "\n") {
		for _, f := range strings.Fields(line) {
			if strings.HasPrefix(f, "/") {
				paths = append(paths, f)
			}
		}
	}
	return paths
}

func TestObjectsDynamicProcess(t *testing.T) {
	pid := startDynamic(t)
	objs, err := Objects(pid)
	if err != nil {
		t.Fatal(err)
	}
	prog, err := exec.LookPath("cat")
	if err != nil {
		t.Fatal(err)
	}
	// ldd names the same files by other paths (/lib vs /usr/lib); compare
	// by device and inode.
	want := append([]string{prog}, lddPaths(t, prog)...)
	var sawLibc, sawLoader bool
	for _, path := range want {
		o := findObject(t, objs, path)
		if have, want := route(t, o), rootPath(pid, o.Path); have != want {
			t.Errorf("%s: have opened %q, want %q", path, have, want)
		}
		checkOpen(t, o, []byte("\x7fELF"))
		base := filepath.Base(o.Path)
		sawLibc = sawLibc || strings.HasPrefix(base, "libc.so")
		sawLoader = sawLoader || strings.HasPrefix(base, "ld-linux")
	}
	if !sawLibc || !sawLoader {
		t.Errorf("have libc %v, ld-linux %v, want both among %v", sawLibc, sawLoader, want)
	}
	if len(objs) != len(want) {
		t.Errorf("have %d objects, want %d (ldd %v)", len(objs), len(want), want)
	}
}

func TestObjectsMemfd(t *testing.T) {
	img := elfImage(t)
	const name = "usdtkit-procfs-test"
	fd, err := unix.MemfdCreate(name, unix.MFD_CLOEXEC)
	if err != nil {
		t.Fatalf("memfd_create: %v", err)
	}
	t.Cleanup(func() { unix.Close(fd) })
	if _, err := unix.Write(fd, img); err != nil {
		t.Fatal(err)
	}
	mmapFile(t, fd, len(img), unix.PROT_READ|unix.PROT_EXEC)

	pid := os.Getpid()
	objs, err := Objects(pid)
	if err != nil {
		t.Fatal(err)
	}
	var found []Object
	for _, o := range objs {
		if o.Path == "/memfd:"+name {
			found = append(found, o)
		}
	}
	if len(found) != 1 {
		t.Fatalf("have %d objects for /memfd:%s, want 1", len(found), name)
	}
	o := found[0]
	if !o.Memfd || !o.Deleted {
		t.Errorf("have Memfd=%v Deleted=%v, want both true", o.Memfd, o.Deleted)
	}
	if have := route(t, o); !strings.HasPrefix(have, mapFilesPrefix(pid)) {
		t.Errorf("have opened %q, want it under %s", have, mapFilesPrefix(pid))
	}
	checkOpen(t, o, img)
}

func TestObjectsDeleted(t *testing.T) {
	img := elfImage(t)
	path := writeTemp(t, img)
	mapPath(t, path, len(img), unix.PROT_READ|unix.PROT_EXEC)
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}

	pid := os.Getpid()
	objs, err := Objects(pid)
	if err != nil {
		t.Fatal(err)
	}
	o := objectByPath(t, objs, path)
	if !o.Deleted || o.Memfd {
		t.Errorf("have Deleted=%v Memfd=%v, want true, false", o.Deleted, o.Memfd)
	}
	if have := route(t, o); !strings.HasPrefix(have, mapFilesPrefix(pid)) {
		t.Errorf("have opened %q, want it under %s", have, mapFilesPrefix(pid))
	}
	checkOpen(t, o, img)
}

func TestObjectsReplaced(t *testing.T) {
	tests := []struct {
		name    string
		replace func(t *testing.T, path string, with []byte)
		deleted bool // what maps says
	}{
		{
			// The way package managers upgrade: write a new file and
			// rename it over the old path. The mapped inode loses its
			// last name and maps marks it deleted.
			name:    "renamed over",
			deleted: true,
			replace: func(t *testing.T, path string, with []byte) {
				next := path + ".new"
				if err := os.WriteFile(next, with, 0o700); err != nil {
					t.Fatal(err)
				}
				if err := os.Rename(next, path); err != nil {
					t.Fatal(err)
				}
			},
		},
		{
			// Another file mounted over the path: maps still prints the
			// path without " (deleted)", but it names a different inode,
			// as for a path that differs between mount namespaces.
			name:    "bind mounted over",
			deleted: false,
			replace: func(t *testing.T, path string, with []byte) {
				other := writeTemp(t, with)
				if err := unix.Mount(other, path, "", unix.MS_BIND, ""); err != nil {
					if errors.Is(err, unix.EPERM) {
						t.Skipf("bind mount needs CAP_SYS_ADMIN: %v", err)
					}
					t.Fatalf("bind mount: %v", err)
				}
				t.Cleanup(func() {
					if err := unix.Unmount(path, 0); err != nil {
						t.Error(err)
					}
				})
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			img := elfImage(t)
			path := writeTemp(t, img)
			mapPath(t, path, len(img), unix.PROT_READ|unix.PROT_EXEC)
			tt.replace(t, path, []byte("not the mapped file"))

			pid := os.Getpid()
			objs, err := Objects(pid)
			if err != nil {
				t.Fatal(err)
			}
			o := objectByPath(t, objs, path)
			if o.Deleted != tt.deleted {
				t.Errorf("have Deleted=%v, want %v", o.Deleted, tt.deleted)
			}
			if have := route(t, o); !strings.HasPrefix(have, mapFilesPrefix(pid)) {
				t.Errorf("have opened %q, want it under %s", have, mapFilesPrefix(pid))
			}
			checkOpen(t, o, img)
		})
	}
}

func TestObjectsDedup(t *testing.T) {
	img := elfImage(t)
	path := writeTemp(t, img)
	mapPath(t, path, len(img), unix.PROT_READ|unix.PROT_EXEC, unix.PROT_READ, unix.PROT_READ|unix.PROT_EXEC)

	pid := os.Getpid()
	objs, err := Objects(pid)
	if err != nil {
		t.Fatal(err)
	}
	o := objectByPath(t, objs, path)
	if len(o.Mappings) != 3 {
		t.Errorf("have %d mappings, want 3", len(o.Mappings))
	}
	for i := 1; i < len(o.Mappings); i++ {
		if o.Mappings[i].Start < o.Mappings[i-1].End {
			t.Errorf("mappings not in address order: %+v", o.Mappings)
		}
	}
	if have, want := route(t, o), rootPath(pid, path); have != want {
		t.Errorf("have opened %q, want %q", have, want)
	}
	checkOpen(t, o, img)
}

// objectByPath returns the only object whose Path is path.
func objectByPath(t *testing.T, objs []Object, path string) Object {
	t.Helper()
	var found []Object
	for _, o := range objs {
		if o.Path == path {
			found = append(found, o)
		}
	}
	if len(found) != 1 {
		t.Fatalf("have %d objects with path %s, want 1", len(found), path)
	}
	return found[0]
}

func TestObjectsNoProcess(t *testing.T) {
	b, err := os.ReadFile("/proc/sys/kernel/pid_max")
	if err != nil {
		t.Fatal(err)
	}
	pidMax, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		pid      int
		notExist bool
	}{
		{"above pid_max", pidMax + 1, true},
		{"zero", 0, false},
		{"negative", -1, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			objs, err := Objects(tt.pid)
			if !errors.Is(err, ErrNoProcess) {
				t.Fatalf("have error %v, want ErrNoProcess", err)
			}
			if have := errors.Is(err, os.ErrNotExist); have != tt.notExist {
				t.Errorf("have errors.Is(err, os.ErrNotExist) = %v, want %v", have, tt.notExist)
			}
			if objs != nil {
				t.Errorf("have %d objects with an error, want none", len(objs))
			}
		})
	}
}
