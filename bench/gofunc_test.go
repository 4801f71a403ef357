package bench

import (
	"context"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/link"
	"github.com/usdtkit/usdtkit/internal/golang/gofunc"
	"github.com/usdtkit/usdtkit/internal/testutil"
	"github.com/usdtkit/usdtkit/trace"
	"github.com/usdtkit/usdtkit/uprobe"
	"golang.org/x/arch/x86/x86asm"
	"golang.org/x/sys/unix"
)

// resolveFunc is the function BenchmarkGoResolve resolves in usdtkit's own
// CLI: a method of a dependency's stable API with a receiver, a string and
// two pointers (five words in registers), which the CLI links and does not
// inline.
const resolveFunc = "github.com/cilium/ebpf/link.(*Executable).Uprobe"

// resolveParams are resolveFunc's parameters, in order.
var resolveParams = []string{"ex", "symbol", "prog", "opts"}

// globQuote escapes the metacharacters of path.Match in a function name,
// for a selector that names one function ("(*T)" holds a star).
func globQuote(name string) string {
	var sb strings.Builder
	for _, r := range name {
		if strings.ContainsRune(`*?[\`, r) {
			sb.WriteByte('\\')
		}
		sb.WriteRune(r)
	}
	return sb.String()
}

// goFunctions returns the sites of selectors, one Function each, as the CLI
// resolves its probe arguments.
func goFunctions(tb testing.TB, selectors ...string) []uprobe.Function {
	tb.Helper()
	var sels []uprobe.Selector
	for _, s := range selectors {
		sel, err := uprobe.ParseSelector(s)
		if err != nil {
			tb.Fatal(err)
		}
		sels = append(sels, sel)
	}
	fns, err := uprobe.Functions(&uprobe.ListOptions{Selectors: sels})
	if err != nil {
		tb.Fatal(err)
	}
	if len(fns) != len(sels) {
		tb.Fatalf("%v: %d functions, want %d", selectors, len(fns), len(sels))
	}
	for _, fn := range fns {
		if !fn.Go {
			tb.Fatalf("%s in %s: not found to be Go", fn.Name(), fn.Path)
		}
	}
	return fns
}

// paramNames returns the names of ps.
func paramNames(ps []gofunc.Param) []string {
	names := make([]string, len(ps))
	for i := range ps {
		names[i] = ps[i].Name
	}
	return names
}

// BenchmarkGoResolve times what tracing a Go function by name costs before
// anything is attached, on a large binary with DWARF: usdtkit's CLI built
// without -s -w (it links delve and cilium/ebpf; "binary-MB" is its size),
// resolving resolveFunc. Sub-benchmarks, siblings in one run:
//
//	open+func   gofunc.Open, the first Func and Close, per op: what
//	            trace.Compile does per Go binary. "open-ms" and "func-ms"
//	            split it; the first Func of a Binary builds delve's
//	            function lookup table.
//	func        Func again on an open Binary (its type cache warm): the
//	            cost of each further function of one binary.
//	functions   uprobe.Functions for the function's selector: reading the
//	            symbol table, which comes before Open in a trace.
//	trace       trace.CompileFlags of --count on the function's entry and
//	            returns, Start and Close, by the file (all processes):
//	            listing, open+func, generating, loading and attaching
//	            the program; needs root.
//
// Allocations are reported for each.
func BenchmarkGoResolve(b *testing.B) {
	bin := testutil.BuildGo(b, "../cmd/usdtkit")
	st, err := os.Stat(bin)
	if err != nil {
		b.Fatal(err)
	}
	sizeMB := float64(st.Size()) / (1 << 20)

	// What is timed must be what works: the parameters by name.
	gb, err := gofunc.Open(bin)
	if err != nil {
		b.Fatal(err)
	}
	fn, err := gb.Func(resolveFunc)
	if err != nil {
		b.Fatal(err)
	}
	if err := gb.Close(); err != nil {
		b.Fatal(err)
	}
	if !gb.DWARF {
		b.Fatalf("%s has no DWARF", bin)
	}
	if have := paramNames(fn.Params); !slices.Equal(have, resolveParams) {
		b.Fatalf("%s: have parameters %v, want %v", resolveFunc, have, resolveParams)
	}
	if len(fn.Returns) == 0 || fn.Site <= fn.Entry {
		b.Fatalf("%s: site %#x after entry %#x, %d returns: want a site after the prologue and returns",
			resolveFunc, fn.Site, fn.Entry, len(fn.Returns))
	}

	b.Run("open+func", func(b *testing.B) {
		var open, first time.Duration
		b.ReportAllocs()
		for b.Loop() {
			t0 := time.Now()
			gb, err := gofunc.Open(bin)
			if err != nil {
				b.Fatal(err)
			}
			t1 := time.Now()
			if _, err := gb.Func(resolveFunc); err != nil {
				b.Fatal(err)
			}
			t2 := time.Now()
			if err := gb.Close(); err != nil {
				b.Fatal(err)
			}
			open += t1.Sub(t0)
			first += t2.Sub(t1)
		}
		n := float64(b.N)
		b.ReportMetric(float64(open.Microseconds())/1000/n, "open-ms")
		b.ReportMetric(float64(first.Microseconds())/1000/n, "func-ms")
		b.ReportMetric(sizeMB, "binary-MB")
	})
	b.Run("func", func(b *testing.B) {
		gb, err := gofunc.Open(bin)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { gb.Close() })
		if _, err := gb.Func(resolveFunc); err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		for b.Loop() {
			if _, err := gb.Func(resolveFunc); err != nil {
				b.Fatal(err)
			}
		}
	})
	sel := "uprobe:" + bin + ":" + globQuote(resolveFunc)
	b.Run("functions", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			goFunctions(b, sel)
		}
	})
	b.Run("trace", func(b *testing.B) {
		testutil.RequireBPF(b)
		flags := &trace.Flags{Probes: []string{sel, "uretprobe:" + bin + ":" + globQuote(resolveFunc)}, Count: true}
		b.ReportAllocs()
		for b.Loop() {
			prog, err := trace.CompileFlags(flags, nil)
			if err != nil {
				b.Fatal(err)
			}
			if have, want := prog.Sites(), 1+len(fn.Returns); have != want {
				b.Fatalf("%d sites attached, want %d", have, want)
			}
			tr, err := trace.Start(prog, &trace.Options{Stdout: io.Discard})
			if err != nil {
				b.Fatal(err)
			}
			if err := tr.Close(); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// goCallsPerLoop is how many calls of gotarget's Hit one loop makes;
// goRoundsPerOp how many rounds of every variant one op of
// BenchmarkGoFuncTraced runs (odd, so that -benchtime=1x has a median of
// its own); goStatRounds how many more run with BPF run-time statistics
// on.
const (
	goCallsPerLoop = 5000
	goRoundsPerOp  = 9
	goStatRounds   = 2
)

// goVariant is one target process of BenchmarkGoFuncTraced and what
// traces it.
type goVariant struct {
	name  string
	tc    *testutil.Tracee
	sites uint64 // traced sites a call passes
	calls uint64 // calls made
	loops []float64
}

// loop runs "loop n" in the variant's gotarget and keeps the time it
// printed.
func (v *goVariant) loop(tb testing.TB, n int) {
	tb.Helper()
	lines := v.tc.Do(tb, "loop "+strconv.Itoa(n))
	var m []string
	if len(lines) == 1 {
		m = reLoop.FindStringSubmatch(lines[0])
	}
	if m == nil {
		tb.Fatalf("%s: loop: %q", v.name, lines)
	}
	ns, err := strconv.ParseFloat(m[1], 64)
	if err != nil {
		tb.Fatal(err)
	}
	v.loops = append(v.loops, ns)
	v.calls += uint64(n)
}

// attachEmpty attaches an empty program (mov r0, 0; exit) to the file
// offsets offs of path in process pid, with one uprobe_multi link as
// usdtkit attaches a Go function's sites: the floor of a traced call.
func attachEmpty(tb testing.TB, path string, offs []uint64, pid int) {
	tb.Helper()
	prog, err := ebpf.NewProgram(&ebpf.ProgramSpec{
		Type: ebpf.Kprobe, AttachType: ebpf.AttachTraceUprobeMulti, License: "GPL",
		Instructions: asm.Instructions{asm.Mov.Imm(asm.R0, 0), asm.Return()},
	})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { prog.Close() })
	ex, err := link.OpenExecutable(path)
	if err != nil {
		tb.Fatal(err)
	}
	l, err := ex.UprobeMulti(nil, prog, &link.UprobeMultiOptions{Addresses: offs, PID: uint32(pid)})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { l.Close() })
}

// callSite returns the file offset of the CALL of callee (a Function of
// the same file) in caller's code, read from the file at path: an
// instruction the x86 kernel emulates at a uprobe hit instead of executing
// it out of line.
func callSite(tb testing.TB, path string, caller, callee uprobe.Function) uint64 {
	tb.Helper()
	f, err := os.Open(path)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	code := make([]byte, caller.Symbol.Size)
	if _, err := f.ReadAt(code, int64(caller.Symbol.Offset)); err != nil {
		tb.Fatal(err)
	}
	for pc := 0; pc < len(code); {
		inst, err := x86asm.Decode(code[pc:], 64)
		if err != nil {
			tb.Fatalf("%s+%d: %v", caller.Symbol.Name, pc, err)
		}
		if rel, ok := inst.Args[0].(x86asm.Rel); ok && inst.Op == x86asm.CALL {
			if int64(caller.Symbol.Offset)+int64(pc+inst.Len)+int64(rel) == int64(callee.Symbol.Offset) {
				return caller.Symbol.Offset + uint64(pc)
			}
		}
		pc += inst.Len
	}
	tb.Fatalf("no CALL of %s in %s", callee.Symbol.Name, caller.Symbol.Name)
	return 0
}

// goEventReader runs a trace of gotarget's Hit that sends events in a
// goroutine, as the CLI does, counting the events and keeping the first
// entry and return events.
type goEventReader struct {
	tr            *trace.Tracer
	n             atomic.Uint64
	entry, result *trace.Event
	cancel        context.CancelFunc
	done          chan struct{}
	err           error
}

// newGoEventReader starts prog in process pid, and Run in a goroutine.
func newGoEventReader(tb testing.TB, prog *trace.Program, pid int) *goEventReader {
	ctx, cancel := context.WithCancel(context.Background())
	r := &goEventReader{cancel: cancel, done: make(chan struct{})}
	var err error
	r.tr, err = trace.Start(prog, &trace.Options{PID: pid, Stdout: io.Discard, OnEvent: func(ev *trace.Event) error {
		r.n.Add(1)
		keep := &r.entry
		if ev.Results {
			keep = &r.result
		}
		if *keep == nil {
			*keep = ev.Clone()
		}
		return nil
	}})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { r.stop(); r.tr.Close() })
	go func() {
		defer close(r.done)
		r.err = r.tr.Run(ctx)
	}()
	return r
}

// stop ends Run, which detaches and reads what is left, and waits for
// it; it may be called again.
func (r *goEventReader) stop() {
	r.cancel()
	<-r.done
}

// finish stops the reader and returns every event delivered and the
// events the ring buffer refused.
func (r *goEventReader) finish(tb testing.TB) (read, lost uint64) {
	tb.Helper()
	r.stop()
	if r.err != nil {
		tb.Fatal(r.err)
	}
	lost, _, err := r.tr.Lost()
	if err != nil {
		tb.Fatal(err)
	}
	return r.n.Load(), lost
}

// goValues maps an event's values by name.
func goValues(ev *trace.Event) map[string]any {
	m := make(map[string]any)
	if ev == nil {
		return m
	}
	for _, v := range ev.Args {
		m[v.Name] = v.Go
	}
	return m
}

// BenchmarkGoFuncTraced measures what tracing a Go function costs per call:
// bench/gotarget calls Hit(s string, n int, p *T) int in a loop of
// goCallsPerLoop calls, timed on its own clock, with
//
//	untraced              no tracer (the loop's own cost)
//	empty                 an empty BPF program at Hit's entry site (the
//	                      first instruction after the prologue, as package
//	                      gofunc finds it): the floor, a uprobe hit
//	empty+ret             the same at the entry and every RET
//	empty-call            an empty program on the CALL of Hit in
//	                      gotarget's loop, an instruction the x86 kernel
//	                      emulates: the floor of a uprobe hit, one trap
//	usdtkit-events        trace.CompileEvents of uprobe:main.Hit: the
//	                      goroutine id, s (bytes and length), n and p in
//	                      each event, read and decoded by a goroutine of
//	                      this process
//	usdtkit-events+ret    the same with uretprobe:main.Hit (the result at
//	                      every RET)
//	usdtkit-count         uprobe:main.Hit with --count (trace.CompileFlags)
//	usdtkit-count+ret     the same with uretprobe:main.Hit
//
// Each variant has its own gotarget process, traced by PID, so every tracer
// stays attached for the whole run and only its process runs its program.
// Every sample is one loop; an op is goRoundsPerOp rounds, each running
// every variant's loop once, starting at the next variant. The metrics are
// each variant's median loop per call ("V-ns/call") and usdtkit's cost as
// a multiple of the empty program's on the same sites:
// usdtkit-events/empty, usdtkit-count/empty, usdtkit-events+ret/empty+ret
// and usdtkit-count+ret/empty+ret. After the timed rounds, goStatRounds
// more run with the kernel's BPF run-time statistics on:
// "V-prog-ns/hit" is the time per site hit spent in variant V's program,
// the rest of a hit being the trap, the single step and the uprobe
// dispatch, which are the same for usdtkit and the floor. "lost" is the
// events the ring buffer refused (must be 0); every count and event is
// checked against the calls made.
//
// "empty/empty-call" is what executing the probed instruction out of line
// costs over emulating it: x86 uprobes emulate only branches, calls and a
// few others, and single-step every other instruction (a second trap) in
// a slot of the process's XOL area. A Go function's entry site (a spill
// or the body's first instruction, after the prologue) and its RETs are
// such instructions; the C USDT sites of the other benchmarks are a nop,
// emulated. In this VM a single step costs ~10 µs, so a traced Go call
// costs ten times a USDT hit, with usdtkit's program a few percent of it.
func BenchmarkGoFuncTraced(b *testing.B) {
	testutil.RequireBPF(b)
	bin := testutil.BuildGo(b, "gotarget")
	gb, err := gofunc.Open(bin)
	if err != nil {
		b.Fatal(err)
	}
	gf, err := gb.Func("main.Hit")
	if err != nil {
		b.Fatal(err)
	}
	if err := gb.Close(); err != nil {
		b.Fatal(err)
	}
	if have, want := paramNames(gf.Params), []string{"s", "n", "p"}; !slices.Equal(have, want) {
		b.Fatalf("main.Hit: have parameters %v, want %v", have, want)
	}
	if len(gf.Returns) == 0 {
		b.Fatal("main.Hit: no RET found")
	}
	fns := goFunctions(b, "uprobe:"+bin+":main.Hit")
	entry := fns[0]
	if entry.Symbol.Value != gf.Entry {
		b.Fatalf("main.Hit: symbol at %#x, gofunc's entry at %#x", entry.Symbol.Value, gf.Entry)
	}
	// The file offsets usdtkit attaches at: the symbol's offset plus each
	// site's distance from the entry.
	entryOffs := []uint64{entry.Symbol.Offset + gf.Site - gf.Entry}
	allOffs := slices.Clone(entryOffs)
	for _, r := range gf.Returns {
		allOffs = append(allOffs, entry.Symbol.Offset+r-gf.Entry)
	}

	start := func(name string, sites int) *goVariant {
		tc := testutil.StartTracee(b, bin)
		if have, want := tc.Do(b, "pid"), "pid "+strconv.Itoa(tc.PID()); len(have) != 1 || have[0] != want {
			b.Fatalf("gotarget: have %q, want %q", have, want)
		}
		return &goVariant{name: name, tc: tc, sites: uint64(sites)}
	}
	// compile compiles the events (count false) or the count of probes
	// for variant v; uprobe_multi links, like the floor's.
	compile := func(v *goVariant, count bool, probes ...string) *trace.Program {
		copts := &trace.CompileOptions{PID: v.tc.PID(), Warn: func(err error) { b.Fatalf("%s: %v", v.name, err) }}
		var prog *trace.Program
		var err error
		if count {
			prog, err = trace.CompileFlags(&trace.Flags{Probes: probes, Count: true}, copts)
		} else {
			var eps []trace.EventProbe
			for _, p := range probes {
				eps = append(eps, trace.EventProbe{Probe: p})
			}
			prog, err = trace.CompileEvents(eps, copts)
		}
		if err != nil {
			b.Fatal(err)
		}
		if have := uint64(prog.Sites()); have != v.sites {
			b.Fatalf("%s: %d sites, want %d", v.name, have, v.sites)
		}
		return prog
	}
	startCount := func(v *goVariant, probes ...string) *trace.Tracer {
		tr, err := trace.Start(compile(v, true, probes...), &trace.Options{PID: v.tc.PID(), Stdout: io.Discard})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { tr.Close() })
		return tr
	}
	entrySel, retSel := "uprobe:"+bin+":main.Hit", "uretprobe:"+bin+":main.Hit"
	untraced := start("untraced", 0)
	empty := start("empty", len(entryOffs))
	attachEmpty(b, bin, entryOffs, empty.tc.PID())
	emptyRet := start("empty+ret", len(allOffs))
	attachEmpty(b, bin, allOffs, emptyRet.tc.PID())
	events := start("usdtkit-events", len(entryOffs))
	eventsRd := newGoEventReader(b, compile(events, false, entrySel), events.tc.PID())
	eventsRet := start("usdtkit-events+ret", len(allOffs))
	eventsRetRd := newGoEventReader(b, compile(eventsRet, false, entrySel, retSel), eventsRet.tc.PID())
	count := start("usdtkit-count", len(entryOffs))
	countTr := startCount(count, entrySel)
	countRet := start("usdtkit-count+ret", len(allOffs))
	countRetTr := startCount(countRet, entrySel, retSel)
	emptyCall := start("empty-call", 1)
	loopFn := goFunctions(b, "uprobe:"+bin+":main.loop")[0]
	attachEmpty(b, bin, []uint64{callSite(b, bin, loopFn, entry)}, emptyCall.tc.PID())
	variants := []*goVariant{untraced, empty, emptyRet, emptyCall, events, eventsRet, count, countRet}

	// A site's first hit sets up the process's out-of-line execution
	// area: keep it out of the samples.
	for _, v := range variants {
		v.loop(b, 100)
		v.loops = v.loops[:0]
	}
	first := 0
	for b.Loop() {
		for range goRoundsPerOp {
			for i := range variants {
				variants[(first+i)%len(variants)].loop(b, goCallsPerLoop)
			}
			first++
		}
	}
	b.StopTimer()

	// The median loop, not the mean: a loop the scheduler preempts takes
	// a time slice longer.
	med := make(map[string]float64)
	for _, v := range variants {
		ns := slices.Clone(v.loops)
		slices.Sort(ns)
		med[v.name] = ns[len(ns)/2] / goCallsPerLoop
		b.ReportMetric(med[v.name], v.name+"-ns/call")
	}
	// An int3 uprobe costs hundreds of ns here, Hit's untraced call a few:
	// a floor that is not far above untraced did not fire.
	for _, name := range []string{"empty", "empty+ret", "empty-call"} {
		if med[name] < 10*med["untraced"] {
			b.Errorf("%s: %.1f ns/call, untraced %.1f: the empty program's uprobes do not fire", name, med[name], med["untraced"])
		}
	}
	for _, r := range [][2]string{
		{"usdtkit-events", "empty"}, {"usdtkit-count", "empty"},
		{"usdtkit-events+ret", "empty+ret"}, {"usdtkit-count+ret", "empty+ret"},
	} {
		b.ReportMetric(med[r[0]]/med[r[1]], r[0]+"/"+r[1])
	}
	b.ReportMetric(med["empty"]/med["empty-call"], "empty/empty-call")

	// Split a hit into the BPF program's run and the rest (the trap, the
	// single step, uprobe dispatch): rounds with the kernel's run-time
	// statistics on, which add two clock reads to every run, so they are
	// not part of the rounds above. "V-prog-ns/hit" is per site hit.
	progPIDs := make(map[int]string)
	for _, v := range variants {
		if v.sites > 0 {
			progPIDs[v.tc.PID()] = v.name
		}
	}
	stats, err := ebpf.EnableStats(unix.BPF_STATS_RUN_TIME)
	if err != nil {
		b.Fatal(err)
	}
	before := progStats(b, progPIDs)
	for range goStatRounds {
		for _, v := range variants {
			v.loop(b, goCallsPerLoop)
		}
	}
	after := progStats(b, progPIDs)
	if err := stats.Close(); err != nil {
		b.Fatal(err)
	}
	for _, v := range variants {
		if v.sites == 0 {
			continue
		}
		runs := after[v.name].RunCount - before[v.name].RunCount
		if want := uint64(goStatRounds*goCallsPerLoop) * v.sites; runs != want {
			b.Fatalf("%s: %d program runs in the statistics rounds, want %d", v.name, runs, want)
		}
		b.ReportMetric(float64(after[v.name].Runtime-before[v.name].Runtime)/float64(runs), v.name+"-prog-ns/hit")
	}

	// Check that what was timed is what works: every call counted, every
	// event delivered, and the values right.
	for _, c := range []struct {
		v  *goVariant
		tr *trace.Tracer
	}{{count, countTr}, {countRet, countRetTr}} {
		maps, err := c.tr.Maps()
		if err != nil {
			b.Fatal(err)
		}
		var total uint64
		for _, m := range maps {
			for _, e := range m.Entries {
				total += e.Value
			}
		}
		if want := c.v.calls * c.v.sites; total != want {
			b.Errorf("%s: counted %d hits, want %d", c.v.name, total, want)
		}
	}
	var lost uint64
	for _, c := range []struct {
		v *goVariant
		r *goEventReader
	}{{events, eventsRd}, {eventsRet, eventsRetRd}} {
		read, l := c.r.finish(b)
		if want := c.v.calls * c.v.sites; read+l != want {
			b.Errorf("%s: %d events delivered and %d lost, want %d", c.v.name, read, l, want)
		}
		lost += l
		// The first call of the warm-up loop: Hit("gotarget", 0, t) = 8.
		args := goValues(c.r.entry)
		if args["s"] != "gotarget" || args["n"] != int64(0) || args["p"] == trace.GoPointer(0) || args["p"] == nil || c.r.entry.GoID == 0 {
			b.Errorf("%s: first entry event %+v, values %v; want goid > 0, s=gotarget n=0 p!=0", c.v.name, c.r.entry, args)
		}
		if c.v.sites > 1 {
			if res := goValues(c.r.result); res["r0"] != int64(8) {
				b.Errorf("%s: first return event values %v, want r0=8", c.v.name, res)
			}
		}
	}

	b.ReportMetric(float64(lost), "lost")
}
