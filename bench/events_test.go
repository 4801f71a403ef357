package bench

import (
	"context"
	"strconv"
	"testing"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"
	"time"

	"github.com/usdtkit/usdtkit/internal/sdttrace"
	"github.com/usdtkit/usdtkit/internal/testutil"
	"github.com/usdtkit/usdtkit/sdt"
	"github.com/usdtkit/usdtkit/trace"
)

// BenchmarkEventsLibrary drives tracee.c's "bench" probe (2 integer
// arguments) in a loop of hits and reports the cost per hit, by the
// tracee's own clock, with no tracer, with sdttrace.Trace (ModeEvents) and with
// trace.CompileEvents, each receiving every event in a Go callback in
// this process — side by side in one run, in rotation, with the ratio
// trace/sdt; and the run time of each one's BPF program per hit
// (BPF_STATS_RUN_TIME), less noisy on a busy machine, and the CPU time
// the tracer's process spent per hit from the loop's start until Run
// returned (reading, decoding, detaching), which competes with the tracee
// on a busy machine. Lost events are
// reported too (they must be 0).
func BenchmarkEventsLibrary(b *testing.B) {
	testutil.RequireBPF(b)
	bin := testutil.BuildTracee(b, "-O2", "-DTRACEE_NO_WIDE")
	tc := testutil.StartTracee(b, bin)
	tc.Do(b, "run 0") // answering, it has its executable mapped
	pid := tc.PID()
	const hits = 20000
	probes, err := sdt.List(&sdt.ListOptions{PID: pid, Selectors: []sdt.Selector{{Provider: "tracee", Name: "bench"}}})
	if err != nil || len(probes) != 1 {
		b.Fatalf("tracee:bench: %v (%d probes)", err, len(probes))
	}
	prog, err := trace.CompileEvents([]trace.EventProbe{{Probe: "usdt::tracee:bench"}}, &trace.CompileOptions{PID: pid})
	if err != nil {
		b.Fatal(err)
	}
	var got, sum uint64
	// readEnd is the process's CPU time when a tool's Run returned.
	var readEnd time.Duration
	// Each tool attaches, the loop runs, the tool reads what remains and
	// detaches; run returns the events it received and lost.
	tools := []struct {
		name string
		run  func(loop func()) (events, lost uint64)
		prog string // the program's name, for its run time
	}{
		{"none", func(loop func()) (uint64, uint64) { loop(); return hits, 0 }, ""},
		{"sdt", func(loop func()) (uint64, uint64) {
			t, err := sdttrace.Trace(&sdttrace.TraceOptions{Probes: probes, PID: pid})
			if err != nil {
				b.Fatal(err)
			}
			defer t.Close()
			n := uint64(0)
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() {
				done <- t.Run(ctx, func(ev *sdttrace.Event) error { n++; sum += ev.Args[0]; return nil })
			}()
			loop()
			cancel()
			if err := <-done; err != nil {
				b.Fatal(err)
			}
			readEnd = selfCPU(b)
			lost, _, err := t.Lost()
			if err != nil {
				b.Fatal(err)
			}
			return n, lost
		}, "trace"},
		{"trace", func(loop func()) (uint64, uint64) {
			n := uint64(0)
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
			loop()
			cancel()
			if err := <-done; err != nil {
				b.Fatal(err)
			}
			readEnd = selfCPU(b)
			lost, _, err := t.Lost()
			if err != nil {
				b.Fatal(err)
			}
			return n, lost
		}, "block0"},
	}
	stats, err := ebpf.EnableStats(uint32(unix.BPF_STATS_RUN_TIME))
	if err != nil {
		b.Fatal(err)
	}
	defer stats.Close()
	total := make([]time.Duration, len(tools))
	progNS := make([]time.Duration, len(tools))
	cpu := make([]time.Duration, len(tools))
	var lost uint64
	for b.Loop() {
		for i, tl := range tools {
			last := lastProgID()
			var cpu0 time.Duration
			readEnd = 0
			n, l := tl.run(func() {
				cpu0 = selfCPU(b)
				var before time.Duration
				if tl.prog != "" {
					before, _ = progRuntime(b, last, tl.prog)
				}
				m := reLoop.FindStringSubmatch(tc.Do(b, "loop "+strconv.Itoa(hits))[0])
				ns, _ := strconv.ParseInt(m[1], 10, 64)
				total[i] += time.Duration(ns)
				if tl.prog != "" {
					after, _ := progRuntime(b, last, tl.prog)
					progNS[i] += after - before
				}
			})
			if readEnd != 0 {
				cpu[i] += readEnd - cpu0
			}
			if n+l != hits {
				b.Fatalf("%s: %d events and %d lost for %d hits", tl.name, n, l, hits)
			}
			got += n
			lost += l
		}
	}
	for i, tl := range tools {
		b.ReportMetric(float64(total[i].Nanoseconds())/float64(b.N*hits), tl.name+"-ns/hit")
	}
	b.ReportMetric(float64(progNS[1].Nanoseconds())/float64(b.N*hits), "sdt-prog-ns/hit")
	b.ReportMetric(float64(progNS[2].Nanoseconds())/float64(b.N*hits), "trace-prog-ns/hit")
	b.ReportMetric(float64(progNS[2])/float64(progNS[1]), "trace/sdt-prog")
	b.ReportMetric(float64(total[2])/float64(total[1]), "trace/sdt")
	b.ReportMetric(float64(cpu[1].Nanoseconds())/float64(b.N*hits), "sdt-reader-cpu-ns/hit")
	b.ReportMetric(float64(cpu[2].Nanoseconds())/float64(b.N*hits), "trace-reader-cpu-ns/hit")
	b.ReportMetric(float64(lost), "lost-events")
}

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
