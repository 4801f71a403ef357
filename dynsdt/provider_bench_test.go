//go:build amd64 || arm64

package dynsdt

import (
	"fmt"
	"sync/atomic"
	"testing"
)

// BenchmarkEnabled is the check generated code makes before computing
// arguments: one load of the probe site. /load is the floor, an atomic
// 4-byte load of a Go variable through a pointer.
func BenchmarkEnabled(b *testing.B) {
	p, err := Load(&traceSpec, &Options{Memfd: true})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { p.Close() })
	b.Run("load", func(b *testing.B) {
		word := new(uint32)
		n := 0
		for b.Loop() {
			if atomic.LoadUint32(word) != 0 {
				n++
			}
		}
		if n != 0 {
			b.Fatal("non-zero")
		}
	})
	// b.Loop's own cost per iteration (~1 ns here) hides a load: 16 calls per
	// iteration, reported per call as ns/Enabled, show what a check costs
	// in a loop of real work.
	b.Run("Enabled-x16", func(b *testing.B) {
		pr := p.Probe("str")
		n := 0
		for b.Loop() {
			for range 16 {
				if pr.Enabled() {
					n++
				}
			}
		}
		if n != 0 {
			b.Fatal("enabled without a tracer")
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*16), "ns/Enabled")
	})
	b.Run("Enabled", func(b *testing.B) {
		pr := p.Probe("str")
		b.ReportAllocs()
		n := 0
		for b.Loop() {
			if pr.Enabled() {
				n++
			}
		}
		if n != 0 {
			b.Fatal("enabled without a tracer")
		}
	})
}

// BenchmarkFire calls an untraced probe with two integer arguments.
// /nop-stub is a direct Go call of an empty assembly function, for scale;
// /untraced is Fire as a program calls it: the site's original bytes are
// there, so Fire returns after one load and compare, without calling the
// trampoline or the stub (/untraced-12 builds the 12-value slice too).
// TestLoadedStubs runs the mapped stubs themselves.
func BenchmarkFire(b *testing.B) {
	p, err := Load(&traceSpec, &Options{Memfd: true})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { p.Close() })
	b.Run("nop-stub", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			nopStub()
		}
	})
	b.Run("untraced", func(b *testing.B) {
		pr := p.Probe("str")
		b.ReportAllocs()
		for b.Loop() {
			pr.Fire(1, 2)
		}
	})
	b.Run("untraced-12", func(b *testing.B) {
		pr := p.Probe("twelve")
		b.ReportAllocs()
		for b.Loop() {
			pr.Fire(1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12)
		}
	})
}

// BenchmarkLoad builds, writes, maps and closes a provider of n probes
// with two arguments each, in a private directory.
func BenchmarkLoad(b *testing.B) {
	for _, n := range []int{1, 100, 1000, 10000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			spec := &ProviderSpec{Name: "kbench", Probes: make([]ProbeSpec, n)}
			for i := range spec.Probes {
				spec.Probes[i] = ProbeSpec{Name: fmt.Sprintf("probe%d", i), Args: []ArgType{String, Int64}}
			}
			dir := b.TempDir()
			b.ReportAllocs()
			for b.Loop() {
				p, err := Load(spec, &Options{Dir: dir})
				if err != nil {
					b.Fatal(err)
				}
				if err := p.Close(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
