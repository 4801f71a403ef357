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
