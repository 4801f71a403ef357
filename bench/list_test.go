package bench

import (
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/usdtkit/usdtkit/internal/testutil"
	"github.com/usdtkit/usdtkit/sdt"
)

var (
	buildMu  sync.Mutex
	buildDir string
	built    = make(map[string]string)
)

// buildCmd builds a command of this module once per test binary, as make
// build ships it (stripped), and returns its path.
func buildCmd(tb testing.TB, pkg string) string {
	tb.Helper()
	buildMu.Lock()
	defer buildMu.Unlock()
	if p, ok := built[pkg]; ok {
		return p
	}
	if buildDir == "" {
		dir, err := os.MkdirTemp("", "usdtkit-bench")
		if err != nil {
			tb.Fatal(err)
		}
		buildDir = dir
	}
	p := filepath.Join(buildDir, filepath.Base(pkg))
	// As make build builds it: static, without cgo (a dynamically linked
	// usdtkit starts ~1 ms later, in ld.so and libc's start).
	build := exec.Command("go", "build", "-trimpath", "-ldflags=-s -w", "-o", p, "github.com/usdtkit/usdtkit/"+pkg)
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	out, err := build.CombinedOutput()
	if err != nil {
		tb.Fatalf("build %s: %v\n%s", pkg, err, out)
	}
	built[pkg] = p
	return p
}

func usdtkitBinary(tb testing.TB) string { return buildCmd(tb, "cmd/usdtkit") }

func TestMain(m *testing.M) {
	code := m.Run()
	if buildDir != "" {
		os.RemoveAll(buildDir)
	}
	os.Exit(code)
}

// tool is one command of the side-by-side comparison.
type tool struct {
	name string
	argv []string
}

// BenchmarkListLibJVM lists the 531 probe notes of OpenJDK's libjvm.so with
// usdtkit, readelf -n and tplist-bpfcc -l in rotation, whole processes each
// (what a user waits for), and reports ms per listing of each and the peers'
// time as a multiple of usdtkit's.
func BenchmarkListLibJVM(b *testing.B) {
	lib := testutil.RequireFile(b, testutil.LibJVM)
	tools := []tool{
		{"usdtkit", []string{usdtkitBinary(b), "list", "-v", lib}},
		{"readelf", []string{testutil.RequireTool(b, "readelf"), "-n", lib}},
		{"tplist", []string{testutil.RequireTool(b, "tplist-bpfcc"), "-v", "-l", lib}},
	}
	total := make([]time.Duration, len(tools))
	for b.Loop() {
		for i, tl := range tools {
			start := time.Now()
			if out, err := exec.Command(tl.argv[0], tl.argv[1:]...).CombinedOutput(); err != nil {
				b.Fatalf("%s: %v\n%s", tl.name, err, out)
			}
			total[i] += time.Since(start)
		}
	}
	n := float64(b.N)
	for i, tl := range tools {
		b.ReportMetric(float64(total[i].Microseconds())/1000/n, tl.name+"-ms")
		if i > 0 {
			b.ReportMetric(float64(total[i])/float64(total[0]), tl.name+"/usdtkit")
		}
	}
}

// BenchmarkListLibJVMInProcess is the library's cost of the same listing,
// without process start: what a Go program calling sdt.List pays.
func BenchmarkListLibJVMInProcess(b *testing.B) {
	lib := testutil.RequireFile(b, testutil.LibJVM)
	b.ReportAllocs()
	for b.Loop() {
		probes, err := sdt.List(&sdt.ListOptions{Paths: []string{lib}})
		if err != nil {
			b.Fatal(err)
		}
		if len(probes) == 0 {
			b.Fatal("no probes")
		}
	}
}
