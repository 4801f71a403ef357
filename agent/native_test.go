package agent_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/usdtkit/usdtkit/internal/testutil"
)

// TestAgentNativeHistogram exports a hist() map with native_histograms:
// the gathered histogram has schema 0 and hist's buckets one to one
// (the value 0 in the zero bucket, [2^k, 2^(k+1)) in bucket k+1) besides
// its classic buckets, and a real Prometheus with native histograms
// enabled scrapes it: histogram_count and histogram_quantile of the
// native series agree with what the target fired (0…9).
func TestAgentNativeHistogram(t *testing.T) {
	testutil.RequireBPF(t)
	target := buildTarget(t)
	a := newAgent(t, fmt.Appendf(nil, `{"scan_interval": "50ms", "programs": [
		{"name": "nh", "source": "usdt::agentt:hit { @vals = hist(arg0); @lin = lhist(arg0, 0, 10, 2); }",
		 "targets": [{"binary": %q}], "maps": {"@vals": {"native_histograms": true}}}]}`, target))
	addr := startAgent(t, a)
	c := startChild(t, target, "10", "wait")
	fireWhenAttached(t, a, 1, c)

	// Values 0…9: 0 | 1 | 2,3 | 4…7 | 8,9.
	want := map[string]float64{
		`usdtkit_nh_vals_count{}`:         10,
		`usdtkit_nh_vals_bucket{le="0"}`:  1,
		`usdtkit_nh_vals_bucket{le="7"}`:  8,
		`usdtkit_nh_vals_bucket{le="15"}`: 10,
		`usdtkit_nh_lin_bucket{le="1"}`:   2,
	}
	waitFor(t, "counted", 10*time.Second, func() (bool, string) {
		return check(series(t, a), want)
	})
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(a)
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		switch f.GetName() {
		case "usdtkit_nh_vals":
			h := f.GetMetric()[0].GetHistogram()
			var idx int32
			var have []string
			var cnt int64
			deltas := h.GetPositiveDelta()
			for _, sp := range h.GetPositiveSpan() {
				idx += sp.GetOffset()
				for range sp.GetLength() {
					if len(deltas) == 0 {
						t.Fatalf("spans longer than deltas: %v", h)
					}
					cnt, deltas = cnt+deltas[0], deltas[1:]
					have = append(have, fmt.Sprintf("%d:%d", idx, cnt))
					idx++
				}
			}
			if h.GetSchema() != 0 || h.GetZeroCount() != 1 || h.GetZeroThreshold() != 0 || fmt.Sprint(have) != "[1:1 2:2 3:4 4:2]" {
				t.Errorf("native: schema %d zero %d (threshold %v), buckets %v; want 0, 1 (0), [1:1 2:2 3:4 4:2]",
					h.GetSchema(), h.GetZeroCount(), h.GetZeroThreshold(), have)
			}
		case "usdtkit_nh_lin":
			if h := f.GetMetric()[0].GetHistogram(); h.Schema != nil || len(h.GetPositiveSpan()) != 0 {
				t.Errorf("lhist map has native buckets: %v", h)
			}
		}
	}

	prom := startPrometheus(t, addr, "--enable-feature=native-histograms")
	for q, ok := range map[string]func(float64) bool{
		`histogram_count(usdtkit_nh_vals)`: func(v float64) bool { return v == 10 },
		// The 5th of 10 values is in (4, 8], the native bucket of 4…7.
		`histogram_quantile(0.5, usdtkit_nh_vals)`: func(v float64) bool { return v > 4 && v <= 8 },
	} {
		waitFor(t, "prometheus "+q, 30*time.Second, func() (bool, string) {
			have, err := prom.query(q)
			if err != nil {
				return false, err.Error()
			}
			return ok(have), fmt.Sprint(have)
		})
		have, _ := prom.query(q)
		t.Logf("%s = %v", q, have)
	}
}
