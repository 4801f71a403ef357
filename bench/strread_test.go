package bench

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"

	"github.com/usdtkit/usdtkit/internal/bpf/features"
	"github.com/usdtkit/usdtkit/internal/testutil"
	"github.com/usdtkit/usdtkit/trace"
)

// strTarget fires USDT probe hot:hit with a string in a page it uses,
// "loop N" times, and prints "loop NS".
const strTarget = `#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <sys/sdt.h>
int main(void) {
	static char s[] = "GET /index.html";
	char line[64];
	int n;
	while (fgets(line, sizeof line, stdin)) {
		if (sscanf(line, "loop %d", &n) != 1)
			return 1;
		struct timespec a, b;
		clock_gettime(CLOCK_MONOTONIC, &a);
		for (int i = 0; i < n; i++)
			DTRACE_PROBE1(hot, hit, s);
		clock_gettime(CLOCK_MONOTONIC, &b);
		printf("loop %lld\ndone\n", (b.tv_sec - a.tv_sec) * 1000000000LL + (b.tv_nsec - a.tv_nsec));
		fflush(stdout);
	}
	return 0;
}
`

// BenchmarkStrRead runs @[str(arg0)] = count() on a string in a present
// page, in rotation, with bpftrace's reads (CompileOptions.FaultingStrings:
// bpf_probe_read_user_str) and usdtkit's default (a sleepable program
// that calls bpf_copy_from_user_str where that faulted), and reports the
// BPF run time per hit of each (BPF_ENABLE_STATS) and the ratio
// sleepable/faulting: what being able to fault pages in costs when none
// is missing.
func BenchmarkStrRead(b *testing.B) {
	testutil.RequireBPF(b)
	if _, err := features.SleepableCopyStr(); err != nil {
		b.Skipf("no sleepable string reads: %v", err)
	}
	gcc := testutil.RequireTool(b, "gcc")
	st, err := ebpf.EnableStats(uint32(unix.BPF_STATS_RUN_TIME))
	if err != nil {
		b.Fatalf("enable BPF statistics: %v", err)
	}
	b.Cleanup(func() { st.Close() })
	dir := b.TempDir()
	src, bin := filepath.Join(dir, "hot.c"), filepath.Join(dir, "hot")
	if err := os.WriteFile(src, []byte(strTarget), 0o644); err != nil {
		b.Fatal(err)
	}
	if out, err := exec.Command(gcc, "-O2", "-o", bin, src).CombinedOutput(); err != nil {
		b.Fatalf("gcc: %v\n%s", err, out)
	}
	tc := testutil.StartTracee(b, bin)
	const hits = 100000
	modes := []struct {
		name    string
		faulty  bool
		runTime int64
	}{{"faulting", true, 0}, {"sleepable", false, 0}}
	for b.Loop() {
		for i := range modes {
			m := &modes[i]
			prog, err := trace.Compile("str.bt", "usdt:"+bin+":hot:hit { @[str(arg0)] = count(); }",
				&trace.CompileOptions{PID: tc.PID(), FaultingStrings: m.faulty})
			if err != nil {
				b.Fatal(err)
			}
			tr, err := trace.Start(prog, &trace.Options{Stdout: io.Discard})
			if err != nil {
				b.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- tr.Run(ctx) }()
			before := selfRunTime(b)
			tc.Do(b, "loop "+strconv.Itoa(hits))
			m.runTime += selfRunTime(b) - before
			cancel()
			if err := <-done; err != nil && ctx.Err() == nil {
				b.Fatal(err)
			}
			if err := tr.Close(); err != nil {
				b.Fatal(err)
			}
		}
	}
	for _, m := range modes {
		b.ReportMetric(float64(m.runTime)/float64(b.N*hits), m.name+"-bpf-ns/hit")
	}
	b.ReportMetric(float64(modes[1].runTime)/float64(modes[0].runTime), "sleepable/faulting")
}

// selfRunTime sums run_time_ns over the BPF programs this process holds
// open.
func selfRunTime(b *testing.B) int64 {
	infos, err := filepath.Glob(fmt.Sprintf("/proc/%d/fdinfo/*", os.Getpid()))
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
