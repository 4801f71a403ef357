package testutil

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// MainCheckingFDs runs the tests of a package and fails it if, when they
// end, this process has file descriptors open that it did not have before:
// a Close forgotten in library code or in a test. Use it as
//
//	func TestMain(m *testing.M) { testutil.MainCheckingFDs(m) }
//
// settle runs after the tests, before the check: it waits for background
// work that holds files for a while by design and then closes them (say
// trace.Warm's, which a command that fails early leaves running).
func MainCheckingFDs(m *testing.M, settle ...func()) {
	before := openFDs()
	code := m.Run()
	for _, f := range settle {
		f()
	}
	if code == 0 {
		leaked := leakedFDs(before, openFDs())
		if len(leaked) > 0 {
			fmt.Fprintf(os.Stderr, "FAIL: tests leaked file descriptors: %v\n", leaked)
			code = 1
		}
	}
	os.Exit(code)
}

// openFDs lists /proc/self/fd as "N -> target".
func openFDs() []string {
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return nil
	}
	var fds []string
	for _, e := range entries {
		dest, err := os.Readlink("/proc/self/fd/" + e.Name())
		if err != nil {
			// The directory's own fd, closed by now.
			continue
		}
		fds = append(fds, e.Name()+" -> "+dest)
	}
	return fds
}

// leakedFDs returns the entries of after that are not in before, leaving
// out descriptors the Go runtime and testing package open for themselves
// (epoll, pipes of the poller, the test's temporary files).
func leakedFDs(before, after []string) []string {
	// The testing package keeps its profile and trace files open past m.Run.
	var own []string
	for _, name := range []string{"test.cpuprofile", "test.memprofile", "test.blockprofile", "test.mutexprofile", "test.trace", "test.coverprofile"} {
		if fl := flag.Lookup(name); fl != nil && fl.Value.String() != "" {
			own = append(own, filepath.Base(fl.Value.String()))
		}
	}
	var leaked []string
	for _, fd := range after {
		if slices.Contains(before, fd) || runtimeFD(fd) || slices.Contains(own, filepath.Base(fd)) {
			continue
		}
		leaked = append(leaked, fd)
	}
	return leaked
}

func runtimeFD(fd string) bool {
	for _, s := range []string{"anon_inode:[eventpoll]", "anon_inode:[eventfd]", "pipe:["} {
		if strings.Contains(fd, s) {
			return true
		}
	}
	return false
}
