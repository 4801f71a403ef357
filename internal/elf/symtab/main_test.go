package symtab

import (
	"testing"

	"github.com/usdtkit/usdtkit/internal/testutil"
)

// TestMain fails the package if the tests leaked file descriptors.
func TestMain(m *testing.M) { testutil.MainCheckingFDs(m) }
