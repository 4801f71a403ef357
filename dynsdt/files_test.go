package dynsdt

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"golang.org/x/sys/unix"
)

func TestParseObjectName(t *testing.T) {
	tests := []struct {
		name string
		pid  int
		ok   bool
	}{
		{"myapp-1234-0123456789abcdef.so", 1234, true},
		{"my_app2-1-ffffffffffffffff.so", 1, true},
		{"myapp-1234-0123456789abcdef", 0, false},
		{"myapp-1234-0123456789abcde.so", 0, false},
		{"myapp-1234-0123456789abcdeg.so", 0, false},
		{"myapp-01234-0123456789abcdef.so", 0, false},
		{"myapp-0-0123456789abcdef.so", 0, false},
		{"myapp--1-0123456789abcdef.so", 0, false},
		{"my-app-1-0123456789abcdef.so", 0, false},
		{"1app-1-0123456789abcdef.so", 0, false},
		{"myapp-99999999999999999999-0123456789abcdef.so", 0, false},
		{".so", 0, false},
		{"", 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pid, ok := parseObjectName(tt.name)
			if pid != tt.pid || ok != tt.ok {
				t.Errorf("have %d %v, want %d %v", pid, ok, tt.pid, tt.ok)
			}
		})
	}
	name, err := objectName("myapp", 42)
	if err != nil {
		t.Fatal(err)
	}
	if pid, ok := parseObjectName(name); pid != 42 || !ok {
		t.Errorf("parseObjectName(objectName(myapp, 42) = %q) = %d %v", name, pid, ok)
	}
}

func FuzzParseObjectName(f *testing.F) {
	f.Add("myapp-1234-0123456789abcdef.so")
	f.Add("a-1-ffffffffffffffff.so")
	f.Add("my-app-1-0123456789abcdef.so")
	f.Fuzz(func(t *testing.T, name string) {
		pid, ok := parseObjectName(name)
		if !ok {
			if pid != 0 {
				t.Errorf("%q: pid %d without ok", name, pid)
			}
			return
		}
		// A name it accepts is one objectName could have made.
		prefix := name[:len(name)-len("-0123456789abcdef.so")]
		if want := prefix[:len(prefix)-len(strconv.Itoa(pid))] + strconv.Itoa(pid); want != prefix || pid <= 0 {
			t.Errorf("%q: pid %d", name, pid)
		}
	})
}

// TestReapLocked checks that a file is kept while another process (here:
// another open file description) holds its lock and reaped once the lock
// is free, whatever the PID in its name: a dead one, or 1, which exists
// here but in a file left by a container's init names another process.
func TestReapLocked(t *testing.T) {
	for _, pid := range []int{deadPID(t), 1} {
		t.Run(strconv.Itoa(pid), func(t *testing.T) {
			dir := t.TempDir()
			name := "ktest-" + strconv.Itoa(pid) + "-0123456789abcdef.so"
			path := filepath.Join(dir, name)
			if err := os.WriteFile(path, nil, 0o600); err != nil {
				t.Fatal(err)
			}
			f, err := os.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if err := unix.Flock(int(f.Fd()), unix.LOCK_SH); err != nil {
				t.Fatal(err)
			}
			_, dirfd, err := openDir(dir)
			if err != nil {
				t.Fatal(err)
			}
			defer unix.Close(dirfd)
			if removed := reap(dir, dirfd); len(removed) != 0 {
				t.Errorf("reaped a locked file: %v", removed)
			}
			if err := unix.Flock(int(f.Fd()), unix.LOCK_UN); err != nil {
				t.Fatal(err)
			}
			if removed := reap(dir, dirfd); len(removed) != 1 || removed[0] != name {
				t.Errorf("reaped %v, want [%s]", removed, name)
			}
		})
	}
}

// TestLockAndCheckReaped checks that a new file that a reaper took for
// stale before its creator locked it (the reaper holds the exclusive lock,
// or has removed the name) is reported as reaped, so that the creator tries
// another name instead of failing or using a file no longer in the
// directory.
func TestLockAndCheckReaped(t *testing.T) {
	for _, tt := range []struct {
		name   string
		reaper func(t *testing.T, dir, path string)
		reaped bool
	}{
		{"none", func(t *testing.T, dir, path string) {}, false},
		{"locked", func(t *testing.T, dir, path string) {
			f, err := os.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { f.Close() })
			if err := unix.Flock(int(f.Fd()), unix.LOCK_EX); err != nil {
				t.Fatal(err)
			}
		}, true},
		{"removed", func(t *testing.T, dir, path string) {
			if err := os.Remove(path); err != nil {
				t.Fatal(err)
			}
		}, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			_, dirfd, err := openDir(dir)
			if err != nil {
				t.Fatal(err)
			}
			defer unix.Close(dirfd)
			const name = "ktest-1-0123456789abcdef.so"
			fd, err := unix.Openat(dirfd, name, unix.O_RDWR|unix.O_CREAT|unix.O_EXCL|unix.O_CLOEXEC, 0o600)
			if err != nil {
				t.Fatal(err)
			}
			defer unix.Close(fd)
			tt.reaper(t, dir, filepath.Join(dir, name))
			reaped, err := lockAndCheck(dirfd, name, fd)
			if err != nil || reaped != tt.reaped {
				t.Errorf("have %v, %v; want %v, nil", reaped, err, tt.reaped)
			}
		})
	}
}

// deadPID returns a PID that no process has: one above the system's
// largest, or failing that, skips the test.
func deadPID(t *testing.T) int {
	t.Helper()
	b, err := os.ReadFile("/proc/sys/kernel/pid_max")
	if err != nil {
		t.Skip(err)
	}
	max, err := strconv.Atoi(string(b[:len(b)-1]))
	if err != nil {
		t.Fatal(err)
	}
	// pid_max itself is never assigned (PIDs run up to pid_max-1).
	return max
}
