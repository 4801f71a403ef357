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
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/usdtkit/usdtkit/dynsdt"
	"github.com/usdtkit/usdtkit/dynsdt/postlink"
	"github.com/usdtkit/usdtkit/elfnotes"
	"github.com/usdtkit/usdtkit/internal/elf/insn"
	"github.com/usdtkit/usdtkit/internal/testutil"
	"github.com/usdtkit/usdtkit/trace"
	"github.com/usdtkit/usdtkit/uprobe"
	"golang.org/x/arch/x86/x86asm"
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

// cStaticSource is the C side of BenchmarkStaticEnabled: a sys/sdt.h
// probe with a semaphore in the executable's .probes section, checked as
// the PROVIDER_PROBE_ENABLED() macros of dtrace -h headers do (volatile,
// as usdtkit gen's header declares it, so that each check loads it), and
// fired through a function of its own, as gostatic's Bench calls
// usdtkitFireBench. It answers bench/gostatic's commands: "enabled N"
// (check_loop, one check per loop iteration) and "enabled16 N"
// (check_rounds, 16 checks per iteration, N a multiple of 16), printing
// "loop NS", then "done".
const cStaticSource = `#define _SDT_HAS_SEMAPHORES 1
#include <stdio.h>
#include <time.h>
#include <sys/sdt.h>

volatile unsigned short cstatic_bench_semaphore __attribute__((unused)) __attribute__((section(".probes")));
#define CSTATIC_BENCH_ENABLED() __builtin_expect(cstatic_bench_semaphore, 0)

__attribute__((noinline)) void cstatic_fire(int k, int s)
{
	STAP_PROBE2(cstatic, bench, k, s);
}

#define CHECK() if (CSTATIC_BENCH_ENABLED()) cstatic_fire(k, s)

__attribute__((noinline)) void check_loop(int n, int s)
{
	for (int k = 0; k < n; k++)
		CHECK();
}

__attribute__((noinline)) void check_rounds(int rounds, int s)
{
	for (int k = 0; k < rounds; k++) {
		CHECK(); CHECK(); CHECK(); CHECK(); CHECK(); CHECK(); CHECK(); CHECK();
		CHECK(); CHECK(); CHECK(); CHECK(); CHECK(); CHECK(); CHECK(); CHECK();
	}
}

volatile int seed = 1;

int main(void)
{
	char line[64];
	setvbuf(stdout, NULL, _IOLBF, 0);
	while (fgets(line, sizeof line, stdin)) {
		int n = 0, x16;
		if ((x16 = sscanf(line, "enabled16 %d", &n)) == 1 || sscanf(line, "enabled %d", &n) == 1) {
			struct timespec a, b;
			clock_gettime(CLOCK_MONOTONIC, &a);
			if (x16 == 1)
				check_rounds(n / 16, seed);
			else
				check_loop(n, seed);
			clock_gettime(CLOCK_MONOTONIC, &b);
			printf("loop %lld\n", (b.tv_sec - a.tv_sec) * 1000000000LL + (b.tv_nsec - a.tv_nsec));
		}
		printf("done\n");
	}
	return 0;
}
`

// buildCStatic builds cStaticSource with gcc -O2.
func buildCStatic(tb testing.TB) string {
	tb.Helper()
	gcc := testutil.RequireTool(tb, "gcc")
	testutil.RequireFile(tb, "/usr/include/x86_64-linux-gnu/sys/sdt.h")
	dir := tb.TempDir()
	src := filepath.Join(dir, "cstatic.c")
	if err := os.WriteFile(src, []byte(cStaticSource), 0o600); err != nil {
		tb.Fatal(err)
	}
	bin := filepath.Join(dir, "cstatic")
	if out, err := exec.Command(gcc, "-O2", "-o", bin, src).CombinedOutput(); err != nil {
		tb.Fatalf("gcc: %v\n%s", err, out)
	}
	return bin
}

// checkLoopBytes returns the addresses [lo, hi) of the check loop of
// function fn in the x86-64 executable at path: the smallest loop (a
// backward branch and its target) that holds a 2-byte load, the
// semaphore's; and how many 2-byte loads the loop and the whole function
// hold.
func checkLoopBytes(tb testing.TB, path, fn string) (lo, hi uint64, inLoop, inFunc int) {
	tb.Helper()
	f, err := elfnotes.Open(path)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	syms, err := uprobe.Symbols(f)
	if err != nil {
		tb.Fatal(err)
	}
	i := slices.IndexFunc(syms, func(s uprobe.Symbol) bool { return s.Name == fn })
	if i < 0 || syms[i].Size == 0 {
		tb.Fatalf("%s: no function %s", path, fn)
	}
	sym := syms[i]
	code := make([]byte, sym.Size)
	r, err := os.Open(path)
	if err != nil {
		tb.Fatal(err)
	}
	defer r.Close()
	if _, err := r.ReadAt(code, int64(sym.Offset)); err != nil {
		tb.Fatal(err)
	}
	type inst struct {
		at uint64
		x86asm.Inst
	}
	var insts []inst
	for off := 0; off < len(code); {
		in, err := insn.DecodeX86(code[off:])
		if err != nil {
			tb.Fatalf("%s at %#x: %v", fn, sym.Value+uint64(off), err)
		}
		insts = append(insts, inst{sym.Value + uint64(off), in})
		off += in.Len
	}
	isLoad := func(in inst) bool {
		return in.MemBytes == 2 && slices.ContainsFunc(in.Args[:], func(a x86asm.Arg) bool { _, m := a.(x86asm.Mem); return m })
	}
	for _, b := range insts {
		rel, ok := b.Args[0].(x86asm.Rel)
		end := b.at + uint64(b.Len)
		target := uint64(int64(end) + int64(rel))
		if !ok || b.Op < x86asm.JA || b.Op > x86asm.JS || target >= b.at || target <= sym.Value {
			continue
		}
		load := slices.ContainsFunc(insts, func(in inst) bool { return in.at >= target && in.at < end && isLoad(in) })
		if load && (hi == 0 || end-target < hi-lo) {
			lo, hi = target, end
		}
	}
	if hi == 0 {
		tb.Fatalf("%s: no loop around a 2-byte load", fn)
	}
	for _, in := range insts {
		if isLoad(in) {
			inFunc++
			if in.at >= lo && in.at < hi {
				inLoop++
			}
		}
	}
	return lo, hi, inLoop, inFunc
}

// inOneLine reports whether [lo, hi) lies within one 64-byte cache line.
func inOneLine(lo, hi uint64) bool { return lo/64 == (hi-1)/64 }

// BenchmarkStaticEnabled compares the check that guards a static probe's
// work (usdtkit gen --static's XxxEnabled: one load of the semaphore in the
// executable's data and a branch) with C's check of a sys/sdt.h
// semaphore (cStaticSource), both untraced, in loops of the same source
// shape timed by each child on its own clock:
//
//   - one check per loop iteration (bench/gostatic's checkLoopV, C's
//     check_loop), the loop bound in a register. A loop split across two
//     64-byte lines costs a second fetch per iteration (twice the time on
//     this machine's AMD EPYC), so both loops must lie within one line,
//     read from the executables: C's by gcc's loop alignment, Go's (the Go
//     compiler aligns no loop without PGO) by choosing the first of
//     gostatic's four copies whose loop does;
//   - 16 checks per loop iteration (checkRounds, check_rounds), where the
//     loop's own instructions count for 1/16.
//
// The benchmark checks in the executables that each check is one load of
// the semaphore (one per iteration of the one-check loops, 16 in the
// 16-check ones), as C's volatile read is: no check is merged with
// another. Metrics: each side's median ns per check, and the ratios
// static/c (one check per iteration; issue 15's goal: equal) and
// static/c-x16.
func BenchmarkStaticEnabled(b *testing.B) {
	const checksPerLoop = 1 << 20
	staticBin := buildGoStatic(b, "")
	cBin := buildCStatic(b)
	// Each check is one load of the semaphore: one per iteration of the
	// one-check loops, 16 in the 16-check functions.
	if lo, hi, n, _ := checkLoopBytes(b, cBin, "check_loop"); !inOneLine(lo, hi) || n != 1 {
		b.Fatalf("C's check loop [%#x, %#x) with %d loads: want one, within one 64-byte line", lo, hi, n)
	}
	variant := -1
	for v := range 4 {
		lo, hi, n, _ := checkLoopBytes(b, staticBin, fmt.Sprintf("main.checkLoop%d", v))
		if n != 1 {
			b.Fatalf("gostatic's checkLoop%d: %d loads, want 1", v, n)
		}
		if variant < 0 && inOneLine(lo, hi) {
			variant = v
		}
	}
	if variant < 0 {
		b.Fatal("every gostatic checkLoop spans two 64-byte lines")
	}
	for bin, fn := range map[string]string{cBin: "check_rounds", staticBin: "main.checkRounds"} {
		if _, _, _, n := checkLoopBytes(b, bin, fn); n != 16 {
			b.Fatalf("%s: %d loads, want 16", fn, n)
		}
	}
	static := testutil.StartTracee(b, staticBin)
	c := testutil.StartTracee(b, cBin)
	variants := []struct {
		name string
		loop func(testing.TB, int) float64
	}{
		{"static", childLoop(static, "enabled@"+strconv.Itoa(variant))},
		{"c", childLoop(c, "enabled")},
		{"static-x16", childLoop(static, "enabled16")},
		{"c-x16", childLoop(c, "enabled16")},
	}
	med := rotate(b, len(variants), func(k int) float64 { return variants[k].loop(b, checksPerLoop) })
	for i, v := range variants {
		b.ReportMetric(med[i]/checksPerLoop, v.name+"-ns/check")
	}
	b.ReportMetric(med[0]/med[1], "static/c")
	b.ReportMetric(med[2]/med[3], "static/c-x16")
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
// a fresh copy each iteration: as built (symtab), the same with the
// stubs' site set to nop5 (usdtkit link --site=nop5: each stub's 16 bytes
// rewritten in place), and built with -ldflags=-s -w (stripped: tables
// found by scanning the data, stubs in .gopclntab). Metrics: the median,
// the first iteration's (CI runs one) and the slowest's time. Issue 15's
// goal: at most 100 ms.
func BenchmarkStaticLink(b *testing.B) {
	b.Setenv(dynsdt.SiteEnv, "nop")
	for _, v := range []struct {
		name, ldflags string
		site          dynsdt.Site
		rewritten     int
	}{{"symtab", "", dynsdt.SiteAuto, 0}, {"symtab-site-nop5", "", dynsdt.SiteNop5, 1}, {"stripped", "-s -w", dynsdt.SiteAuto, 0}} {
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
				res, err := postlink.File(dst, &postlink.Options{Site: v.site})
				times = append(times, float64(time.Since(start).Nanoseconds()))
				if err != nil || len(res.Probes) != 1 || !res.Changed || res.Rewritten != v.rewritten {
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
