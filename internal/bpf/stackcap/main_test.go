package stackcap_test

import (
	"testing"

	"github.com/usdtkit/usdtkit/internal/testutil"
)

// TestMain fails the package when the tests leak file descriptors.
func TestMain(m *testing.M) { testutil.MainCheckingFDs(m) }
