package bench

import (
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"

	"github.com/usdtkit/usdtkit/internal/testutil"
	"github.com/usdtkit/usdtkit/sdt"
)

// programs are the one-liners BenchmarkProgramHit runs under both tools, on
// tracee's bench probe (two integer arguments).
var programs = []struct{ name, body string }{
	{"count", "@ = count();"},
	{"keyed-hist", "@[pid] = hist(arg0);"},
	{"string-key", "@[comm] = count();"},
	{"printf", `printf("%d %d\n", arg0, arg1);`},
}

// BenchmarkProgramHit times, per one-liner and in rotation, what a hit of
// tracee's bench probe costs the traced program under `usdtkit trace -e`
// and under bpftrace running the same program text, and reports each ratio
// (usdtkit/bpftrace; under 1 is cheaper): of the total times, the median
// over iterations of the ratio of each tool's fastest loop in its turn
// (NAME-median-usdtkit/bpftrace), which the shared machine's bursts of
// load, that only ever add time, move less, and the same median of the
// tracee's CPU time in its fastest loop (NAME-cpu-usdtkit/bpftrace, see
// taskCPU), which they move least.
// Both tools say they are attached from BEGIN, which runs once every probe
// is attached.
//
// A third tool, floor, attaches an empty program to the site with one
// uprobe_multi link (bareattach): what any program costs there. It reports
// count-cpu-usdtkit/floor and floor-cpu-floor/bpftrace (against bpftrace's
// count): the second bounds what count can reach, as the trap and the
// kernel's uprobe code dominate a hit. stats-on-turns counts the turns
// during which another process had the kernel's BPF statistics on (a
// clock read before and after every program run, for every tool alike).
func BenchmarkProgramHit(b *testing.B) {
	r, tools := runPrograms(b, false)
	for i, tl := range tools {
		b.ReportMetric(float64(r.total[i].Nanoseconds())/float64(b.N*programHits*programLoops), tl.name+"-ns/hit")
	}
	for i, p := range programs {
		b.ReportMetric(float64(r.total[2*i])/float64(r.total[2*i+1]), p.name+"-usdtkit/bpftrace")
		b.ReportMetric(medianRatio(r.best[2*i], r.best[2*i+1]), p.name+"-median-usdtkit/bpftrace")
		b.ReportMetric(medianRatio(r.cpu[2*i], r.cpu[2*i+1]), p.name+"-cpu-usdtkit/bpftrace")
	}
	floor := len(tools) - 1
	b.ReportMetric(medianRatio(r.cpu[0], r.cpu[floor]), "count-cpu-usdtkit/floor")
	b.ReportMetric(medianRatio(r.cpu[floor], r.cpu[1]), "floor-cpu-floor/bpftrace")
	b.ReportMetric(float64(r.statsOn), "stats-on-turns")
}

// medianRatio returns the median over iterations of a[k]/b[k].
func medianRatio(a, b []time.Duration) float64 {
	var r []float64
	for k := range a {
		if k < len(b) && b[k] > 0 {
			r = append(r, float64(a[k])/float64(b[k]))
		}
	}
	if len(r) == 0 {
		return 0
	}
	slices.Sort(r)
	if len(r)%2 == 1 {
		return r[len(r)/2]
	}
	return (r[len(r)/2-1] + r[len(r)/2]) / 2
}

// BenchmarkProgramBPF runs BenchmarkProgramHit's rotation with the
// kernel's BPF run-time statistics on (BPF_ENABLE_STATS) and reports, per
// one-liner, the run time of each tool's BPF programs per hit (from their
// fds' fdinfo) and the ratio: the part of a hit each tool's code costs,
// without the uprobe's own cost, which is the same for both and dominates
// BenchmarkProgramHit's noise on a shared machine. The statistics' own
// clock reads are in each run time: floor-bpf-ns/hit, an empty program's,
// is what they and the program's call cost.
func BenchmarkProgramBPF(b *testing.B) {
	r, tools := runPrograms(b, true)
	for i, tl := range tools {
		b.ReportMetric(float64(r.runTime[i])/float64(b.N*programHits*programLoops), tl.name+"-bpf-ns/hit")
	}
	for i, p := range programs {
		b.ReportMetric(float64(r.runTime[2*i])/float64(r.runTime[2*i+1]), p.name+"-bpf-usdtkit/bpftrace")
	}
}

// programHits is the hits of one loop of the tracee; each tool's turn
// runs programLoops loops.
const (
	programHits  = 20000
	programLoops = 3
)

// runPrograms runs the one-liners under both tools, then the floor (see
// BenchmarkProgramHit), in rotation, b.N times.
func runPrograms(b *testing.B, stats bool) (rotation, []tool) {
	testutil.RequireBPF(b)
	testutil.RequireTracefs(b)
	testutil.DefaultSIGINTForChildren()
	bin := testutil.BuildTracee(b, "-O2", "-DTRACEE_NO_WIDE")
	tc := testutil.StartTracee(b, bin)
	pid := strconv.Itoa(tc.PID())
	bt := testutil.RequireTool(b, "bpftrace")
	uk := usdtkitBinary(b)
	var tools []tool
	for _, p := range programs {
		prog := `BEGIN { printf("ready\n"); } usdt:` + bin + ":tracee:bench { " + p.body + " }"
		tools = append(tools,
			tool{"usdtkit-" + p.name, []string{uk, "trace", "-p", pid, "-e", prog}},
			tool{"bpftrace-" + p.name, []string{bt, "-p", pid, "-e", prog}})
	}
	sel, _ := sdt.ParseSelector("tracee:bench")
	probes, err := sdt.List(&sdt.ListOptions{Paths: []string{bin}, Selectors: []sdt.Selector{sel}})
	if err != nil || len(probes) != 1 || len(probes[0].Locations) != 1 {
		b.Fatalf("tracee:bench: %v, %d probes", err, len(probes))
	}
	loc := probes[0].Locations[0]
	tools = append(tools, tool{"floor", []string{buildCmd(b, "bench/bareattach"), bin,
		strconv.FormatUint(loc.Offset, 10), strconv.FormatUint(loc.SemaphoreOffset, 10), pid, "ready"}})
	return rotateTools(b, tc, tools, stats), tools
}

// rotation is what rotateTools measured, per tool: the tracee's total
// loop time, with stats the run time of the tool's BPF programs during the
// loops (kernel BPF statistics, ns), and each round's fastest loop in wall
// time (best) and in the tracee's CPU time (cpu: see taskCPU); without
// stats, statsOn counts the turns during which another process had the
// statistics on.
type rotation struct {
	total     []time.Duration
	runTime   []int64
	best, cpu [][]time.Duration
	statsOn   int
}

// rotateTools runs each tool of tools in turn, b.N rounds, on tracee tc:
// the tool attaches (it prints "ready", from BEGIN for a program), the
// tracee runs programLoops loops of programHits hits, the tool is stopped.
func rotateTools(b *testing.B, tc *testutil.Tracee, tools []tool, stats bool) rotation {
	if stats {
		st, err := ebpf.EnableStats(uint32(unix.BPF_STATS_RUN_TIME))
		if err != nil {
			b.Fatalf("enable BPF statistics: %v", err)
		}
		b.Cleanup(func() { st.Close() })
	}
	r := rotation{
		total:   make([]time.Duration, len(tools)),
		runTime: make([]int64, len(tools)),
		best:    make([][]time.Duration, len(tools)),
		cpu:     make([][]time.Duration, len(tools)),
	}
	for b.Loop() {
		for i, tl := range tools {
			cmd := exec.Command(tl.argv[0], tl.argv[1:]...)
			lines := startLines(b, cmd)
			if !waitLine(lines, "ready") {
				b.Fatalf("%s did not attach", tl.name)
			}
			before := progRunTime(b, cmd.Process.Pid, stats)
			on := !stats && statsEnabled(b)
			best, bestCPU := time.Duration(math.MaxInt64), time.Duration(math.MaxInt64)
			for range programLoops {
				c0 := taskCPU(b, tc.PID())
				m := reLoop.FindStringSubmatch(tc.Do(b, "loop "+strconv.Itoa(programHits))[0])
				if m == nil {
					b.Fatal("no loop time")
				}
				bestCPU = min(bestCPU, taskCPU(b, tc.PID())-c0)
				ns, _ := strconv.ParseInt(m[1], 10, 64)
				r.total[i] += time.Duration(ns)
				best = min(best, time.Duration(ns))
			}
			r.runTime[i] += progRunTime(b, cmd.Process.Pid, stats) - before
			if on || !stats && statsEnabled(b) {
				r.statsOn++
			}
			r.best[i] = append(r.best[i], best)
			r.cpu[i] = append(r.cpu[i], bestCPU)
			stop(cmd)
			for range lines {
			}
		}
	}
	return r
}

// statsEnabled says whether the kernel's BPF run-time statistics are on
// (kernel.bpf_stats_enabled, which BPF_ENABLE_STATS also raises).
func statsEnabled(b *testing.B) bool {
	text, err := os.ReadFile("/proc/sys/kernel/bpf_stats_enabled")
	if err != nil {
		b.Fatal(err)
	}
	return strings.TrimSpace(string(text)) != "0"
}

// taskCPU returns the CPU time process pid (the single-threaded tracee)
// has used, in user space and in the kernel (its uprobe traps and the BPF
// programs they run): its process CPU clock (clock_getcpuclockid(3);
// CPUCLOCK_SCHED, exact to the ns, also while it runs). A loop's
// difference counts, besides the loop, only the tracee reading the command
// and printing its answer, microseconds against a loop's milliseconds,
// and none of the time other tasks held its CPU.
func taskCPU(b *testing.B, pid int) time.Duration {
	var ts unix.Timespec
	// MAKE_PROCESS_CPUCLOCK(pid, CPUCLOCK_SCHED) of
	// include/linux/posix-timers_types.h.
	if err := unix.ClockGettime(int32(^pid<<3|2), &ts); err != nil {
		b.Fatalf("CPU clock of process %d: %v", pid, err)
	}
	return time.Duration(ts.Nano())
}

// progRunTime sums run_time_ns over the BPF programs process pid holds
// open (0 without stats).
func progRunTime(b *testing.B, pid int, stats bool) int64 {
	if !stats {
		return 0
	}
	infos, err := filepath.Glob(fmt.Sprintf("/proc/%d/fdinfo/*", pid))
	if err != nil {
		b.Fatal(err)
	}
	var sum int64
	for _, f := range infos {
		text, err := os.ReadFile(f)
		if err != nil {
			continue // an fd closed meanwhile
		}
		for line := range strings.Lines(string(text)) {
			if v, ok := strings.CutPrefix(line, "run_time_ns:"); ok {
				n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
				if err != nil {
					b.Fatalf("%s: %v", f, err)
				}
				sum += n
			}
		}
	}
	return sum
}

// BenchmarkProgramStart times, per tool and in rotation, how long a
// program of five USDT probes takes from the tracer's start to its BEGIN
// block, which both tools run once every probe is attached, and reports
// the ratio of the totals (bpftrace/usdtkit) and the median of the
// iterations' ratios (median-usdtkit/bpftrace).
func BenchmarkProgramStart(b *testing.B) {
	testutil.RequireBPF(b)
	testutil.RequireTracefs(b)
	testutil.DefaultSIGINTForChildren()
	bin := testutil.BuildTracee(b, "-O2", "-DTRACEE_NO_WIDE")
	tc := testutil.StartTracee(b, bin)
	prog := `BEGIN { printf("ready\n"); } `
	for _, name := range []string{"ints", "stack", "consts", "str", "global"} {
		prog += "usdt:" + bin + ":tracee:" + name + " { @[probe] = count(); } "
	}
	programStart(b, tc.PID(), prog)
}

// BenchmarkProgramStartUprobe is BenchmarkProgramStart for a program of one
// function of libc, uprobe:libc:malloc, which both tools find in the
// tracee's maps and look up in libc's symbols (and those of its separate
// debug file, where one is installed).
func BenchmarkProgramStartUprobe(b *testing.B) {
	testutil.RequireBPF(b)
	testutil.RequireTracefs(b)
	testutil.DefaultSIGINTForChildren()
	tc := testutil.StartTracee(b, testutil.BuildTracee(b, "-O2", "-DTRACEE_NO_WIDE"))
	tc.WaitReady(b)
	programStart(b, tc.PID(), `BEGIN { printf("ready\n"); } uprobe:libc:malloc { @ = count(); }`)
}

// programStart times prog's start under both tools in process tracee, as
// BenchmarkProgramStart says.
func programStart(b *testing.B, tracee int, prog string) {
	pid := strconv.Itoa(tracee)
	tools := []tool{
		{"usdtkit", []string{usdtkitBinary(b), "trace", "-p", pid, "-e", prog}},
		{"bpftrace", []string{testutil.RequireTool(b, "bpftrace"), "-p", pid, "-e", prog}},
	}
	total := make([]time.Duration, len(tools))
	rounds := make([][]time.Duration, len(tools))
	for b.Loop() {
		for i, tl := range tools {
			cmd := exec.Command(tl.argv[0], tl.argv[1:]...)
			start := time.Now()
			lines := startLines(b, cmd)
			if !waitLine(lines, "ready") {
				b.Fatalf("%s did not attach", tl.name)
			}
			took := time.Since(start)
			total[i] += took
			rounds[i] = append(rounds[i], took)
			stop(cmd)
			for range lines {
			}
		}
	}
	reportSideBySide(b, tools, total, "usdtkit")
	b.ReportMetric(medianRatio(rounds[0], rounds[1]), "median-usdtkit/bpftrace")
}

// startLines starts cmd and returns its stdout and stderr lines.
func startLines(b *testing.B, cmd *exec.Cmd) chan string {
	b.Helper()
	out, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	errOut, err := cmd.StderrPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	lines := make(chan string, 1024)
	go scanLines(lines, out, errOut)
	return lines
}
