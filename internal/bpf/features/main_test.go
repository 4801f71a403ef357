package features

import (
	"testing"

	"github.com/usdtkit/usdtkit/internal/testutil"
)

// TestMain fails the package when the tests leak file descriptors: every
// probe closes the programs and links it creates.
func TestMain(m *testing.M) { testutil.MainCheckingFDs(m) }
