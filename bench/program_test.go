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
// (usdtkit/bpftrace; under 1 is cheaper): of the total times, and the
// median over iterations of the ratio of each tool's fastest loop in its
// turn (NAME-median-usdtkit/bpftrace), which the shared machine's bursts
// of load, that only ever add time, move least.
// Both tools say they are attached from BEGIN, which runs once every probe
// is attached.
func BenchmarkProgramHit(b *testing.B) {
	total, _, tools, rounds := runPrograms(b, false)
	for i, tl := range tools {
		b.ReportMetric(float64(total[i].Nanoseconds())/float64(b.N*programHits*programLoops), tl.name+"-ns/hit")
	}
	for i, p := range programs {
		b.ReportMetric(float64(total[2*i])/float64(total[2*i+1]), p.name+"-usdtkit/bpftrace")
		b.ReportMetric(medianRatio(rounds[2*i], rounds[2*i+1]), p.name+"-median-usdtkit/bpftrace")
	}
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
// BenchmarkProgramHit's noise on a shared machine.
func BenchmarkProgramBPF(b *testing.B) {
	_, runTime, tools, _ := runPrograms(b, true)
	for i, tl := range tools {
		b.ReportMetric(float64(runTime[i])/float64(b.N*programHits*programLoops), tl.name+"-bpf-ns/hit")
	}
	for i, p := range programs {
		b.ReportMetric(float64(runTime[2*i])/float64(runTime[2*i+1]), p.name+"-bpf-usdtkit/bpftrace")
	}
}

// programHits is the hits of one loop of the tracee; each tool's turn
// runs programLoops loops.
const (
	programHits  = 20000
	programLoops = 3
)

// runPrograms runs the one-liners under both tools in rotation, b.N times,
// and returns per tool the tracee's total loop time, with stats the total
// run time of the tool's BPF programs during the loops, in ns, and each
// iteration's fastest loop.
func runPrograms(b *testing.B, stats bool) (total []time.Duration, runTime []int64, tools []tool, rounds [][]time.Duration) {
	testutil.RequireBPF(b)
	testutil.RequireTracefs(b)
	testutil.DefaultSIGINTForChildren()
	bin := testutil.BuildTracee(b, "-O2", "-DTRACEE_NO_WIDE")
	tc := testutil.StartTracee(b, bin)
	pid := strconv.Itoa(tc.PID())
	bt := testutil.RequireTool(b, "bpftrace")
	uk := usdtkitBinary(b)
	for _, p := range programs {
		prog := `BEGIN { printf("ready\n"); } usdt:` + bin + ":tracee:bench { " + p.body + " }"
		tools = append(tools,
			tool{"usdtkit-" + p.name, []string{uk, "trace", "-p", pid, "-e", prog}},
			tool{"bpftrace-" + p.name, []string{bt, "-p", pid, "-e", prog}})
	}
	total, runTime, rounds = rotateTools(b, tc, tools, stats)
	return total, runTime, tools, rounds
}

// rotateTools runs each tool of tools in turn, b.N rounds, on tracee tc:
// the tool attaches (its program prints "ready" from BEGIN), the tracee
// runs programLoops loops of programHits hits, the tool is stopped. It
// returns per tool the tracee's total loop time, with stats the run time
// of the tool's BPF programs during the loops (kernel BPF statistics), and
// each round's fastest loop.
func rotateTools(b *testing.B, tc *testutil.Tracee, tools []tool, stats bool) (total []time.Duration, runTime []int64, rounds [][]time.Duration) {
	if stats {
		st, err := ebpf.EnableStats(uint32(unix.BPF_STATS_RUN_TIME))
		if err != nil {
			b.Fatalf("enable BPF statistics: %v", err)
		}
		b.Cleanup(func() { st.Close() })
	}
	total = make([]time.Duration, len(tools))
	runTime = make([]int64, len(tools))
	rounds = make([][]time.Duration, len(tools))
	for b.Loop() {
		for i, tl := range tools {
			cmd := exec.Command(tl.argv[0], tl.argv[1:]...)
			lines := startLines(b, cmd)
			if !waitLine(lines, "ready") {
				b.Fatalf("%s did not attach", tl.name)
			}
			before := progRunTime(b, cmd.Process.Pid, stats)
			best := time.Duration(math.MaxInt64)
			for range programLoops {
				m := reLoop.FindStringSubmatch(tc.Do(b, "loop "+strconv.Itoa(programHits))[0])
				if m == nil {
					b.Fatal("no loop time")
				}
				ns, _ := strconv.ParseInt(m[1], 10, 64)
				total[i] += time.Duration(ns)
				best = min(best, time.Duration(ns))
			}
			runTime[i] += progRunTime(b, cmd.Process.Pid, stats) - before
			rounds[i] = append(rounds[i], best)
			stop(cmd)
			for range lines {
			}
		}
	}
	return total, runTime, rounds
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
	pid := strconv.Itoa(tc.PID())
	prog := `BEGIN { printf("ready\n"); } `
	for _, name := range []string{"ints", "stack", "consts", "str", "global"} {
		prog += "usdt:" + bin + ":tracee:" + name + " { @[probe] = count(); } "
	}
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
