package dynsdt_test

import (
	"bufio"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/usdtkit/usdtkit/dynsdt"
	"github.com/usdtkit/usdtkit/internal/proc/procfs"
	"github.com/usdtkit/usdtkit/internal/testutil"
)

// loadSpec is the provider the loader tests load.
var loadSpec = dynsdt.ProviderSpec{Name: "ktest", Probes: []dynsdt.ProbeSpec{
	{Name: "ints", Args: []dynsdt.ArgType{dynsdt.Int8, dynsdt.Int16, dynsdt.Int32, dynsdt.Int64,
		dynsdt.Uint8, dynsdt.Uint16, dynsdt.Uint32, dynsdt.Uint64, dynsdt.Bool}},
	{Name: "str", Args: []dynsdt.ArgType{dynsdt.String, dynsdt.Int32}},
	{Name: "twelve", Args: []dynsdt.ArgType{dynsdt.Int64, dynsdt.Int64, dynsdt.Int64, dynsdt.Int64, dynsdt.Int64, dynsdt.Int64,
		dynsdt.Int64, dynsdt.Int64, dynsdt.Int64, dynsdt.Int64, dynsdt.Int64, dynsdt.Int32}},
	{Name: "none"},
}}

func hostSupported(t testing.TB) {
	t.Helper()
	if runtime.GOARCH != "amd64" && runtime.GOARCH != "arm64" {
		t.Skip("Load supports amd64 and arm64")
	}
}

// objectMappings returns this process's mappings of the file at path (as
// Provider.Path gives it).
func objectMappings(t *testing.T, path string) []procfs.Mapping {
	t.Helper()
	maps, err := procfs.ReadMaps(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	path, deleted := strings.CutSuffix(path, " (deleted)")
	var ms []procfs.Mapping
	for _, m := range maps {
		if m.Path == path && m.Deleted == deleted {
			ms = append(ms, m)
		}
	}
	return ms
}

// TestLoad loads the provider each way and checks what tracers see: the
// object's three PT_LOAD segments as file-backed mappings with their
// permissions, the file private; and that Close takes both away.
func TestLoad(t *testing.T) {
	hostSupported(t)
	tests := []struct {
		name string
		opts func(t *testing.T) *dynsdt.Options
	}{
		{"default", func(t *testing.T) *dynsdt.Options { return nil }},
		{"dir", func(t *testing.T) *dynsdt.Options { return &dynsdt.Options{Dir: t.TempDir()} }},
		{"memfd", func(t *testing.T) *dynsdt.Options { return &dynsdt.Options{Memfd: true} }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := tt.opts(t)
			p, err := dynsdt.Load(&loadSpec, opts)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { p.Close() })

			memfd := opts != nil && opts.Memfd
			if want := "/memfd:ktest.so (deleted)"; memfd && p.Path() != want {
				t.Errorf("path: have %q, want %q", p.Path(), want)
			}
			if !memfd {
				checkObjectFile(t, p.Path(), opts)
			}
			var perms []string
			for _, m := range objectMappings(t, p.Path()) {
				perms = append(perms, m.Perms)
			}
			if have, want := strings.Join(perms, " "), "r--p r-xp rw-p"; have != want {
				t.Errorf("mappings of %s: have %q, want %q", p.Path(), have, want)
			}
			for _, ps := range loadSpec.Probes {
				pr := p.Probe(ps.Name)
				if pr == nil || pr.Name() != ps.Name {
					t.Fatalf("Probe(%q) = %v", ps.Name, pr)
				}
				if pr.Enabled() {
					t.Errorf("%s enabled without a tracer", ps.Name)
				}
				pr.Fire(1, 2, 3)
			}
			if pr := p.Probe("absent"); pr != nil {
				t.Errorf("Probe(absent) = %v, want nil", pr)
			}

			if err := p.Close(); err != nil {
				t.Fatal(err)
			}
			if err := p.Close(); err != nil {
				t.Errorf("second Close: %v", err)
			}
			if ms := objectMappings(t, p.Path()); len(ms) != 0 {
				t.Errorf("mapped after Close: %v", ms)
			}
			if !memfd {
				if _, err := os.Lstat(p.Path()); !errors.Is(err, os.ErrNotExist) {
					t.Errorf("file after Close: have %v, want ErrNotExist", err)
				}
			}
			pr := p.Probe("twelve")
			pr.Fire(1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12)
			if pr.Enabled() {
				t.Error("enabled after Close")
			}
		})
	}
}

// checkObjectFile checks the object file's name and permissions, and its
// directory's.
func checkObjectFile(t *testing.T, path string, opts *dynsdt.Options) {
	t.Helper()
	fi, err := os.Lstat(path)
	if err != nil {
		t.Fatal(err)
	}
	if !fi.Mode().IsRegular() || fi.Mode().Perm() != 0o600 {
		t.Errorf("%s: mode %v, want a regular file with 0600", path, fi.Mode())
	}
	dir := filepath.Dir(path)
	if opts == nil {
		di, err := os.Lstat(dir)
		if err != nil {
			t.Fatal(err)
		}
		if !di.IsDir() || di.Mode().Perm() != 0o700 {
			t.Errorf("%s: mode %v, want a directory with 0700", dir, di.Mode())
		}
	}
	base := filepath.Base(path)
	prefix := "ktest-" + strconv.Itoa(os.Getpid()) + "-"
	if !strings.HasPrefix(base, prefix) || !strings.HasSuffix(base, ".so") || len(base) != len(prefix)+16+3 {
		t.Errorf("file name %s, want %s<16 hex>.so", base, prefix)
	}
}

// TestLoadReadelf cross-checks the written file with binutils.
func TestLoadReadelf(t *testing.T) {
	hostSupported(t)
	readelf := testutil.RequireTool(t, "readelf")
	p, err := dynsdt.Load(&loadSpec, &dynsdt.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	out, err := exec.Command(readelf, "-n", p.Path()).CombinedOutput()
	if err != nil {
		t.Fatalf("readelf -n: %v\n%s", err, out)
	}
	var probes []string
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	provider := ""
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		switch {
		case len(f) == 2 && f[0] == "Provider:":
			provider = f[1]
		case len(f) == 2 && f[0] == "Name:":
			probes = append(probes, provider+":"+f[1])
		}
	}
	if have, want := strings.Join(probes, " "), "ktest:ints ktest:str ktest:twelve ktest:none"; have != want {
		t.Errorf("readelf -n probes: have %q, want %q\n%s", have, want, out)
	}
}

// TestLoadErrors checks the errors callers branch on.
func TestLoadErrors(t *testing.T) {
	hostSupported(t)
	tmp := t.TempDir()
	open := filepath.Join(tmp, "open")
	if err := os.Mkdir(open, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(open, 0o777); err != nil {
		t.Fatal(err)
	}
	private := filepath.Join(tmp, "private")
	if err := os.Mkdir(private, 0o700); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(tmp, "link")
	if err := os.Symlink(private, link); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(tmp, "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		spec *dynsdt.ProviderSpec
		opts *dynsdt.Options
		want error
	}{
		{"nil spec", nil, nil, dynsdt.ErrSpec},
		{"bad name", &dynsdt.ProviderSpec{Name: "my-app", Probes: []dynsdt.ProbeSpec{{Name: "a"}}}, nil, dynsdt.ErrSpec},
		{"no probes", &dynsdt.ProviderSpec{Name: "app"}, nil, dynsdt.ErrSpec},
		{"symlink dir", &loadSpec, &dynsdt.Options{Dir: link}, dynsdt.ErrUnsafeDir},
		{"dir writable by others", &loadSpec, &dynsdt.Options{Dir: open}, dynsdt.ErrUnsafeDir},
		{"dir is a file", &loadSpec, &dynsdt.Options{Dir: file}, dynsdt.ErrUnsafeDir},
		{"missing dir", &loadSpec, &dynsdt.Options{Dir: filepath.Join(tmp, "missing")}, os.ErrNotExist},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := dynsdt.Load(tt.spec, tt.opts)
			if !errors.Is(err, tt.want) {
				t.Errorf("have %v, want an error wrapping %v", err, tt.want)
			}
			if p != nil {
				t.Errorf("have a provider with the error")
				p.Close()
			}
		})
	}
	if entries, err := os.ReadDir(private); err != nil || len(entries) != 0 {
		t.Errorf("files left in %s: %v %v", private, entries, err)
	}
}

// TestFireAllocs guards the promise that Enabled and Fire with integer
// arguments do not allocate.
func TestFireAllocs(t *testing.T) {
	hostSupported(t)
	p, err := dynsdt.Load(&loadSpec, &dynsdt.Options{Memfd: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	ints, twelve := p.Probe("ints"), p.Probe("twelve")
	x := int32(-5)
	for name, f := range map[string]func(){
		"Enabled":  func() { ints.Enabled() },
		"Fire":     func() { ints.Fire(uint64(int64(x)), 2, 3, 4, 5, 6, 7, 8, 1) },
		"Fire/12":  func() { twelve.Fire(1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, uint64(int64(x))) },
		"Fire/nil": func() { (*dynsdt.Probe)(nil).Fire(1) },
	} {
		if n := testing.AllocsPerRun(100, f); n != 0 {
			t.Errorf("%s: %v allocations, want 0", name, n)
		}
	}
}

// TestCloseWhileFiring closes a provider while 64 goroutines fire its
// probes and ask whether they are enabled: no fault, then nothing enabled.
func TestCloseWhileFiring(t *testing.T) {
	hostSupported(t)
	for round := range 4 {
		p, err := dynsdt.Load(&loadSpec, &dynsdt.Options{Memfd: round%2 == 0, Dir: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		var (
			stop    atomic.Bool
			started sync.WaitGroup
			done    sync.WaitGroup
			enabled atomic.Int64
		)
		for g := range 64 {
			started.Add(1)
			done.Add(1)
			go func() {
				defer done.Done()
				pr := p.Probe(loadSpec.Probes[g%len(loadSpec.Probes)].Name)
				for i := 0; ; i++ {
					if i == 100 {
						started.Done()
					}
					if pr.Enabled() {
						enabled.Add(1)
					}
					pr.Fire(uint64(g), uint64(i), 3, 4, 5, 6, 7, 8, 9, 10, 11, 12)
					if stop.Load() && i > 1000 {
						return
					}
					if i%16 == 0 {
						// Interleave the goroutines, so that Close
						// lands among them.
						runtime.Gosched()
					}
				}
			}()
		}
		started.Wait()
		if err := p.Close(); err != nil {
			t.Fatal(err)
		}
		stop.Store(true)
		done.Wait()
		if n := enabled.Load(); n != 0 {
			t.Errorf("round %d: Enabled true %d times without a tracer", round, n)
		}
	}
}
