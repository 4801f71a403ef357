package dynsdt_test

import (
	"testing"

	"github.com/usdtkit/usdtkit/internal/testutil"
)

// TestMain fails the package when a test leaves a file descriptor open:
// a Provider not closed, or a descriptor Load forgot on an error path.
func TestMain(m *testing.M) { testutil.MainCheckingFDs(m) }
