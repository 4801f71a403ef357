package btprint

import (
	"strconv"
	"strings"

	"github.com/usdtkit/usdtkit/internal/bpf/argread"
)

// histWidth is the width of the bar of the largest bucket, as bpftrace's.
const histWidth = 52

// AppendHist renders log2 histogram buckets (indexed as argread.HistBucket
// gives them) like bpftrace's hist(): a "title:" line, then one line per
// bucket from the first non-empty one to the last, each with its range, its
// count and a bar scaled to the largest count. Empty histograms print the
// title only.
func AppendHist(dst []byte, title string, buckets []uint64) []byte {
	dst = append(append(dst, title...), ":\n"...)
	first, last := -1, -1
	var max uint64
	for i, n := range buckets {
		if n == 0 {
			continue
		}
		if first < 0 {
			first = i
		}
		last = i
		max = maxU(max, n)
	}
	if first < 0 {
		return dst
	}
	for i := first; i <= last; i++ {
		label := bucketLabel(i)
		dst = append(dst, label...)
		count := strconv.FormatUint(buckets[i], 10)
		// bpftrace: the range left-aligned in 16 columns, the count
		// right-aligned in 8.
		dst = append(dst, strings.Repeat(" ", max0(16-len(label))+max0(8-len(count)))...)
		dst = append(dst, count...)
		bar := int(buckets[i] * histWidth / max)
		dst = append(dst, " |"...)
		dst = append(dst, strings.Repeat("@", bar)...)
		dst = append(dst, strings.Repeat(" ", histWidth-bar)...)
		dst = append(dst, "|\n"...)
	}
	return dst
}

// bucketLabel is bucket i's range: "(..., 0)", "[0]", "[1]", "[2, 4)", …
// "[1K, 2K)", with K, M, G, T, P, E for powers of 1024.
func bucketLabel(i int) string {
	switch {
	case i <= 0:
		return "(..., 0)"
	case i == 1:
		return "[0]"
	case i == 2:
		return "[1]"
	case i >= argread.HistBuckets-1:
		return "[" + pow2(63) + ", ...)"
	}
	return "[" + pow2(i-2) + ", " + pow2(i-1) + ")"
}

// pow2 writes 2^n with a binary suffix when it divides evenly.
func pow2(n int) string {
	suffixes := []string{"", "K", "M", "G", "T", "P", "E"}
	k := n / 10
	return strconv.FormatUint(1<<(n-10*k), 10) + suffixes[k]
}

func maxU(a, b uint64) uint64 {
	if a > b {
		return a
	}
	return b
}

func max0(n int) int {
	if n < 0 {
		return 0
	}
	return n
}
