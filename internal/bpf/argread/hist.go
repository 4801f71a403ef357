package argread

import "math/bits"

// HistBuckets is the number of log2 histogram buckets: see HistBucket.
const HistBuckets = 66

// HistBucket returns the log2 histogram bucket of v. It follows bpftrace's hist(): bucket 0 holds negative
// values (only when signed), bucket 1 holds 0, and bucket k >= 2 holds
// [2^(k-2), 2^(k-1)), so 1 is in bucket 2, 2..3 in bucket 3, 4..7 in 4. Unlike
// bpftrace, which compares as signed whatever the type, an unsigned value of
// 2^63 or more goes to bucket 65 rather than 0.
func HistBucket(v uint64, signed bool) int {
	if signed && int64(v) < 0 {
		return 0
	}
	if v == 0 {
		return 1
	}
	return bits.Len64(v) + 1
}
