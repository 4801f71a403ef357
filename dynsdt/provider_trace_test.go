package dynsdt

import (
	"debug/elf"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/usdtkit/usdtkit/internal/bpf/features"
	"github.com/usdtkit/usdtkit/internal/testutil"
	"github.com/usdtkit/usdtkit/internal/tracetest"
	"github.com/usdtkit/usdtkit/sdt"
	"github.com/usdtkit/usdtkit/trace"
)

var traceSpec = ProviderSpec{Name: "ktrace", Probes: []ProbeSpec{
	{Name: "ints", Args: []ArgType{Int8, Int16, Int32, Int64, Uint8, Uint16, Uint32, Uint64, Bool}},
	{Name: "str", Args: []ArgType{String, Int32}},
	{Name: "twelve", Args: []ArgType{Int64, Int64, Int64, Int64, Int64, Int64, Int64, Int64, Int64, Int64, Int64, Int32}},
}}

// listSelf lists the probes of provider in this process, as usdtkit list
// -p does.
func listSelf(t *testing.T, provider string) []sdt.Probe {
	t.Helper()
	probes, err := sdt.List(&sdt.ListOptions{PID: os.Getpid(), Selectors: []sdt.Selector{{Provider: provider}}})
	if err != nil {
		t.Fatal(err)
	}
	return probes
}

// TestTraceSelf loads a provider (file and memfd, with a 1-byte and a
// 5-byte nop site), lists its probes in this process, traces them by PID
// and fires each twice: the events hold the fired values, the stubs
// (pop/jmp for both kinds) return to their callers after a trap and after
// 6.18's trampoline; semaphores and Enabled follow the tracer. (Linux 6.18
// cannot probe a 10-byte nop site.)
func TestTraceSelf(t *testing.T) {
	testutil.RequireBPF(t)
	for _, c := range []struct {
		site  Site
		memfd bool
	}{{SiteNop, false}, {SiteNop, true}, {SiteNop5, false}, {SiteNop5, true}} {
		t.Run(c.site.String()+"/"+map[bool]string{false: "file", true: "memfd"}[c.memfd], func(t *testing.T) {
			p, err := Load(&traceSpec, &Options{Memfd: c.memfd, Dir: t.TempDir(), Site: c.site})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { p.Close() })
			if p.Site() != c.site && HostMachine == elf.EM_X86_64 {
				t.Fatalf("site %v, want %v", p.Site(), c.site)
			}

			probes := listSelf(t, "ktrace")
			var names []string
			for _, pr := range probes {
				names = append(names, pr.String())
				if want := strings.TrimSuffix(p.Path(), " (deleted)"); pr.Path != want {
					t.Errorf("%s: path %s, want %s", pr.String(), pr.Path, want)
				}
			}
			if have, want := strings.Join(names, " "), "ktrace:ints ktrace:str ktrace:twelve"; have != want {
				t.Fatalf("listed: have %q, want %q", have, want)
			}
			checkState(t, p, "before attaching", false)

			tr := tracetest.Start(t, []trace.EventProbe{
				{Probe: "usdt::ktrace:ints,usdt::ktrace:twelve"},
				{Probe: "usdt::ktrace:str", Strings: []int{0}},
			}, os.Getpid(), nil)
			checkState(t, p, "while attached", true)

			// Each probe fires twice: a nop5 site is trapped on its first
			// hit and, on kernels that optimize it, called through the
			// trampoline on the second; the stub must return either way.
			i8, i16, i32, i64 := int8(-5), int16(-300), int32(-70000), int64(-1<<40)
			var args [MaxArgs]uint64
			for i := range args {
				args[i] = uint64(int64(-1 - i))
			}
			minus7 := int64(-7)
			for range 2 {
				p.Probe("ints").Fire(uint64(i8), uint64(i16), uint64(i32), uint64(i64), 200, 60000, 4000000000, 1<<64-1, 1)
				s := CString("hello, world")
				p.Probe("str").Fire(BytesPtr(s), uint64(minus7))
				runtime.KeepAlive(s)
				p.Probe("twelve").Fire(args[:]...)
			}

			if c.site == SiteNop5 && HostMachine == elf.EM_X86_64 {
				// Which path the second hits took: int3 still there, or
				// the call to the trampoline the kernel made of the nop5.
				opt, err := features.Nop5Optimized()
				if err != nil {
					t.Fatal(err)
				}
				want := map[bool]byte{false: 0xcc, true: 0xe8}[opt]
				for i := range p.probes {
					if have := byte(atomic.LoadUint32(p.probes[i].site)); have != want {
						t.Errorf("%s: site starts with %#x after two hits, want %#x (nop5 optimized: %v)", p.probes[i].name, have, want, opt)
					}
				}
			}

			neg := func(v int64) uint64 { return uint64(v) }
			once := []string{
				fmt.Sprint("ktrace:ints ", []uint64{neg(-5), neg(-300), neg(-70000), neg(-1 << 40), 200, 60000, 4000000000, 1<<64 - 1, 1}),
				fmt.Sprint("ktrace:str hello, world ", neg(-7)),
				fmt.Sprint("ktrace:twelve ", args[:]),
			}
			want := append(slices.Clone(once), once...)
			var have []string
			for range want {
				ev := tr.Next(t)
				if tracetest.HasFault(ev) {
					t.Errorf("%s: a fault in %+v", ev.Name, ev.Args)
				}
				if ev.Name == "ktrace:str" {
					have = append(have, fmt.Sprint(ev.Name, " ", ev.Args[0].Str, " ", ev.Args[1].Raw))
				} else {
					have = append(have, fmt.Sprint(ev.Name, " ", tracetest.Raw(ev)))
				}
			}
			if !slices.Equal(have, want) {
				t.Errorf("events:\nhave %q\nwant %q", have, want)
			}
			if lost, _, err := tr.T.Lost(); err != nil || lost != 0 {
				t.Errorf("lost %d events (%v)", lost, err)
			}
			if err := tr.Stop(); err != nil {
				t.Fatal(err)
			}
			checkState(t, p, "after detaching", false)
		})
	}
}

// checkState checks every probe's semaphore (non-zero while a tracer is
// attached) and Enabled.
func checkState(t *testing.T, p *Provider, when string, attached bool) {
	t.Helper()
	for i := range p.probes {
		pr := &p.probes[i]
		if sem := pr.semaphore(); (sem != 0) != attached {
			t.Errorf("%s: %s's semaphore is %d", when, pr.name, sem)
		}
		if pr.Enabled() != attached {
			t.Errorf("%s: %s.Enabled() = %v", when, pr.name, pr.Enabled())
		}
	}
}

// TestTraceStress fires one probe from 64 goroutines while a tracer
// attaches and detaches repeatedly: no fault, and while a tracer is
// attached no event is lost — each goroutine's sequence numbers arrive
// without a gap, and the ring buffer refused none.
func TestTraceStress(t *testing.T) {
	testutil.RequireBPF(t)
	spec := &ProviderSpec{Name: "kstress", Probes: []ProbeSpec{{Name: "seq", Args: []ArgType{Int64, Int64}}}}
	p, err := Load(spec, &Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	if probes := listSelf(t, "kstress"); len(probes) != 1 {
		t.Fatalf("listed %d probes, want kstress:seq", len(probes))
	}
	pr := p.Probe("seq")

	// The race detector's pass (-short) fires from fewer goroutines: at
	// 64 under -race on 2 CPUs, detaching the links while the reader
	// drains the ring took minutes (see the session note).
	goroutines := 64
	if testing.Short() {
		goroutines = 8
	}
	var (
		stop  atomic.Bool
		wg    sync.WaitGroup
		fired atomic.Int64
		// room bounds the events fired and not yet read to far less
		// than the ring holds, so that none is lost however slowly
		// the reader is scheduled: the test is of losing no event the
		// ring has room for, not of the reader's speed on a busy machine.
		room atomic.Int64
	)
	take := func() bool {
		for room.Add(-1) < 0 {
			room.Add(1)
			if stop.Load() {
				return false
			}
			time.Sleep(50 * time.Microsecond)
		}
		return true
	}
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for seq := uint64(0); !stop.Load(); seq++ {
				if pr.Enabled() && !take() {
					return
				}
				pr.Fire(uint64(g), seq)
				fired.Add(1)
				if seq%4 == 3 {
					// Bound the rate, so that the reader keeps up
					// on a small, busy machine (2 CPUs at a load
					// of 14 lost events one cycle in three at
					// seq%8).
					time.Sleep(100 * time.Microsecond)
				}
			}
		}()
	}
	t.Cleanup(func() {
		stop.Store(true)
		wg.Wait()
	})

	for cycle := range 5 {
		c := newSeqChecker(goroutines)
		room.Store(maxUnread)
		tr := tracetest.Start(t, []trace.EventProbe{{Probe: "usdt::kstress:seq"}}, os.Getpid(), func(ev *trace.Event) {
			c.add(ev)
			room.Add(1)
		})
		deadline := time.Now().Add(20 * time.Second)
		for c.count() < 20000 && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		// Run detaches and hands over what the kernel still held.
		if err := tr.Stop(); err != nil {
			t.Errorf("cycle %d: run: %v", cycle, err)
		}
		lost, _, err := tr.T.Lost()
		if err != nil {
			t.Fatal(err)
		}
		if err := tr.T.Close(); err != nil {
			t.Fatal(err)
		}
		t.Logf("cycle %d: %d events, %d lost, %d gaps (fired %d in all)", cycle, c.count(), lost, c.gaps, fired.Load())
		if lost != 0 || c.gaps != 0 || c.count() < 20000 {
			t.Errorf("cycle %d: %d events, %d lost, %d gaps; want ≥ 20000, 0, 0", cycle, c.count(), lost, c.gaps)
		}
		if pr.Enabled() {
			t.Errorf("cycle %d: enabled after Close", cycle)
		}
	}
}

// seqChecker counts the gaps in each goroutine's sequence numbers.
type seqChecker struct {
	mu   sync.Mutex
	last []int64
	n    int
	gaps int
}

// maxUnread is TestTraceStress's bound on events fired and not yet read:
// a small part of the records the events ring (4 MiB) holds.
const maxUnread = 8192

func newSeqChecker(goroutines int) *seqChecker {
	c := &seqChecker{last: make([]int64, goroutines)}
	for i := range c.last {
		c.last[i] = -1
	}
	return c
}

func (c *seqChecker) add(ev *trace.Event) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n++
	g, seq := int(ev.Args[0].Raw), ev.Args[1].Int()
	if g < 0 || g >= len(c.last) {
		c.gaps++
		return
	}
	if c.last[g] >= 0 && seq != c.last[g]+1 {
		c.gaps++
	}
	c.last[g] = seq
}

func (c *seqChecker) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n
}

// TestPeerTools cross-checks with tracers we did not write: tplist-bpfcc
// -p lists the probes of this process, and bpftrace -p prints the integer
// and string arguments fired once it has attached (seen through Enabled).
func TestPeerTools(t *testing.T) {
	testutil.RequireBPF(t)
	tplist := testutil.RequireTool(t, "tplist-bpfcc")
	bpftrace := testutil.RequireTool(t, "bpftrace")
	testutil.RequireTracefs(t)
	p, err := Load(&traceSpec, &Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	pid := strconv.Itoa(os.Getpid())

	out, err := exec.Command(tplist, "-p", pid).CombinedOutput()
	if err != nil {
		t.Fatalf("tplist-bpfcc: %v\n%s", err, out)
	}
	for _, ps := range traceSpec.Probes {
		if want := p.Path() + " ktrace:" + ps.Name; !strings.Contains(string(out), want) {
			t.Errorf("tplist-bpfcc -p: no line ending in %q:\n%s", want, out)
		}
	}

	cmd := exec.Command(bpftrace, "-p", pid, "-e", `usdt:`+p.Path()+`:ktrace:str { printf("%s %d\n", str(arg0), arg1); exit(); }`)
	var stdout strings.Builder
	cmd.Stdout = &stdout
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill() })
	// Enabled turns true when the uprobe is installed, which may be before
	// bpftrace has attached its program to it: fire until the script's
	// exit() ends bpftrace (started by a test process, bpftrace 0.17
	// catches SIGINT and does not exit; see cmd/usdtkit/trace_tracee_test.go).
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	pr := p.Probe("str")
	s := CString("from go")
	minus3 := int32(-3)
	deadline := time.After(20 * time.Second)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
fire:
	for {
		select {
		case err := <-exited:
			if err != nil {
				t.Fatalf("bpftrace: %v\n%s", err, stdout.String())
			}
			break fire
		case <-deadline:
			t.Fatalf("bpftrace did not print a hit (enabled: %v)", pr.Enabled())
		case <-tick.C:
			if pr.Enabled() {
				pr.Fire(BytesPtr(s), uint64(minus3))
			}
		}
	}
	runtime.KeepAlive(s)
	if !strings.Contains(stdout.String(), "from go -3\n") {
		t.Errorf("bpftrace output: have %q, want a line %q", stdout.String(), "from go -3")
	}
	if pr.Enabled() {
		t.Error("enabled after bpftrace ended")
	}
}
