package btprint

import (
	"bufio"
	"fmt"
	"math/rand/v2"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/usdtkit/usdtkit/internal/testutil"
)

// TestStdSortMatchesLibstdcxx sorts random slices full of ties with
// stdSort and heapSort and with libstdc++'s std::sort and
// std::partial_sort (testdata/stdsort, built at test time): the orders of
// equal elements must agree, since bpftrace prints in that order.
func TestStdSortMatchesLibstdcxx(t *testing.T) {
	gxx := testutil.RequireTool(t, "g++")
	bin := filepath.Join(t.TempDir(), "stdsort")
	if out, err := exec.Command(gxx, "-O1", "-o", bin, filepath.Join("testdata", "stdsort", "stdsort.cc")).CombinedOutput(); err != nil {
		t.Fatalf("g++: %v\n%s", err, out)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	type record struct {
		heap bool
		vals []int64
	}
	var recs []record
	for _, n := range []int{0, 1, 2, 3, 15, 16, 17, 18, 20, 31, 32, 33, 50, 100, 257, 1000, 5000} {
		for _, spread := range []int64{1, 2, 5, 50, 1 << 40} {
			vals := make([]int64, n)
			for i := range vals {
				vals[i] = rng.Int64N(spread) - spread/2
			}
			recs = append(recs, record{false, vals}, record{true, vals})
		}
	}
	// Sorted, reversed and organ-pipe inputs stress the pivot choice.
	for _, n := range []int{40, 300} {
		up, down, pipe := make([]int64, n), make([]int64, n), make([]int64, n)
		for i := range up {
			up[i], down[i], pipe[i] = int64(i/3), int64(n-i), int64(min(i, n-i))
		}
		recs = append(recs, record{false, up}, record{false, down}, record{false, pipe})
	}
	var in strings.Builder
	for _, r := range recs {
		mode := "s"
		if r.heap {
			mode = "h"
		}
		fmt.Fprintf(&in, "%s %d", mode, len(r.vals))
		for _, v := range r.vals {
			fmt.Fprintf(&in, " %d", v)
		}
		in.WriteString("\n")
	}
	cmd := exec.Command(bin)
	cmd.Stdin = strings.NewReader(in.String())
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	sc.Buffer(nil, 1<<20)
	for _, r := range recs {
		if !sc.Scan() {
			t.Fatalf("stdsort printed too few lines: %v", sc.Err())
		}
		idx := make([]int, len(r.vals))
		for i := range idx {
			idx[i] = i
		}
		less := func(a, b int) bool { return r.vals[a] < r.vals[b] }
		if r.heap {
			heapSort(idx, less)
		} else {
			stdSort(idx, less)
		}
		have := strings.Trim(fmt.Sprint(idx), "[]")
		if have != sc.Text() {
			t.Errorf("heap %v, %d values: have order\n%s\nlibstdc++:\n%s", r.heap, len(r.vals), have, sc.Text())
		}
	}
}
