package gen

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/usdtkit/usdtkit/dynsdt"
)

// manyProbes returns a provider of n probes cycling through argument
// lists of every type and length.
func manyProbes(n int) *dynsdt.ProviderSpec {
	all := []dynsdt.ArgType{dynsdt.Int8, dynsdt.Int16, dynsdt.Int32, dynsdt.Int64, dynsdt.Uint8, dynsdt.Uint16, dynsdt.Uint32, dynsdt.Uint64, dynsdt.Bool, dynsdt.Pointer, dynsdt.String, dynsdt.Bytes}
	p := &dynsdt.ProviderSpec{Name: "many"}
	for i := range n {
		args := make([]dynsdt.ArgType, i%(dynsdt.MaxArgs+1))
		for j := range args {
			args[j] = all[(i+j)%len(all)]
		}
		p.Probes = append(p.Probes, dynsdt.ProbeSpec{Name: fmt.Sprintf("probe__%d", i), Args: args})
	}
	return p
}

// buildGenerated writes the Go file generated for p into a module that
// uses this module's runtime, and compiles that package with go build,
// returning the CPU time (user and system) and the peak RSS of go build
// and the compiler it runs: unlike the wall time, neither depends on what
// else the machine runs. A random comment keeps the build cache from
// answering.
func buildGenerated(t *testing.T, p *dynsdt.ProviderSpec) (cpu time.Duration, rss int64) {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	src, err := Go(p, "probes")
	if err != nil {
		t.Fatal(err)
	}
	var nonce [8]byte
	rand.Read(nonce[:])
	src = append(src, "\n// "+hex.EncodeToString(nonce[:])+"\n"...)
	sum, err := os.ReadFile(filepath.Join(root, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for name, data := range map[string][]byte{
		"go.mod":           []byte("module example.com/gentest\n\ngo 1.26\n\nrequire github.com/usdtkit/usdtkit v0.0.0\n\nreplace github.com/usdtkit/usdtkit => " + root + "\n"),
		"go.sum":           sum,
		"probes/probes.go": src,
	} {
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	env := append(os.Environ(), "GOPROXY=off", "CGO_ENABLED=0", "GOFLAGS=")
	// Compile the runtime's packages first, so that only the generated
	// package is measured.
	deps := exec.Command("go", "build", "-mod=mod", "github.com/usdtkit/usdtkit/dynsdt")
	deps.Dir, deps.Env = dir, env
	if out, err := deps.CombinedOutput(); err != nil {
		t.Fatalf("go build dynsdt: %v\n%s", err, out)
	}
	build := exec.Command("go", "build", "-mod=mod", "-o", os.DevNull, "./probes")
	build.Dir, build.Env = dir, env
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	// wait4 reports a child's usage together with that of the children
	// it waited for (the compiler); Linux gives ru_maxrss in KiB.
	ps := build.ProcessState
	return ps.UserTime() + ps.SystemTime(), ps.SysUsage().(*syscall.Rusage).Maxrss * 1024
}

// TestGenerateGoCompileCost compiles the Go file generated for 4000
// probes. Code with one statement per probe in Load and Close took 94 s
// and 6.8 GB (8 GB on a loaded machine) to compile; table-driven code takes
// about 20 s of CPU and 700 MB. The bounds leave room for a slow machine.
func TestGenerateGoCompileCost(t *testing.T) {
	if testing.Short() {
		t.Skip("compiles a large generated package")
	}
	const (
		n      = 4000
		maxCPU = 60 * time.Second
		maxRSS = 2 << 30
	)
	cpu, rss := buildGenerated(t, manyProbes(n))
	t.Logf("%d probes: go build used %v of CPU, peak RSS %d MiB", n, cpu.Round(time.Millisecond), rss>>20)
	if cpu > maxCPU || rss > maxRSS {
		t.Errorf("%d probes: go build used %v of CPU and a peak RSS of %d MiB; want at most %v and %d MiB", n, cpu, rss>>20, maxCPU, maxRSS>>20)
	}
}
