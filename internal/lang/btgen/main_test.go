package btgen_test

import (
	"testing"

	"github.com/usdtkit/usdtkit/internal/testutil"
)

func TestMain(m *testing.M) { testutil.MainCheckingFDs(m) }
