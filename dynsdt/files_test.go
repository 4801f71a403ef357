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

// TestReapLocked checks that a file whose PID is gone is kept while
// another process (here: another open file description) holds its lock, as
// a process in another PID namespace would.
func TestReapLocked(t *testing.T) {
	dir := t.TempDir()
	dead := deadPID(t)
	name := "ktest-" + strconv.Itoa(dead) + "-0123456789abcdef.so"
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
