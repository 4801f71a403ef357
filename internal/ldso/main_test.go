package ldso

import (
	"fmt"
	"os"
	"testing"
)

// TestMain fails the package when the tests leak file descriptors.
func TestMain(m *testing.M) {
	// Start the runtime poller first: its epoll fd and pipe stay open.
	r, w, err := os.Pipe()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	r.Close()
	w.Close()
	before := countFDs()
	code := m.Run()
	if after := countFDs(); code == 0 && after > before {
		fmt.Fprintf(os.Stderr, "leaked %d file descriptors\n", after-before)
		code = 1
	}
	os.Exit(code)
}

func countFDs() int {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return -1
	}
	return len(ents)
}
