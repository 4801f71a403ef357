package dynsdt_test

import (
	"debug/elf"
	"fmt"
	"testing"

	"github.com/usdtkit/usdtkit/dynsdt"
)

// BenchmarkBuild builds providers of 1 to 10000 probes of three arguments;
// ns/probe shows whether the time is linear (issue 4's goal: ≤ 1 ms per
// 1000 probes).
func BenchmarkBuild(b *testing.B) {
	for _, n := range []int{1, 100, 1000, 10000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			p := &dynsdt.ProviderSpec{Name: "bench"}
			for i := range n {
				p.Probes = append(p.Probes, dynsdt.ProbeSpec{
					Name: fmt.Sprintf("probe__%d", i),
					Args: []dynsdt.ArgType{dynsdt.String, dynsdt.Int64, dynsdt.Uint32},
				})
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := dynsdt.Build(p, elf.EM_X86_64, nil); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/probe")
		})
	}
}
