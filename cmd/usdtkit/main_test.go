package main

import (
	"testing"

	"github.com/usdtkit/usdtkit/internal/testutil"
	"github.com/usdtkit/usdtkit/trace"
)

// TestMain checks for leaked files once the warm-up that trace's RunE
// starts (trace.Warm) has ended: a command that fails at its flags
// returns while the warm-up still holds its files.
func TestMain(m *testing.M) { testutil.MainCheckingFDs(m, func() { <-trace.Warm() }) }
