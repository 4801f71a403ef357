package bench

import (
	"os/exec"
	"strconv"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"

	"github.com/usdtkit/usdtkit/internal/stackcap/stacktest"
	"github.com/usdtkit/usdtkit/internal/testutil"
)

// stackCountHits is the number of hits of leaf per tool and iteration of
// BenchmarkStackCount.
const stackCountHits = 20000

// BenchmarkStackCount times, in rotation, what a hit of a stack-keyed
// count (`@[ustack] = count()`) on the entry of chain.c's leaf (5 frames
// deep, built with frame pointers, `loop N` per iteration) costs under
// `usdtkit trace -e` and under bpftrace running the same program text. It
// reports each tool's time per hit as the tracee sees it (the loop timed
// around the command, the uprobe's own cost included) and the run time of
// its BPF programs per hit (BPF_ENABLE_STATS, from the tool's fds), and
// the ratios usdtkit/bpftrace of both (under 1 is cheaper).
func BenchmarkStackCount(b *testing.B) {
	testutil.RequireBPF(b)
	testutil.RequireTracefs(b)
	testutil.DefaultSIGINTForChildren()
	st, err := ebpf.EnableStats(uint32(unix.BPF_STATS_RUN_TIME))
	if err != nil {
		b.Fatalf("enable BPF statistics: %v", err)
	}
	b.Cleanup(func() { st.Close() })
	bin := stacktest.BuildChain(b, "-O0", "-fno-omit-frame-pointer")
	tc := testutil.StartTracee(b, bin)
	tc.Do(b, "loop 0")
	pid := strconv.Itoa(tc.PID())
	prog := `BEGIN { printf("ready\n"); } uprobe:` + bin + `:leaf { @[ustack] = count(); }`
	tools := []tool{
		{"usdtkit", []string{usdtkitBinary(b), "trace", "-p", pid, "-e", prog}},
		{"bpftrace", []string{testutil.RequireTool(b, "bpftrace"), "-p", pid, "-e", prog}},
	}
	total := make([]time.Duration, len(tools))
	runTime := make([]int64, len(tools))
	for b.Loop() {
		for i, tl := range tools {
			cmd := exec.Command(tl.argv[0], tl.argv[1:]...)
			lines := startLines(b, cmd)
			if !waitLine(lines, "ready") {
				b.Fatalf("%s did not attach", tl.name)
			}
			before := progRunTime(b, cmd.Process.Pid, true)
			start := time.Now()
			tc.Do(b, "loop "+strconv.Itoa(stackCountHits))
			total[i] += time.Since(start)
			runTime[i] += progRunTime(b, cmd.Process.Pid, true) - before
			stop(cmd)
			for range lines {
			}
		}
	}
	hits := float64(b.N * stackCountHits)
	for i, tl := range tools {
		b.ReportMetric(float64(total[i].Nanoseconds())/hits, tl.name+"-ns/hit")
		b.ReportMetric(float64(runTime[i])/hits, tl.name+"-bpf-ns/hit")
	}
	b.ReportMetric(float64(total[0])/float64(total[1]), "usdtkit/bpftrace")
	b.ReportMetric(float64(runTime[0])/float64(runTime[1]), "bpf-usdtkit/bpftrace")
}
