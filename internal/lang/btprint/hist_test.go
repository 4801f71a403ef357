package btprint

import (
	"testing"

	"github.com/usdtkit/usdtkit/internal/bpf/argread"
)

func TestAppendHist(t *testing.T) {
	buckets := make([]uint64, argread.HistBuckets)
	for _, v := range []uint64{0, 1, 5, 6, 7, 1500, 1500, 1500, 1500} {
		buckets[argread.HistBucket(v, false)]++
	}
	have := string(AppendHist(nil, "@[python:line]", buckets))
	want := `@[python:line]:
[0]                    1 |@@@@@@@@@@@@@                                       |
[1]                    1 |@@@@@@@@@@@@@                                       |
[2, 4)                 0 |                                                    |
[4, 8)                 3 |@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@             |
[8, 16)                0 |                                                    |
[16, 32)               0 |                                                    |
[32, 64)               0 |                                                    |
[64, 128)              0 |                                                    |
[128, 256)             0 |                                                    |
[256, 512)             0 |                                                    |
[512, 1K)              0 |                                                    |
[1K, 2K)               4 |@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@|
`
	if have != want {
		t.Errorf("have:\n%s\nwant:\n%s", have, want)
	}
	if have := string(AppendHist(nil, "@empty", make([]uint64, 3))); have != "@empty:\n" {
		t.Errorf("empty: %q", have)
	}
}

func TestBucketLabel(t *testing.T) {
	for i, want := range map[int]string{
		0: "(..., 0)", 1: "[0]", 2: "[1]", 3: "[2, 4)", 11: "[512, 1K)", 12: "[1K, 2K)",
		21: "[512K, 1M)", 32: "[1G, 2G)", 64: "[4E, 8E)", 65: "[8E, ...)",
	} {
		if have := bucketLabel(i); have != want {
			t.Errorf("bucketLabel(%d) = %q, want %q", i, have, want)
		}
	}
}
