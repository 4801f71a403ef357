package bench

import (
	"math/rand/v2"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/usdtkit/usdtkit/internal/stacks/symbolize"
	"github.com/usdtkit/usdtkit/internal/testutil"
)

// symStacks is the number of distinct stacks BenchmarkSymbolize
// symbolizes per iteration, symDepth their depth.
const (
	symStacks = 100_000
	symDepth  = 16
)

// BenchmarkSymbolize symbolizes 100 000 distinct user stacks of 16 random
// code addresses of a running python3.11 (its binary, libpython if shared,
// libc with its separate debug file) per iteration:
//
//   - cold: a new Symbolizer and Cache each iteration, so the object
//     tables are read (and debug files found) inside the timed loop;
//   - warm: one Symbolizer, tables already read, frames appended to a
//     reused buffer; warm-nodwarf the same without DWARF (no inlined
//     frames, no C file:line);
//   - hex: the floor, formatting the same addresses as bare hex.
//
// Metrics: ns/stack; cpu-ns/stack, the process's CPU time (user and
// system, GC included) per stack, which other processes competing for the
// CPUs move less than wall time; and retained-MiB, the heap a Symbolizer
// and its Cache keep after symbolizing (measured once, after a GC).
func BenchmarkSymbolize(b *testing.B) {
	testutil.RequireRoot(b)
	py := testutil.RequireTool(b, "python3.11")
	benchSymbolize(b, exec.Command(py, "-c", "import sys; print('done', flush=True); sys.stdin.read()"), "")
}

// BenchmarkSymbolizeGo is BenchmarkSymbolize on a Go program built with
// DWARF, whose addresses are expanded into inlined calls.
func BenchmarkSymbolizeGo(b *testing.B) {
	testutil.RequireRoot(b)
	bin := testutil.BuildGo(b, "gotarget")
	benchSymbolize(b, exec.Command(bin), "pid")
}

// benchSymbolize starts cmd, sends it the line hello (if any), waits for
// its "done" line, then symbolizes random stacks of it.
func benchSymbolize(b *testing.B, cmd *exec.Cmd, hello string) {
	p := testutil.StartCmd(b, cmd)
	if hello != "" {
		p.Send(b, hello)
	}
	p.Until(b, "done")
	pid := p.PID()
	stacks := randomStacks(b, pid)

	b.Run("cold", func(b *testing.B) {
		b.ReportAllocs()
		cpu := cpuTime(b)
		for b.Loop() {
			s, err := symbolize.New(pid, nil)
			if err != nil {
				b.Fatal(err)
			}
			symbolizeAll(b, s, stacks)
			s.Close()
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*symStacks), "ns/stack")
		b.ReportMetric(float64(cpuTime(b)-cpu)/float64(b.N*symStacks), "cpu-ns/stack")
	})
	for _, mode := range []struct {
		name string
		opts *symbolize.Options
	}{{"warm", nil}, {"warm-nodwarf", &symbolize.Options{NoDWARF: true}}} {
		b.Run(mode.name, func(b *testing.B) { benchWarm(b, pid, mode.opts, stacks) })
	}
	b.Run("hex", func(b *testing.B) {
		b.ReportAllocs()
		n := 0
		for b.Loop() {
			for _, st := range stacks {
				for _, a := range st {
					n += len(symbolize.Frame{Addr: a}.String())
				}
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*symStacks), "ns/stack")
	})
}

// symbolizeAll symbolizes every stack and fails when a frame of a known
// object names neither a function nor the object.
func symbolizeAll(b *testing.B, s *symbolize.Symbolizer, stacks [][]uint64) {
	named := 0
	var buf []symbolize.Frame
	for _, st := range stacks {
		buf = s.AppendFrames(buf[:0], st)
		for _, f := range buf {
			if f.Object == "" {
				b.Fatalf("frame %#x: no object", f.Addr)
			}
			if f.Symbol != "" {
				named++
			}
		}
	}
	if named == 0 {
		b.Fatal("no frame was named")
	}
}

// randomStacks returns symStacks distinct stacks of symDepth addresses
// drawn uniformly from the executable file mappings of process pid.
func randomStacks(b *testing.B, pid int) [][]uint64 {
	maps, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/maps")
	if err != nil {
		b.Fatal(err)
	}
	type rng struct{ lo, hi uint64 }
	var code []rng
	var total uint64
	for _, line := range strings.Split(string(maps), "\n") {
		f := strings.Fields(line)
		if len(f) < 6 || !strings.Contains(f[1], "x") || !strings.HasPrefix(f[5], "/") {
			continue
		}
		lo, hi, _ := strings.Cut(f[0], "-")
		l, _ := strconv.ParseUint(lo, 16, 64)
		h, _ := strconv.ParseUint(hi, 16, 64)
		code = append(code, rng{l, h})
		total += h - l
	}
	if total == 0 {
		b.Fatal("no executable file mappings")
	}
	r := rand.New(rand.NewPCG(1, 2))
	stacks := make([][]uint64, symStacks)
	for i := range stacks {
		st := make([]uint64, symDepth)
		for j := range st {
			x := r.Uint64N(total)
			for _, c := range code {
				if x < c.hi-c.lo {
					st[j] = c.lo + x
					break
				}
				x -= c.hi - c.lo
			}
		}
		stacks[i] = st
	}
	return stacks
}

// benchWarm times symbolizing stacks with tables already read.
func benchWarm(b *testing.B, pid int, opts *symbolize.Options, stacks [][]uint64) {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	s, err := symbolize.New(pid, opts)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	symbolizeAll(b, s, stacks)
	runtime.GC()
	runtime.ReadMemStats(&after)
	b.ReportAllocs()
	b.ResetTimer()
	cpu := cpuTime(b)
	for b.Loop() {
		symbolizeAll(b, s, stacks)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*symStacks), "ns/stack")
	b.ReportMetric(float64(cpuTime(b)-cpu)/float64(b.N*symStacks), "cpu-ns/stack")
	b.ReportMetric(float64(int64(after.HeapAlloc)-int64(before.HeapAlloc))/(1<<20), "retained-MiB")
	runtime.KeepAlive(s)
}

// cpuTime returns the CPU time (user and system) this process has used,
// in nanoseconds.
func cpuTime(b *testing.B) int64 {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}
