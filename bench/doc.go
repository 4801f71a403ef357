// Package bench compares usdtkit with peer tools, side by side in one run.
//
// The machine is shared and noisy. So each iteration runs usdtkit and its
// peers in turn on the same input, and reports times and ratios as
// metrics of one benchmark. Program benchmarks also report the median
// ratio of adjacent turns, which a burst of load moves less. Run it with
//
//	go test -run '^$' -bench . ./bench
//
// A missing peer fails the benchmark when USDTKIT_REQUIRE_BPF=1 (CI), and
// skips it otherwise. docs/benchmarks.md holds the results.
package bench
