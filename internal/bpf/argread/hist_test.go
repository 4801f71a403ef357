package argread

import (
	"math"
	"testing"
)

// bpftraceLog2 is bpftrace's log2() bucket for hist(), written from the
// definition in its codegen (createLog2Function): 0 for n < 0, 1 for 0, and
// for n > 0 two plus the position of the highest set bit, found by halving
// the shift from 32 down to 1.
func bpftraceLog2(n int64) int {
	if n < 0 {
		return 0
	}
	if n == 0 {
		return 1
	}
	result := 2
	for i := 5; i >= 0; i-- {
		shift := 0
		if n >= 1<<(1<<i) {
			shift = 1 << i
		}
		n >>= shift
		result += shift
	}
	return result
}

func TestHistBucket(t *testing.T) {
	values := []int64{math.MinInt64, -1 << 40, -2, -1, 0, 1, 2, 3, 4, 7, 8, 1000, 1023, 1024, 1 << 31, 1<<32 - 1, 1 << 32, 1 << 62, math.MaxInt64}
	for _, v := range values {
		if have, want := HistBucket(uint64(v), true), bpftraceLog2(v); have != want {
			t.Errorf("HistBucket(%d, signed) = %d, want %d", v, have, want)
		}
		if v >= 0 {
			if have, want := HistBucket(uint64(v), false), bpftraceLog2(v); have != want {
				t.Errorf("HistBucket(%d, unsigned) = %d, want %d", v, have, want)
			}
		}
	}
	for _, tc := range []struct {
		v    uint64
		want int
	}{
		{1 << 63, 65},
		{math.MaxUint64, 65},
	} {
		if have := HistBucket(tc.v, false); have != tc.want || have >= HistBuckets {
			t.Errorf("HistBucket(%#x, unsigned) = %d, want %d", tc.v, have, tc.want)
		}
	}
}
