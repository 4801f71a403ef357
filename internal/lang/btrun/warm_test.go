package btrun_test

import (
	"os"
	"testing"

	"github.com/usdtkit/usdtkit/internal/lang/btrun"
	"github.com/usdtkit/usdtkit/internal/testutil"
)

// TestWarm checks that Warm's background registration succeeds here, with
// two calls at once and again after they end, and leaves no file
// descriptor (program or link) behind.
func TestWarm(t *testing.T) {
	testutil.RequireBPF(t)
	before, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		first := btrun.Warm()
		second := btrun.Warm()
		<-first
		<-second
		if err := btrun.WarmErr(); err != nil {
			t.Fatalf("warm-up registration: %v", err)
		}
	}
	after, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	if len(after) > len(before) {
		t.Errorf("%d file descriptors open after Warm, %d before", len(after), len(before))
	}
}
