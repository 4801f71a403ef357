package flame_test

import (
	"io"
	"strconv"
	"testing"

	"github.com/usdtkit/usdtkit/internal/lang/flame"
)

// benchStacks returns n distinct 16-frame stacks: three common outer
// frames, five levels chosen by the decimal digits of the stack's number
// (a tree as wide as a real program's) and eight inner frames that vary
// with it, some inlined, some without a symbol.
func benchStacks(n int) []flame.Sample {
	out := make([]flame.Sample, n)
	for i := range out {
		frames := make([]flame.Frame, 0, 16)
		for d := range 8 {
			v := (i*7 + d*13) % 97
			f := flame.Frame{Symbol: "inner" + strconv.Itoa(d) + "_" + strconv.Itoa(v), Object: app, Addr: uint64(0x400000 + d*0x1000 + v), Offset: uint64(d*0x1000 + v), File: "/src/inner.c", Line: v}
			if v%11 == 0 {
				f.Symbol = ""
			}
			f.Inlined = d == 2 && v%3 == 0
			frames = append(frames, f)
		}
		x := i
		for d := range 5 {
			frames = append(frames, flame.Frame{Symbol: "level" + strconv.Itoa(4-d) + "_" + strconv.Itoa(x%10), Object: app, Addr: uint64(0x500000 + d*0x100 + x%10)})
			x /= 10
		}
		frames = append(frames, fr("dispatch"), fr("main"), flame.Frame{Symbol: "__libc_start_call_main", Object: libc, Addr: 0x7f0000029d90})
		out[i] = flame.Sample{Frames: frames, Count: uint64(1 + i%5), Root: "server"}
	}
	return out
}

// countingWriter counts the bytes written, for a bytes/op metric.
type countingWriter struct{ n int64 }

func (w *countingWriter) Write(p []byte) (int, error) { w.n += int64(len(p)); return len(p), nil }

var _ io.Writer = (*countingWriter)(nil)

// BenchmarkWrite builds and writes each format for 100 000 distinct
// 16-frame stacks; out-bytes is the size of the output.
func BenchmarkWrite(b *testing.B) {
	samples := benchStacks(100_000)
	for _, f := range flame.Formats() {
		b.Run(string(f), func(b *testing.B) {
			b.ReportAllocs()
			var w countingWriter
			for b.Loop() {
				w.n = 0
				if err := flame.Write(&w, f, samples, nil); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(w.n), "out-bytes")
		})
	}
}

// TestBenchStacksDistinct checks the benchmark's premise: its stacks are
// distinct.
func TestBenchStacksDistinct(t *testing.T) {
	var w countingWriter
	s := benchStacks(1000)
	var buf []byte
	seen := map[string]bool{}
	for i := range s {
		buf = buf[:0]
		for _, f := range s[i].Frames {
			buf = append(buf, f.Name()...)
			buf = append(buf, ';')
		}
		seen[string(buf)] = true
	}
	if len(seen) != len(s) {
		t.Errorf("%d distinct stacks of %d", len(seen), len(s))
	}
	if err := flame.WriteFolded(&w, s); err != nil {
		t.Fatal(err)
	}
}
