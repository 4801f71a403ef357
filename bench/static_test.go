package bench

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/usdtkit/usdtkit/dynsdt/postlink"
	"github.com/usdtkit/usdtkit/internal/testutil"
	"github.com/usdtkit/usdtkit/trace"
)

// buildGoStatic builds bench/gostatic with its static probe's notes, as
// its doc says: go build -toolexec 'usdtkit toolexec'. tags are build tags.
func buildGoStatic(tb testing.TB, tags string) string {
	tb.Helper()
	usdtkit := buildCmd(tb, "cmd/usdtkit")
	out := filepath.Join(tb.TempDir(), "gostatic")
	args := []string{"build", "-toolexec", usdtkit + " toolexec", "-o", out}
	if tags != "" {
		args = append(args, "-tags", tags)
	}
	args = append(args, "github.com/usdtkit/usdtkit/bench/gostatic")
	if b, err := exec.Command("go", args...).CombinedOutput(); err != nil {
		tb.Fatalf("go %v: %v\n%s", args, err, b)
	}
	return out
}

// rotate runs n variants in rounds, each round starting at the next
// variant, for b.N rounds, and returns each variant's median.
func rotate(b *testing.B, n int, run func(k int) float64) []float64 {
	runs := make([][]float64, n)
	first := 0
	for b.Loop() {
		for i := range n {
			k := (first + i) % n
			runs[k] = append(runs[k], run(k))
		}
		first++
	}
	med := make([]float64, n)
	for i := range runs {
		slices.Sort(runs[i])
		med[i] = runs[i][len(runs[i])/2]
	}
	return med
}

// safeBuffer is a bytes.Buffer safe for one writer and one reader.
type safeBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (s *safeBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.Write(p)
}

func (s *safeBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.String()
}

// startCountTrace traces probe bench of the object at path in process pid
// with `@ = count()` and returns a function that ends the trace and
// returns the count it printed.
func startCountTrace(tb testing.TB, path, provider string, pid int) func() string {
	tb.Helper()
	prog, err := trace.Compile("bench.bt", fmt.Sprintf("usdt:%s:%s:bench { @ = count(); }", path, provider), &trace.CompileOptions{PIDs: []int{pid}})
	if err != nil {
		tb.Fatal(err)
	}
	var out safeBuffer
	t, err := trace.Start(prog, &trace.Options{PIDs: []int{pid}, Stdout: &out})
	if err != nil {
		tb.Fatal(err)
	}
	done := make(chan error, 1)
	ctx, cancel := context.WithCancel(context.Background())
	go func() { done <- t.Run(ctx) }()
	return func() string {
		cancel()
		if err := <-done; err != nil {
			tb.Error(err)
		}
		t.Close()
		return out.String()
	}
}

// BenchmarkStaticEnabled compares the check that guards a static probe's
// work (usdtkit gen --static's XxxEnabled: one load of the semaphore in the
// executable's data) with C's semaphore check (the header usdtkit gen
// writes, as sys/sdt.h's) and with dynsdt's run-time probe's check, all
// untraced, in loops of the same shape timed by each child on its own
// clock. Metrics: each side's median ns per check and the ratios
// static/c (issue 15's goal: equal) and static/dynsdt.
func BenchmarkStaticEnabled(b *testing.B) {
	const checksPerLoop = 1 << 20
	b.Setenv("USDTKIT_GOFIRE_DIR", b.TempDir())
	static := testutil.StartTracee(b, buildGoStatic(b, ""))
	goFire, _ := startGoFire(b, buildCmd(b, "bench/gofire"))
	stubCaller := testutil.StartTracee(b, buildStubCaller(b))
	variants := []struct {
		name string
		loop func(testing.TB, int) float64
	}{
		{"static", childLoop(static, "enabled")},
		{"c", childLoop(stubCaller, "enabled")},
		{"dynsdt", childLoop(goFire, "enabled")},
	}
	med := rotate(b, len(variants), func(k int) float64 { return variants[k].loop(b, checksPerLoop) })
	for i, v := range variants {
		b.ReportMetric(med[i]/checksPerLoop, v.name+"-ns/check")
	}
	b.ReportMetric(med[0]/med[1], "static/c")
	b.ReportMetric(med[0]/med[2], "static/dynsdt")
}

// BenchmarkStaticFire compares firing a static probe with firing a dynsdt
// probe untraced (both skip the site: a semaphore or pointer check), and
// the cost per hit of a static probe traced with `@ = count()` with that
// of tracee.c's sys/sdt.h "bench" probe traced with the same program (both
// two int32 arguments, each child timing its own loop). Metrics: median
// ns per hit of each and the ratios static/dynsdt (untraced) and
// static-count/c-count (issue 15's goal: at most 1.1).
func BenchmarkStaticFire(b *testing.B) {
	testutil.RequireBPF(b)
	const hitsPerLoop = 1000
	b.Setenv("USDTKIT_GOFIRE_DIR", b.TempDir())
	staticBin := buildGoStatic(b, "")
	static := testutil.StartTracee(b, staticBin)
	staticTraced := testutil.StartTracee(b, staticBin)
	goFire, _ := startGoFire(b, buildCmd(b, "bench/gofire"))
	traceeBin := testutil.BuildTracee(b, "-O2")
	c := testutil.StartTracee(b, traceeBin)
	stopStatic := startCountTrace(b, staticBin, "gostatic", staticTraced.PID())
	stopC := startCountTrace(b, traceeBin, "tracee", c.PID())
	variants := []struct {
		name string
		loop func(testing.TB, int) float64
	}{
		{"static-untraced", tracedLoop(static)},
		{"dynsdt-untraced", tracedLoop(goFire)},
		{"static-count", tracedLoop(staticTraced)},
		{"c-count", tracedLoop(c)},
	}
	// Each traced site once before timing, so that no loop pays for the
	// kernel's rewrite of the site at its first hit.
	variants[2].loop(b, 1)
	variants[3].loop(b, 1)
	med := rotate(b, len(variants), func(k int) float64 { return variants[k].loop(b, hitsPerLoop) })
	b.StopTimer()
	for i, v := range variants {
		b.ReportMetric(med[i]/hitsPerLoop, v.name+"-ns/hit")
	}
	b.ReportMetric(med[0]/med[1], "static/dynsdt-untraced")
	b.ReportMetric(med[2]/med[3], "static-count/c-count")
	if out := stopStatic(); out == "" || out == "@: 0\n" {
		b.Errorf("the static probe's trace counted nothing: %q", out)
	}
	if out := stopC(); out == "" {
		b.Errorf("tracee's trace printed nothing")
	}
}

// BenchmarkStaticLink times the post-link step (postlink.File, as usdtkit
// link and toolexec run it) on a ~20 MB executable with a static probe
// (bench/gostatic built with -tags usdtkit_bigbench, without the step),
// a fresh copy each iteration: as built (symtab), and built with
// -ldflags=-s -w (stripped: tables found by scanning the data, stubs in
// .gopclntab). Metrics: the median, the first iteration's (CI runs one)
// and the slowest's time. Issue 15's goal: at most 100 ms.
func BenchmarkStaticLink(b *testing.B) {
	for _, v := range []struct{ name, ldflags string }{{"symtab", ""}, {"stripped", "-s -w"}} {
		b.Run(v.name, func(b *testing.B) {
			src := filepath.Join(b.TempDir(), "big")
			args := []string{"build", "-tags", "usdtkit_bigbench", "-ldflags=" + v.ldflags, "-o", src, "github.com/usdtkit/usdtkit/bench/gostatic"}
			if out, err := exec.Command("go", args...).CombinedOutput(); err != nil {
				b.Fatalf("go %v: %v\n%s", args, err, out)
			}
			st, err := os.Stat(src)
			if err != nil {
				b.Fatal(err)
			}
			dst := filepath.Join(b.TempDir(), "big-linked")
			var times []float64
			for b.Loop() {
				b.StopTimer()
				copyFile(b, src, dst)
				b.StartTimer()
				start := time.Now()
				res, err := postlink.File(dst)
				times = append(times, float64(time.Since(start).Nanoseconds()))
				if err != nil || len(res.Probes) != 1 || !res.Changed {
					b.Fatalf("postlink: %+v, %v", res, err)
				}
			}
			first := times[0]
			slices.Sort(times)
			b.ReportMetric(float64(st.Size())/(1<<20), "MB")
			b.ReportMetric(times[len(times)/2]/1e6, "median-ms")
			b.ReportMetric(first/1e6, "first-ms")
			b.ReportMetric(times[len(times)-1]/1e6, "max-ms")
		})
	}
}

func copyFile(tb testing.TB, src, dst string) {
	tb.Helper()
	in, err := os.Open(src)
	if err != nil {
		tb.Fatal(err)
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o755)
	if err != nil {
		tb.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		tb.Fatal(err)
	}
	if err := out.Close(); err != nil {
		tb.Fatal(err)
	}
}
