package features

import (
	"testing"

	"github.com/usdtkit/usdtkit/internal/testutil"
)

// BenchmarkUprobeHit measures one call of a function of this process whose
// first instruction is probed by an empty BPF program: /none is the call
// without a uprobe (the floor), /int3 a 1-byte nop site, which always traps,
// and /nop5 a 5-byte nop site, which kernels that optimize it (see
// Nop5Optimized) enter through a trampoline and a syscall instead. Compare
// the three of one run (benchstat), not runs with each other.
func BenchmarkUprobeHit(b *testing.B) {
	nop5, nop1, ok := sites()
	if !ok {
		b.Skip("no probe sites on this architecture")
	}
	testutil.RequireBPF(b)
	for _, bc := range []struct {
		name   string
		site   codeSite
		attach bool
	}{
		{"none", nop5, false},
		{"int3", nop1, true},
		{"nop5", nop5, true},
	} {
		b.Run(bc.name, func(b *testing.B) {
			if bc.attach {
				p, err := attachSelf(bc.site.addr)
				if err != nil {
					b.Fatal(err)
				}
				b.Cleanup(func() {
					if err := p.Close(); err != nil {
						b.Error(err)
					}
				})
			}
			b.ReportAllocs()
			for b.Loop() {
				bc.site.call()
			}
		})
	}
}
