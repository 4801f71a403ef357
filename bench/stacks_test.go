package bench

import (
	"debug/elf"
	"testing"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"

	"github.com/usdtkit/usdtkit/internal/bpf/stackcap/stacktest"
	"github.com/usdtkit/usdtkit/internal/stacks/unwind"
	"github.com/usdtkit/usdtkit/internal/testutil"
)

// stackHits is the number of hits of leaf per iteration of
// BenchmarkCapture.
const stackHits = 1000

// BenchmarkCapture attaches five capture programs to the same uprobe (the
// entry of chain.c's leaf, 5 frames deep, built with frame pointers and
// run `loop 1000` per iteration): one submitting an empty record (the
// floor), one with the kernel's frame-pointer capture (bpf_get_stack plus
// the caller word), one with the program's own frame-pointer walk that
// stack keys use with --unwind fp (stackcap.EmitWalkID, with its
// frames-map lookup), one with the walk with call frame information that
// they use by default (stackcap.EmitCFIWalkID, the process's tables in
// an unwind.BPFTables) and one with the 16 KiB stack copy, so every hit
// runs all five. It reports each program's BPF run time per hit (kernel
// run-time statistics) and the ratios fp/none, walk/none, walk/fp,
// cfi/none, cfi/walk, copy/none, copy/fp and copy/walk; the uprobe's own
// cost, the same for all, is in ns/hit of the loop.
func BenchmarkCapture(b *testing.B) {
	testutil.RequireBPF(b)
	st, err := ebpf.EnableStats(uint32(unix.BPF_STATS_RUN_TIME))
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	exe := stacktest.BuildChain(b, "-O2", "-fno-omit-frame-pointer")
	tr := testutil.StartTracee(b, exe)
	tr.WaitReady(b)
	tables := captureTables(b, tr.PID())
	modes := []struct {
		name string
		mode stacktest.Mode
	}{{"none", stacktest.None}, {"fp", stacktest.Frames}, {"walk", stacktest.Walk}, {"cfi", stacktest.CFIWalk}, {"copy", stacktest.Copy}}
	var probes []*stacktest.Probe
	for _, m := range modes {
		p := stacktest.Attach(b, exe, "leaf", &stacktest.Options{Mode: m.mode, Entry: true, PID: tr.PID(), NoWakeup: true, CFIMaps: tables.Maps()})
		p.DiscardAll(b)
		probes = append(probes, p)
	}
	runTime := func() []float64 {
		var out []float64
		for _, p := range probes {
			s, err := p.Program().Stats()
			if err != nil {
				b.Fatal(err)
			}
			out = append(out, float64(s.Runtime.Nanoseconds())/float64(max(s.RunCount, 1)))
		}
		return out
	}
	tr.Do(b, "loop 1000") // warm up
	b.ResetTimer()
	for b.Loop() {
		tr.Do(b, "loop 1000")
	}
	b.StopTimer()
	ns := runTime()
	for i, m := range modes {
		b.ReportMetric(ns[i], m.name+"-bpf-ns/hit")
	}
	b.ReportMetric(ns[1]/ns[0], "fp/none")
	b.ReportMetric(ns[2]/ns[0], "walk/none")
	b.ReportMetric(ns[2]/ns[1], "walk/fp")
	b.ReportMetric(ns[3]/ns[0], "cfi/none")
	b.ReportMetric(ns[3]/ns[2], "cfi/walk")
	b.ReportMetric(ns[4]/ns[0], "copy/none")
	b.ReportMetric(ns[4]/ns[1], "copy/fp")
	b.ReportMetric(ns[4]/ns[2], "copy/walk")
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*stackHits), "ns/hit")
}

// captureTables returns tables of the walk with call frame information
// holding process pid, closed when the benchmark ends.
func captureTables(b *testing.B, pid int) *unwind.BPFTables {
	u, err := unwind.New(nil)
	if err != nil {
		b.Fatal(err)
	}
	t, err := unwind.NewBPFTables(u, &unwind.BPFTablesOptions{Processes: 4, Tables: 16, Rows: 1 << 18})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { t.Close() })
	var spaces unwind.Spaces
	sp, err := spaces.Get(pid)
	if err != nil {
		b.Fatal(err)
	}
	if err := t.AddProcess(sp); err != nil {
		b.Fatal(err)
	}
	return t
}

// BenchmarkUnwind unwinds one stack copy captured at leaf's entry in
// chain.c built -O2 -fomit-frame-pointer (sort: 10 frames through libc's
// qsort) again and again: with the objects' CFI (parsed once, rows cached
// after the first walk), and with frame pointers only (NoCFI; fewer,
// wrong frames, as a floor). It reports frames per second of each and the
// ratio.
func BenchmarkUnwind(b *testing.B) {
	testutil.RequireBPF(b)
	exe := stacktest.BuildChain(b, "-O2", "-fomit-frame-pointer")
	tr := testutil.StartTracee(b, exe)
	tr.WaitReady(b)
	p := stacktest.Attach(b, exe, "leaf", &stacktest.Options{Mode: stacktest.Copy, Entry: true, PID: tr.PID()})
	var spaces unwind.Spaces
	sp, err := spaces.Get(tr.PID())
	if err != nil {
		b.Fatal(err)
	}
	tr.Do(b, "sort")
	c := p.Next(b).Copy
	regs := unwind.Regs{PC: c.IP, SP: c.SP, FP: c.FP}
	stack := unwind.Stack{Base: c.Base, Data: c.Stack}
	for _, tc := range []struct {
		name string
		opts *unwind.Options
	}{{"cfi", nil}, {"fp", &unwind.Options{NoCFI: true}}} {
		b.Run(tc.name, func(b *testing.B) {
			u, err := unwind.New(tc.opts)
			if err != nil {
				b.Fatal(err)
			}
			res, err := u.Unwind(sp, elf.EM_X86_64, regs, stack)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				u.Unwind(sp, elf.EM_X86_64, regs, stack)
			}
			b.ReportMetric(float64(len(res.Frames)), "frames")
			b.ReportMetric(float64(b.N*len(res.Frames))/b.Elapsed().Seconds(), "frames/s")
		})
	}
}
