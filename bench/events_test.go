package bench

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"

	"github.com/usdtkit/usdtkit/internal/testutil"
	"github.com/usdtkit/usdtkit/trace"
)

// BenchmarkEventsLibrary drives tracee.c's "bench" probe (2 integer
// arguments) in a loop of hits and reports the cost per hit, by the
// tracee's own clock, with no tracer, with trace.CompileEvents receiving
// every event in a Go callback in this process, and with bpftrace
// printing the same two arguments (printf) — side by side in one run, in
// rotation, with the ratio trace/bpftrace of the totals and the median of
// the iterations' ratios; the run time of each one's BPF programs per hit
// (BPF_STATS_RUN_TIME), less noisy on a busy machine, and their ratio;
// and the CPU time this process spent per hit with trace, from the
// loop's start until Run returned (reading, decoding, detaching), which
// competes with the tracee on a busy machine. trace's lost events are
// reported too (they must be 0); bpftrace's are the hits it printed no
// line for.
func BenchmarkEventsLibrary(b *testing.B) {
	testutil.RequireBPF(b)
	testutil.RequireTracefs(b)
	testutil.DefaultSIGINTForChildren()
	bt := testutil.RequireTool(b, "bpftrace")
	// bpftrace refuses tracee.c's "wide" probe (and the whole binary).
	bin := testutil.BuildTracee(b, "-O2", "-DTRACEE_NO_WIDE")
	tc := testutil.StartTracee(b, bin)
	tc.Do(b, "run 0") // answering, it has its executable mapped
	pid := tc.PID()
	const hits = 20000
	prog, err := trace.CompileEvents([]trace.EventProbe{{Probe: "usdt::tracee:bench"}}, &trace.CompileOptions{PID: pid})
	if err != nil {
		b.Fatal(err)
	}
	// bpftrace says it is attached from BEGIN, which runs once every
	// probe is attached.
	btArgs := []string{"-p", strconv.Itoa(pid), "-e",
		`BEGIN { printf("ready\n"); } usdt:` + bin + `:tracee:bench { printf("%d %d\n", arg0, arg1); }`}
	var sum uint64
	// readEnd is the process's CPU time when trace's Run returned.
	var readEnd time.Duration
	// Each tool attaches, the loop runs, the tool reads what remains and
	// detaches; run returns the events it received and lost, and the run
	// time of its BPF programs during the loop.
	tools := []struct {
		name string
		run  func(loop func()) (events, lost uint64, progNS time.Duration)
	}{
		{"none", func(loop func()) (uint64, uint64, time.Duration) { loop(); return hits, 0, 0 }},
		{"trace", func(loop func()) (uint64, uint64, time.Duration) {
			n := uint64(0)
			last := lastProgID()
			t, err := trace.Start(prog, &trace.Options{PID: pid, OnEvent: func(ev *trace.Event) error {
				n++
				sum += ev.Args[0].Raw
				return nil
			}})
			if err != nil {
				b.Fatal(err)
			}
			defer t.Close()
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- t.Run(ctx) }()
			before, _ := progRuntime(b, last, "block0")
			loop()
			after, _ := progRuntime(b, last, "block0")
			cancel()
			if err := <-done; err != nil {
				b.Fatal(err)
			}
			readEnd = selfCPU(b)
			lost, _, err := t.Lost()
			if err != nil {
				b.Fatal(err)
			}
			return n, lost, after - before
		}},
		{"bpftrace", func(loop func()) (uint64, uint64, time.Duration) {
			cmd := exec.Command(bt, btArgs...)
			out, err := cmd.StdoutPipe()
			if err != nil {
				b.Fatal(err)
			}
			cmd.Stderr = os.Stderr
			if err := cmd.Start(); err != nil {
				b.Fatal(err)
			}
			// Every line is read, as a user's terminal or pipe would.
			ready := make(chan struct{})
			printed := make(chan uint64, 1)
			go func() {
				n := uint64(0)
				sc := bufio.NewScanner(out)
				for sc.Scan() {
					if sc.Text() == "ready" {
						close(ready)
					} else if reArgs.MatchString(sc.Text()) {
						n++
					}
				}
				printed <- n
			}()
			select {
			case <-ready:
			case <-time.After(10 * time.Second):
				cmd.Process.Kill()
				b.Fatal("bpftrace did not attach")
			}
			before := progRunTime(b, cmd.Process.Pid, true)
			loop()
			after := progRunTime(b, cmd.Process.Pid, true)
			stop(cmd)
			n := <-printed
			return n, hits - min(n, hits), time.Duration(after - before)
		}},
	}
	stats, err := ebpf.EnableStats(uint32(unix.BPF_STATS_RUN_TIME))
	if err != nil {
		b.Fatal(err)
	}
	defer stats.Close()
	total := make([]time.Duration, len(tools))
	rounds := make([][]time.Duration, len(tools))
	progNS := make([]time.Duration, len(tools))
	var cpu time.Duration
	var lost, btLost uint64
	for b.Loop() {
		for i, tl := range tools {
			var cpu0 time.Duration
			readEnd = 0
			n, l, ns := tl.run(func() {
				cpu0 = selfCPU(b)
				m := reLoop.FindStringSubmatch(tc.Do(b, "loop "+strconv.Itoa(hits))[0])
				ns, _ := strconv.ParseInt(m[1], 10, 64)
				total[i] += time.Duration(ns)
				rounds[i] = append(rounds[i], time.Duration(ns))
			})
			progNS[i] += ns
			if tl.name == "bpftrace" {
				btLost += l
				continue
			}
			if readEnd != 0 {
				cpu += readEnd - cpu0
			}
			if n+l != hits {
				b.Fatalf("%s: %d events and %d lost for %d hits", tl.name, n, l, hits)
			}
			lost += l
		}
	}
	// arg0 is the loop's counter, 0 to hits-1.
	if want := uint64(b.N) * hits * (hits - 1) / 2; sum != want {
		b.Fatalf("trace: arg0 summed to %d over %d loops, want %d", sum, b.N, want)
	}
	perHit := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / float64(b.N*hits) }
	for i, tl := range tools {
		b.ReportMetric(perHit(total[i]), tl.name+"-ns/hit")
	}
	b.ReportMetric(float64(total[1])/float64(total[2]), "trace/bpftrace")
	b.ReportMetric(medianRatio(rounds[1], rounds[2]), "median-trace/bpftrace")
	b.ReportMetric(perHit(progNS[1]), "trace-prog-ns/hit")
	b.ReportMetric(perHit(progNS[2]), "bpftrace-prog-ns/hit")
	b.ReportMetric(float64(progNS[1])/float64(progNS[2]), "trace/bpftrace-prog")
	b.ReportMetric(perHit(cpu), "trace-reader-cpu-ns/hit")
	b.ReportMetric(float64(lost), "lost-events")
	b.ReportMetric(float64(btLost), "bpftrace-lost-events")
}

// reArgs is a line of bpftrace's printf of the bench probe's arguments.
var reArgs = regexp.MustCompile(`^\d+ -?\d+$`)

// selfCPU returns the CPU time this process has used (the readers,
// attaching and detaching included).
func selfCPU(b *testing.B) time.Duration {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// lastProgID returns the highest BPF program ID in use.
func lastProgID() ebpf.ProgramID {
	id, last := ebpf.ProgramID(0), ebpf.ProgramID(0)
	for {
		var err error
		if id, err = ebpf.ProgramGetNextID(id); err != nil {
			return last
		}
		last = id
	}
}

// progRuntime returns the run time and count of the programs named name
// loaded after program after (ours: IDs only grow).
func progRuntime(b *testing.B, after ebpf.ProgramID, name string) (time.Duration, uint64) {
	var total time.Duration
	var runs uint64
	for id := after; ; {
		var err error
		if id, err = ebpf.ProgramGetNextID(id); err != nil {
			return total, runs
		}
		p, err := ebpf.NewProgramFromID(id)
		if err != nil {
			continue
		}
		if info, err := p.Info(); err == nil && info.Name == name {
			if st, err := p.Stats(); err == nil {
				total += st.Runtime
				runs += st.RunCount
			}
		}
		p.Close()
	}
}
