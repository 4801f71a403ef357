package trace_test

import (
	"fmt"
	"testing"

	"github.com/usdtkit/usdtkit/internal/testutil"
	"github.com/usdtkit/usdtkit/trace"
)

// BenchmarkCompileUSDT compiles a program of one, then five usdt probes of
// a running tracee (-p), each counted per probe: the 5-probe program of
// bench's BenchmarkProgramStart. The difference is what each further
// probe costs to look up.
func BenchmarkCompileUSDT(b *testing.B) {
	bin := testutil.BuildTracee(b, "-O2", "-DTRACEE_NO_WIDE")
	tc := testutil.StartTracee(b, bin)
	names := []string{"ints", "stack", "consts", "str", "global"}
	for _, n := range []int{1, 5} {
		b.Run(fmt.Sprintf("probes=%d", n), func(b *testing.B) {
			src := `BEGIN { printf("ready\n"); } `
			for _, name := range names[:n] {
				src += "usdt:" + bin + ":tracee:" + name + " { @[probe] = count(); } "
			}
			opts := &trace.CompileOptions{PID: tc.PID()}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := trace.Compile("b.bt", src, opts); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkCompileUprobe is BenchmarkCompileUSDT for functions of libc
// (uprobe::NAME), which the tracee maps.
func BenchmarkCompileUprobe(b *testing.B) {
	bin := testutil.BuildTracee(b, "-O2", "-DTRACEE_NO_WIDE")
	tc := testutil.StartTracee(b, bin)
	tc.WaitReady(b)
	names := []string{"malloc", "free", "calloc", "realloc", "strlen"}
	for _, n := range []int{1, 5} {
		b.Run(fmt.Sprintf("probes=%d", n), func(b *testing.B) {
			src := `BEGIN { printf("ready\n"); } `
			for _, name := range names[:n] {
				src += "uprobe:libc:" + name + " { @[probe] = count(); } "
			}
			opts := &trace.CompileOptions{PID: tc.PID()}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := trace.Compile("b.bt", src, opts); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
