package gen

import (
	"bytes"
	"debug/elf"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/usdtkit/usdtkit/dynsdt"
)

// TestWriteFiles plants what an attacker could in the output directory
// under the name of a generated file, and checks that WriteFiles never
// writes through it: a symbolic link or a non-regular file is refused, a
// hard link is replaced, and the file they point to keeps its contents.
func TestWriteFiles(t *testing.T) {
	const victimData = "victim\n"
	tests := []struct {
		name    string
		plant   func(t *testing.T, path, victim string)
		refused bool
	}{
		{"missing", func(t *testing.T, path, victim string) {}, false},
		{"regular", func(t *testing.T, path, victim string) {
			if err := os.WriteFile(path, []byte("old"), 0o644); err != nil {
				t.Fatal(err)
			}
		}, false},
		{"hard link", func(t *testing.T, path, victim string) {
			if err := os.Link(victim, path); err != nil {
				t.Fatal(err)
			}
		}, false},
		{"symlink", func(t *testing.T, path, victim string) {
			if err := os.Symlink(victim, path); err != nil {
				t.Fatal(err)
			}
		}, true},
		{"dangling symlink", func(t *testing.T, path, victim string) {
			if err := os.Symlink(victim+".new", path); err != nil {
				t.Fatal(err)
			}
		}, true},
		{"directory", func(t *testing.T, path, victim string) {
			if err := os.Mkdir(path, 0o755); err != nil {
				t.Fatal(err)
			}
		}, true},
		{"fifo", func(t *testing.T, path, victim string) {
			if err := unix.Mkfifo(path, 0o644); err != nil {
				t.Fatal(err)
			}
		}, true},
	}
	files := []File{{"a.so", []byte("so\n")}, {"a.h", []byte("header\n")}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			victim := filepath.Join(t.TempDir(), "victim")
			if err := os.WriteFile(victim, []byte(victimData), 0o644); err != nil {
				t.Fatal(err)
			}
			dir := t.TempDir()
			tt.plant(t, filepath.Join(dir, "a.h"), victim)
			paths, err := WriteFiles(dir, files)
			if tt.refused {
				if !errors.Is(err, ErrNotRegularFile) || len(paths) != 0 {
					t.Errorf("have %v, %v; want an error wrapping ErrNotRegularFile and nothing written", paths, err)
				}
				if _, err := os.Lstat(filepath.Join(dir, "a.so")); !errors.Is(err, os.ErrNotExist) {
					t.Errorf("a.so written before the refusal: %v", err)
				}
			} else {
				if err != nil || len(paths) != len(files) {
					t.Fatalf("have %v, %v; want %d paths", paths, err, len(files))
				}
				for i, f := range files {
					if paths[i] != filepath.Join(dir, f.Name) {
						t.Errorf("path %d: have %s, want %s", i, paths[i], filepath.Join(dir, f.Name))
					}
					fi, err := os.Lstat(paths[i])
					if err != nil || !fi.Mode().IsRegular() {
						t.Fatalf("%s: %v, %v; want a regular file", f.Name, fi, err)
					}
					if b, err := os.ReadFile(paths[i]); err != nil || string(b) != string(f.Data) {
						t.Errorf("%s: have %q, %v; want %q", f.Name, b, err, f.Data)
					}
				}
			}
			if b, err := os.ReadFile(victim); err != nil || string(b) != victimData {
				t.Errorf("victim: have %q, %v; want %q", b, err, victimData)
			}
			if _, err := os.Lstat(victim + ".new"); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("created the symbolic link's target: %v", err)
			}
			entries, err := os.ReadDir(dir)
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range entries {
				if e.Name() != "a.so" && e.Name() != "a.h" {
					t.Errorf("left %s in the directory", e.Name())
				}
			}
		})
	}
}

func TestWriteFilesBadName(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"", ".", "..", "../x", "a/b"} {
		if _, err := WriteFiles(dir, []File{{name, nil}}); err == nil {
			t.Errorf("%q: no error", name)
		}
	}
}

// TestWriteFilesPathError: a file that cannot be created is a
// *os.PathError naming it (the CLI says "write PATH: permission denied"
// from it, not that tracing needs root). /proc/self takes no new files,
// even from root.
func TestWriteFilesPathError(t *testing.T) {
	_, err := WriteFiles("/proc/self", []File{{"p.so", []byte("x")}})
	var pe *os.PathError
	if !errors.As(err, &pe) || pe.Op != "write" || pe.Path != "/proc/self/p.so" {
		t.Errorf("WriteFiles: %v; want a *PathError write /proc/self/p.so", err)
	}
}

// TestGenerateFilesSite: the shared object GenerateFiles returns is
// Build's for Options.Site, also for an arm64 object (one
// kind); a Site that is no kind is ErrSite, also with Static.
func TestGenerateFilesSite(t *testing.T) {
	spec := &dynsdt.ProviderSpec{Name: "ksite", Probes: []dynsdt.ProbeSpec{{Name: "a", Args: []dynsdt.ArgType{dynsdt.Int32}}}}
	for _, m := range []elf.Machine{elf.EM_X86_64, elf.EM_AARCH64} {
		for _, site := range []dynsdt.Site{dynsdt.SiteAuto, dynsdt.SiteNop, dynsdt.SiteNop5, dynsdt.SiteNop10} {
			files, err := Files(spec, &Options{Machine: m, Site: site})
			if err != nil {
				t.Fatalf("%v %v: %v", m, site, err)
			}
			obj, err := dynsdt.Build(spec, m, &dynsdt.BuildOptions{Site: site})
			if err != nil {
				t.Fatal(err)
			}
			if files[0].Name != dynsdt.SOName(spec.Name) || !bytes.Equal(files[0].Data, obj.Bytes) {
				t.Errorf("%v %v: %s is not Build's object (site %v)", m, site, files[0].Name, obj.Site)
			}
		}
	}
	for _, static := range []bool{false, true} {
		if _, err := Files(spec, &Options{Static: static, Site: dynsdt.SiteNop10 + 1}); !errors.Is(err, dynsdt.ErrSite) {
			t.Errorf("static %v, site %v: %v, want ErrSite", static, dynsdt.SiteNop10+1, err)
		}
	}
}
