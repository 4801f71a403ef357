package bench

import (
	"os/exec"
	"strconv"
	"testing"
	"time"

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
// (usdtkit/bpftrace; under 1 is cheaper). Both tools say they are attached
// from BEGIN, which runs once every probe is attached.
func BenchmarkProgramHit(b *testing.B) {
	testutil.RequireBPF(b)
	testutil.RequireTracefs(b)
	testutil.DefaultSIGINTForChildren()
	bin := testutil.BuildTracee(b, "-O2", "-DTRACEE_NO_WIDE")
	tc := testutil.StartTracee(b, bin)
	pid := strconv.Itoa(tc.PID())
	bt := testutil.RequireTool(b, "bpftrace")
	uk := usdtkitBinary(b)
	const hits = 20000
	var tools []tool
	for _, p := range programs {
		prog := `BEGIN { printf("ready\n"); } usdt:` + bin + ":tracee:bench { " + p.body + " }"
		tools = append(tools,
			tool{"usdtkit-" + p.name, []string{uk, "trace", "-p", pid, "-e", prog}},
			tool{"bpftrace-" + p.name, []string{bt, "-p", pid, "-e", prog}})
	}
	total := make([]time.Duration, len(tools))
	for b.Loop() {
		for i, tl := range tools {
			cmd := exec.Command(tl.argv[0], tl.argv[1:]...)
			lines := startLines(b, cmd)
			if !waitLine(lines, "ready") {
				b.Fatalf("%s did not attach", tl.name)
			}
			m := reLoop.FindStringSubmatch(tc.Do(b, "loop "+strconv.Itoa(hits))[0])
			ns, _ := strconv.ParseInt(m[1], 10, 64)
			total[i] += time.Duration(ns)
			stop(cmd)
			for range lines {
			}
		}
	}
	for i, tl := range tools {
		b.ReportMetric(float64(total[i].Nanoseconds())/float64(b.N*hits), tl.name+"-ns/hit")
	}
	for i, p := range programs {
		b.ReportMetric(float64(total[2*i])/float64(total[2*i+1]), p.name+"-usdtkit/bpftrace")
	}
}

// BenchmarkProgramStart times, per tool and in rotation, how long a
// program of five USDT probes takes from the tracer's start to its BEGIN
// block, which both tools run once every probe is attached.
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
	for b.Loop() {
		for i, tl := range tools {
			cmd := exec.Command(tl.argv[0], tl.argv[1:]...)
			start := time.Now()
			lines := startLines(b, cmd)
			if !waitLine(lines, "ready") {
				b.Fatalf("%s did not attach", tl.name)
			}
			total[i] += time.Since(start)
			stop(cmd)
			for range lines {
			}
		}
	}
	reportSideBySide(b, tools, total, "usdtkit")
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
