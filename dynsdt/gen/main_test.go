package gen_test

import (
	"testing"

	"github.com/usdtkit/usdtkit/internal/testutil"
)

// TestMain fails the package when a test leaves a file descriptor open:
// WriteFiles forgetting a directory or a temporary file on an error path.
func TestMain(m *testing.M) { testutil.MainCheckingFDs(m) }
