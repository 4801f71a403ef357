// Package bench compares usdtkit with peer tools side by side, in one run.
//
// The machine is shared and noisy, so a benchmark here never states an
// absolute number to compare across runs: each iteration runs usdtkit and its
// peers in rotation on the same input and reports their times and ratios as
// metrics of one benchmark; the program benchmarks also report the median
// over iterations of the ratio of each pair of adjacent turns, which a
// burst of load during one tool's turn moves less. Run it with
//
//	go test -run '^$' -bench . ./bench
//
// Peers missing from the machine fail the benchmark when
// USDTKIT_REQUIRE_BPF=1 (CI) and are skipped otherwise.
package bench
