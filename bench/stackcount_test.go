package bench

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/usdtkit/usdtkit/internal/testutil"
)

// stackChainC is the target of the stack-keyed count benchmarks: a chain
// main → level1 → level2 → level3 → leaf → nofp, every function but nofp
// with a frame pointer (built -O0 -fno-omit-frame-pointer), and a USDT
// probe in leaf's body. "loop N" runs the chain N times and prints "loop NS", the loop's
// time by the program's own clock, then "done".
const stackChainC = `#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/sdt.h>

volatile int sink;

__attribute__((noinline, optimize("omit-frame-pointer"))) int nofp(int x) {
	sink += x;
	return sink & 1;
}
__attribute__((noinline)) int leaf(int x) {
	DTRACE_PROBE1(stackbench, hit, x);
	return nofp(x) + 1;
}
__attribute__((noinline)) int level3(int x) { return leaf(x) + 1; }
__attribute__((noinline)) int level2(int x) { return level3(x) + 1; }
__attribute__((noinline)) int level1(int x) { return level2(x) + 1; }

int main(void) {
	char line[64];
	setvbuf(stdout, NULL, _IOLBF, 0);
	while (fgets(line, sizeof line, stdin)) {
		if (!strncmp(line, "loop ", 5)) {
			long n = atol(line + 5);
			struct timespec a, b;
			clock_gettime(CLOCK_MONOTONIC, &a);
			for (long i = 0; i < n; i++)
				sink += level1(1);
			clock_gettime(CLOCK_MONOTONIC, &b);
			printf("loop %lld\n", (long long)(b.tv_sec - a.tv_sec) * 1000000000LL + (b.tv_nsec - a.tv_nsec));
		}
		printf("done\n");
	}
	return 0;
}
`

// stackSites are the probes of the stack-keyed count benchmarks, in
// stackChainC's executable (%s): leaf's first instruction, push %rbp,
// where the kernel's walk keeps the caller (Linux 6.10 on); nofp's,
// where the kernel's walk misses the caller (bpftrace prints one frame
// fewer there) and usdtkit's has it; the USDT probe in leaf's body. On
// x86-64 usdtkit's program walks the frames itself (by default with the
// objects' CFI, stackcap.EmitCFIWalkID; with --unwind fp by frame
// pointer, stackcap.EmitWalkID), bpftrace's calls bpf_get_stackid.
var stackSites = []struct{ name, probe string }{
	{"entry", "uprobe:%s:leaf"},
	{"entry-nofp", "uprobe:%s:nofp"},
	{"body", "usdt:%s:stackbench:hit"},
}

// BenchmarkStackCountHit times, per site and in rotation, what a hit of
// `@[ustack] = count()` costs the traced program (by its own clock) under
// `usdtkit trace -p` (its default, the CFI walk), under `usdtkit trace
// --unwind fp -p` and under bpftrace -p running the same program text,
// and reports each tool's ns per hit and the ratios usdtkit/bpftrace and
// cfi/fp (usdtkit's default beside its frame-pointer walk) of the
// totals, and the medians of the iterations' ratios of each tool's
// fastest loop. Whole hits: the uprobe's own cost, the same for all, is
// in them.
func BenchmarkStackCountHit(b *testing.B) {
	r, tools := runStackCounts(b, false)
	for i, tl := range tools {
		b.ReportMetric(float64(r.total[i].Nanoseconds())/float64(b.N*programHits*programLoops), tl.name+"-ns/hit")
	}
	for i, s := range stackSites {
		us, fp, bt := stackTools*i, stackTools*i+1, stackTools*i+2
		b.ReportMetric(float64(r.total[us])/float64(r.total[bt]), s.name+"-usdtkit/bpftrace")
		b.ReportMetric(medianRatio(r.best[us], r.best[bt]), s.name+"-median-usdtkit/bpftrace")
		b.ReportMetric(float64(r.total[us])/float64(r.total[fp]), s.name+"-cfi/fp")
		b.ReportMetric(medianRatio(r.best[us], r.best[fp]), s.name+"-median-cfi/fp")
	}
}

// BenchmarkStackCountBPF runs BenchmarkStackCountHit's rotation with the
// kernel's BPF run-time statistics on and reports, per site, each tool's
// BPF program run time per hit and the ratios usdtkit/bpftrace and
// cfi/fp: the part of a hit each tool's generated code costs.
func BenchmarkStackCountBPF(b *testing.B) {
	r, tools := runStackCounts(b, true)
	runTime := r.runTime
	for i, tl := range tools {
		b.ReportMetric(float64(runTime[i])/float64(b.N*programHits*programLoops), tl.name+"-bpf-ns/hit")
	}
	for i, s := range stackSites {
		us, fp, bt := stackTools*i, stackTools*i+1, stackTools*i+2
		b.ReportMetric(float64(runTime[us])/float64(runTime[bt]), s.name+"-bpf-usdtkit/bpftrace")
		b.ReportMetric(float64(runTime[us])/float64(runTime[fp]), s.name+"-bpf-cfi/fp")
	}
}

// buildStackChain compiles stackChainC -O0 -fno-omit-frame-pointer and
// returns the executable's path.
func buildStackChain(b *testing.B) string {
	gcc := testutil.RequireTool(b, "gcc")
	dir := b.TempDir()
	src := filepath.Join(dir, "stackchain.c")
	if err := os.WriteFile(src, []byte(stackChainC), 0o644); err != nil {
		b.Fatal(err)
	}
	exe := filepath.Join(dir, "stackchain")
	if out, err := exec.Command(gcc, "-O0", "-fno-omit-frame-pointer", "-o", exe, src).CombinedOutput(); err != nil {
		b.Fatalf("gcc: %v\n%s", err, out)
	}
	return exe
}

// stackTools is the number of tools runStackCounts runs per site: usdtkit
// (its default), usdtkit --unwind fp, bpftrace, in this order.
const stackTools = 3

// runStackCounts runs `@[ustack] = count()` at each of stackSites under
// each tool in rotation, b.N times, as runPrograms does.
func runStackCounts(b *testing.B, stats bool) (rotation, []tool) {
	testutil.RequireBPF(b)
	testutil.RequireTracefs(b)
	testutil.DefaultSIGINTForChildren()
	exe := buildStackChain(b)
	tc := testutil.StartTracee(b, exe)
	pid := strconv.Itoa(tc.PID())
	bt := testutil.RequireTool(b, "bpftrace")
	uk := usdtkitBinary(b)
	var tools []tool
	for _, s := range stackSites {
		prog := `BEGIN { printf("ready\n"); } ` + fmtProbe(s.probe, exe) + ` { @[ustack] = count(); }`
		tools = append(tools,
			tool{"usdtkit-" + s.name, []string{uk, "trace", "-p", pid, "-e", prog}},
			tool{"usdtkit-fp-" + s.name, []string{uk, "trace", "--unwind", "fp", "-p", pid, "-e", prog}},
			tool{"bpftrace-" + s.name, []string{bt, "-p", pid, "-e", prog}})
	}
	return rotateTools(b, tc, tools, stats), tools
}

// fmtProbe puts exe into a stackSites probe.
func fmtProbe(probe, exe string) string {
	return strings.Replace(probe, "%s", exe, 1)
}
