package ldso

import (
	"debug/elf"
	"encoding/binary"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// ldconfigPaths maps each soname that `ldconfig -p` lists for the host's
// ABI to its first path.
func ldconfigPaths(t *testing.T) map[string]string {
	t.Helper()
	label := map[string]string{"amd64": "libc6,x86-64", "arm64": "libc6,AArch64"}[runtime.GOARCH]
	if label == "" {
		t.Skipf("no ldconfig -p label known for %s", runtime.GOARCH)
	}
	out, err := exec.Command("ldconfig", "-p").Output()
	if err != nil {
		t.Skipf("ldconfig -p: %v", err)
	}
	paths := make(map[string]string)
	for _, l := range strings.Split(string(out), "\n") {
		name, rest, ok := strings.Cut(strings.TrimSpace(l), " ("+label+")")
		if !ok {
			continue
		}
		if _, seen := paths[name]; !seen {
			paths[name] = strings.TrimPrefix(rest, " => ")
		}
	}
	return paths
}

func TestFindSystem(t *testing.T) {
	paths := ldconfigPaths(t)
	tests := []struct {
		name   string
		soname string // whose ldconfig -p path Find must return
	}{
		{"libc", "libc.so.6"},
		{"c", "libc.so.6"},
		{"libc.so.6", "libc.so.6"},
		{"pthread", "libpthread.so.0"},
		{"libstdc++", "libstdc++.so.6"},
		{"libpython3.11", "libpython3.11.so.1.0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want, ok := paths[tt.soname]
			if !ok {
				t.Skipf("%s is not installed", tt.soname)
			}
			have, err := Find(tt.name, nil)
			if err != nil {
				t.Fatal(err)
			}
			if have != want {
				t.Errorf("have %s, want %s (ldconfig -p)", have, want)
			}

			// Through our own root as through a container's: links are
			// resolved inside it, to the same file.
			inRoot, err := Find(tt.name, &FindOptions{Root: "/proc/self/root"})
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(inRoot, "/proc/self/root/") || !sameFile(t, inRoot, want) {
				t.Errorf("with Root: have %s, want the file %s under /proc/self/root", inRoot, want)
			}
		})
	}
}

func sameFile(t *testing.T, a, b string) bool {
	t.Helper()
	sa, err := os.Stat(a)
	if err != nil {
		t.Fatal(err)
	}
	sb, err := os.Stat(b)
	if err != nil {
		t.Fatal(err)
	}
	return os.SameFile(sa, sb)
}

func TestFindNotFound(t *testing.T) {
	for _, name := range []string{"nonexistent-xyz", "libnonexistent-xyz.so", "libc.so.99", "/nonexistent/libx.so"} {
		if have, err := Find(name, nil); !errors.Is(err, ErrNotFound) {
			t.Errorf("Find(%q): have %q, %v, want ErrNotFound", name, have, err)
		}
	}
	if _, err := Find("", nil); err == nil {
		t.Error("Find(\"\"): have no error, want one")
	}
}

// writeELF writes the start of an ELF header for machine and class at
// path; Find reads no further.
func writeELF(t *testing.T, path string, machine elf.Machine, class elf.Class) {
	t.Helper()
	h := make([]byte, 64)
	copy(h, elf.ELFMAG)
	h[elf.EI_CLASS] = byte(class)
	h[elf.EI_DATA] = byte(elf.ELFDATA2LSB)
	h[elf.EI_VERSION] = byte(elf.EV_CURRENT)
	binary.LittleEndian.PutUint16(h[16:], uint16(elf.ET_DYN))
	binary.LittleEndian.PutUint16(h[18:], uint16(machine))
	writeFile(t, path, h)
}

func writeFile(t *testing.T, path string, b []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func symlink(t *testing.T, target, path string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, path); err != nil {
		t.Fatal(err)
	}
}

// TestFindDirs covers the directory search: no cache, a linker script
// named like the library, versions, and other architectures.
func TestFindDirs(t *testing.T) {
	dir := t.TempDir()
	lib, lib32, other := filepath.Join(dir, "lib"), filepath.Join(dir, "lib32"), filepath.Join(dir, "other")
	writeFile(t, filepath.Join(lib, "libfoo.so"), []byte("/* GNU ld script */\nINPUT(libfoo.so.1)\n"))
	writeELF(t, filepath.Join(lib, "libfoo.so.1.10.0"), elf.EM_X86_64, elf.ELFCLASS64)
	writeELF(t, filepath.Join(lib, "libfoo.so.1.9.0"), elf.EM_X86_64, elf.ELFCLASS64)
	symlink(t, "libfoo.so.1.10.0", filepath.Join(lib, "libfoo.so.1"))
	writeELF(t, filepath.Join(lib, "libfoo.so.2"), elf.EM_AARCH64, elf.ELFCLASS64)
	writeELF(t, filepath.Join(lib, "libfoobar.so.9"), elf.EM_X86_64, elf.ELFCLASS64)
	writeELF(t, filepath.Join(lib, "libdev.so"), elf.EM_X86_64, elf.ELFCLASS64)
	writeELF(t, filepath.Join(lib32, "libfoo.so.3"), elf.EM_386, elf.ELFCLASS32)
	writeELF(t, filepath.Join(lib32, "libx32.so.1"), elf.EM_X86_64, elf.ELFCLASS32)
	writeELF(t, filepath.Join(other, "ld-linux-x86-64.so.2"), elf.EM_X86_64, elf.ELFCLASS64)

	tests := []struct {
		name    string
		machine elf.Machine
		want    string // "" for ErrNotFound
	}{
		{"foo", elf.EM_X86_64, filepath.Join(lib, "libfoo.so.1.10.0")},
		{"libfoo", elf.EM_X86_64, filepath.Join(lib, "libfoo.so.1.10.0")},
		{"libfoo.so", elf.EM_X86_64, filepath.Join(lib, "libfoo.so.1.10.0")}, // libfoo.so is a script
		{"libfoo.so.1", elf.EM_X86_64, filepath.Join(lib, "libfoo.so.1")},
		{"libfoo.so.2", elf.EM_X86_64, ""},
		{"foo", elf.EM_AARCH64, filepath.Join(lib, "libfoo.so.2")},
		{"foo", elf.EM_386, filepath.Join(lib32, "libfoo.so.3")},
		{"libfoobar", elf.EM_X86_64, filepath.Join(lib, "libfoobar.so.9")},
		{"dev", elf.EM_X86_64, filepath.Join(lib, "libdev.so")},
		{"libdev.so", elf.EM_X86_64, filepath.Join(lib, "libdev.so")},
		{"x32", elf.EM_X86_64, ""},
		{"ld-linux-x86-64.so.2", elf.EM_X86_64, filepath.Join(other, "ld-linux-x86-64.so.2")},
		{"ld-linux-x86-64", elf.EM_X86_64, filepath.Join(other, "ld-linux-x86-64.so.2")},
		{filepath.Join(lib, "libfoo.so.1.9.0"), elf.EM_X86_64, filepath.Join(lib, "libfoo.so.1.9.0")},
		{filepath.Join(lib, "libfoo.so"), elf.EM_X86_64, ""},
		{"bar", elf.EM_X86_64, ""},
	}
	for _, tt := range tests {
		t.Run(tt.machine.String()+"/"+tt.name, func(t *testing.T) {
			opts := &FindOptions{
				Cache:   filepath.Join(dir, "no-such-cache"),
				Dirs:    []string{lib, lib32, other, filepath.Join(dir, "missing")},
				Machine: tt.machine,
			}
			have, err := Find(tt.name, opts)
			if tt.want == "" {
				if !errors.Is(err, ErrNotFound) {
					t.Fatalf("have %q, %v, want ErrNotFound", have, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if have != tt.want {
				t.Errorf("have %s, want %s", have, tt.want)
			}
		})
	}
}

// TestFindRoot runs a search inside another root, as for a container: the
// cache and the libraries come from the root, an absolute symlink is
// resolved inside it, and cache entries are chosen by machine.
func TestFindRoot(t *testing.T) {
	root := t.TempDir()
	entries := []Entry{
		{Name: "libbar.so.1", Path: "/usr/lib/aarch64-linux-gnu/libbar.so.1", Flags: flagELFLibc6 | flagAArch64},
		{Name: "libbar.so.1", Path: "/usr/lib/x86_64-linux-gnu/glibc-hwcaps/x86-64-v3/libbar.so.1",
			Flags: flagELFLibc6 | flagX8664, HWCap: 1<<62 | 3<<32},
		{Name: "libbar.so.1", Path: "/usr/lib/x86_64-linux-gnu/libbar.so.1", Flags: flagELFLibc6 | flagX8664},
		{Name: "libstale.so.1", Path: "/usr/lib/x86_64-linux-gnu/libstale.so.1", Flags: flagELFLibc6 | flagX8664},
	}
	writeFile(t, filepath.Join(root, "etc/ld.so.cache"), buildCache(formatNew, entries))
	// An absolute link: followed from outside the root it would miss.
	symlink(t, "/opt/real/libbar.so.1.0", filepath.Join(root, "usr/lib/x86_64-linux-gnu/libbar.so.1"))
	writeELF(t, filepath.Join(root, "opt/real/libbar.so.1.0"), elf.EM_X86_64, elf.ELFCLASS64)
	writeELF(t, filepath.Join(root, "usr/lib/x86_64-linux-gnu/glibc-hwcaps/x86-64-v3/libbar.so.1"), elf.EM_X86_64, elf.ELFCLASS64)
	symlink(t, "../../../../opt/real/../../../../arm/libbar.so", filepath.Join(root, "usr/lib/aarch64-linux-gnu/libbar.so.1"))
	writeELF(t, filepath.Join(root, "arm/libbar.so"), elf.EM_AARCH64, elf.ELFCLASS64)
	// The directory search finds what the cache lacks.
	writeELF(t, filepath.Join(root, "lib64/libonlydir.so.1"), elf.EM_X86_64, elf.ELFCLASS64)
	symlink(t, "loop", filepath.Join(root, "lib64/loop"))
	symlink(t, "loop", filepath.Join(root, "lib64/libloop.so.1"))

	tests := []struct {
		name    string
		machine elf.Machine
		want    string // inside root; "" for ErrNotFound
	}{
		{"bar", elf.EM_X86_64, "/opt/real/libbar.so.1.0"},
		{"libbar.so.1", elf.EM_X86_64, "/opt/real/libbar.so.1.0"},
		{"bar", elf.EM_AARCH64, "/arm/libbar.so"},
		{"stale", elf.EM_X86_64, ""},
		{"onlydir", elf.EM_X86_64, "/lib64/libonlydir.so.1"},
		{"loop", elf.EM_X86_64, ""},
		{"/usr/lib/x86_64-linux-gnu/libbar.so.1", elf.EM_X86_64, "/opt/real/libbar.so.1.0"},
	}
	for _, tt := range tests {
		t.Run(tt.machine.String()+"/"+tt.name, func(t *testing.T) {
			have, err := Find(tt.name, &FindOptions{Root: root, Machine: tt.machine})
			if tt.want == "" {
				if !errors.Is(err, ErrNotFound) {
					t.Fatalf("have %q, %v, want ErrNotFound", have, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if want := root + tt.want; have != want {
				t.Errorf("have %s, want %s", have, want)
			}
		})
	}
}

func TestFindBadCache(t *testing.T) {
	dir := t.TempDir()
	cache := filepath.Join(dir, "ld.so.cache")
	writeFile(t, cache, []byte("glibc-ld.so.cache1.1 truncated"))
	_, err := Find("c", &FindOptions{Cache: cache, Dirs: []string{dir}})
	var fe *FormatError
	if !errors.As(err, &fe) {
		t.Errorf("have %v, want *FormatError", err)
	}
}

func TestQueryMatch(t *testing.T) {
	tests := []struct {
		name, soname string
		want         *match // nil: no match
	}{
		{"c", "libc.so.6", &match{version: "6"}},
		{"c", "libc.so", &match{}},
		{"c", "libcap.so.2", nil},
		{"c", "libc.so.", nil},
		{"c", "c.so.1", &match{stem: 1, version: "1"}},
		{"libc", "libc.so.6", &match{version: "6"}},
		{"libc.so.6", "libc.so.6", &match{exact: true}},
		{"libc.so.6", "libc.so.7", nil},
		{"libfoo.so", "libfoo.so", &match{exact: true}},
		{"libfoo.so", "libfoo.so.2", &match{version: "2"}},
		{"libpython3.11", "libpython3.11.so.1.0", &match{version: "1.0"}},
		{"libpython3.11", "libpython3.1.so.1.0", nil},
	}
	for _, tt := range tests {
		have, ok := newQuery(tt.name).match(tt.soname)
		switch {
		case tt.want == nil && ok:
			t.Errorf("%s matches %s: have %+v, want no match", tt.name, tt.soname, have)
		case tt.want != nil && (!ok || have != *tt.want):
			t.Errorf("%s matches %s: have %+v, %v, want %+v", tt.name, tt.soname, have, ok, *tt.want)
		}
	}
}

func TestCompareVersions(t *testing.T) {
	tests := []struct {
		a, b string
		want int
	}{
		{"1", "1", 0},
		{"1.10", "1.9", 1},
		{"1", "1.0", -1},
		{"2", "1.99.99", 1},
		{"1.a", "1.b", -1},
		{"0.30", "0.4", 1},
	}
	for _, tt := range tests {
		if have := compareVersions(tt.a, tt.b); have != tt.want {
			t.Errorf("compareVersions(%q, %q): have %d, want %d", tt.a, tt.b, have, tt.want)
		}
	}
}
