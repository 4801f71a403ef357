package uprobe

import (
	"fmt"
	"os"
	"testing"
)

// TestMain fails the package if the tests leaked file descriptors.
func TestMain(m *testing.M) {
	// os/exec and os.Pipe set up the runtime's poller on first use; do it
	// before counting so its descriptors are not taken for a leak.
	if r, w, err := os.Pipe(); err == nil {
		r.Close()
		w.Close()
	}
	before := countFDs()
	code := m.Run()
	if after := countFDs(); code == 0 && after > before {
		fmt.Fprintf(os.Stderr, "file descriptors leaked: %d before the tests, %d after\n", before, after)
		code = 1
	}
	os.Exit(code)
}

func countFDs() int {
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return 0
	}
	return len(fds)
}
