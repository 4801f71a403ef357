package target

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestMatch(t *testing.T) {
	tests := []struct {
		filter, path string
		want         bool
	}{
		{"", "/usr/lib/x86_64-linux-gnu/libc.so.6", true},
		{"*", "/usr/lib/x86_64-linux-gnu/libc.so.6", true},
		{"libc", "/usr/lib/x86_64-linux-gnu/libc.so.6", true},
		{"c", "/usr/lib/x86_64-linux-gnu/libc.so.6", true},
		{"libc", "/usr/lib/x86_64-linux-gnu/libcrypt.so.1", false},
		{"libstdc++", "/usr/lib/x86_64-linux-gnu/libstdc++.so.6.0.30", true},
		{"libpython3.11", "/usr/lib/libpython3.11.so.1.0", true},
		{"python3.11", "/usr/bin/python3.11", true},
		{"/usr/bin/python3.11", "/usr/bin/python3.11", true},
		{"/usr/bin/python*", "/usr/bin/python3.11", true},
		{"/usr/bin/python3", "/usr/bin/python3.11", false},
		{"/memfd:jit*", "/memfd:jit-1", true},
	}
	for _, tt := range tests {
		if have := Match(tt.filter, tt.path); have != tt.want {
			t.Errorf("Match(%q, %q) = %v, want %v", tt.filter, tt.path, have, tt.want)
		}
	}
}

func TestResolveFiles(t *testing.T) {
	dir := t.TempDir()
	for _, n := range []string{"a.so", "b.so"} {
		if err := os.WriteFile(filepath.Join(dir, n), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	a, b := filepath.Join(dir, "a.so"), filepath.Join(dir, "b.so")
	objs, err := Resolve([]string{a, filepath.Join(dir, "*.so")}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(objs) != 2 || objs[0].Path != a || objs[1].Path != b || objs[0].PID != 0 {
		t.Errorf("have %+v, want %s then %s once each", objs, a, b)
	}

	if _, err := Resolve([]string{filepath.Join(dir, "*.none")}, 0); !errors.Is(err, ErrNotFound) {
		t.Errorf("unmatched glob: err = %v, want ErrNotFound", err)
	}
	if _, err := Resolve([]string{filepath.Join(dir, "missing.so")}, 0); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: err = %v, want os.ErrNotExist", err)
	}
	if _, err := Resolve([]string{"no-such-library-xyz"}, 0); !errors.Is(err, ErrNotFound) {
		t.Errorf("unknown library: err = %v, want ErrNotFound", err)
	}
	if _, err := Resolve([]string{dir}, 0); err == nil {
		t.Error("a directory resolved")
	}
}

// TestPIDPath: with a process in this mount namespace, a relative path is
// taken from the working directory with its symbolic links resolved (as
// bpftrace's abs_path), a glob is made absolute, a name stays a name.
func TestPIDPath(t *testing.T) {
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "real"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "real", "x.so"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("real", filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir)
	pid := os.Getpid()
	tests := []struct{ name, want string }{
		{"./real/x.so", filepath.Join(dir, "real", "x.so")},
		{"link/x.so", filepath.Join(dir, "real", "x.so")},
		{"./link/../real/x.so", filepath.Join(dir, "real", "x.so")},
		{"./real/*.so", filepath.Join(dir, "real", "*.so")},
		{"./real/missing.so", filepath.Join(dir, "real", "missing.so")},
		{"/usr/lib/libc.so.6", "/usr/lib/libc.so.6"},
		{"libc", "libc"},
		{"x.so", "x.so"},
	}
	for _, tt := range tests {
		if have := pidPath(tt.name, pid); have != tt.want {
			t.Errorf("pidPath(%q) = %q, want %q", tt.name, have, tt.want)
		}
	}
}

// TestGlobPrefix: a file a glob found keeps the pattern's leading
// directories as written, as glob(3) gives them and bpftrace 0.17 prints
// them (bpftrace -l 'uprobe:./bin/x*:*' prints uprobe:./bin/xa:…).
func TestGlobPrefix(t *testing.T) {
	tests := []struct{ pattern, found, want string }{
		{"./bin/x*", "bin/xa", "./bin/xa"},
		{"./x*", "xa", "./xa"},
		{"x*", "xa", "xa"},
		{"bin/x*", "bin/xa", "bin/xa"},
		{"/usr/./lib/x*", "/usr/lib/xa", "/usr/./lib/xa"},
		{"../lib//x*", "../lib/xa", "../lib//xa"},
		{"./*/x", "bin/x", "./bin/x"},
		{"/x*", "/xa", "/xa"},
		{"./bin/x", "bin/x", "bin/x"}, // no glob: not a glob's result
	}
	for _, tt := range tests {
		if have := globPrefix(tt.pattern, tt.found); have != tt.want {
			t.Errorf("globPrefix(%q, %q) = %q, want %q", tt.pattern, tt.found, have, tt.want)
		}
	}
}
