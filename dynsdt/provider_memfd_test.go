package dynsdt_test

import (
	"os"
	"strconv"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/usdtkit/usdtkit/dynsdt"
)

// memfdDescriptors returns this process's descriptors open on the file
// whose mappings path (Provider.Path) names: those whose link reads path
// and whose inode is the mappings', the way bcc looks a memfd up in
// /proc/PID/fd.
func memfdDescriptors(t *testing.T, path string, ino uint64) []int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	var fds []int
	for _, e := range ents {
		link, err := os.Readlink("/proc/self/fd/" + e.Name())
		if err != nil || link != path {
			continue
		}
		fi, err := os.Stat("/proc/self/fd/" + e.Name())
		if err != nil {
			continue
		}
		if fi.Sys().(*syscall.Stat_t).Ino == ino {
			fd, _ := strconv.Atoi(e.Name())
			fds = append(fds, fd)
		}
	}
	return fds
}

// countFDs returns the number of descriptors open in this process.
func countFDs(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(ents)
}

// TestMemfdKept checks that a memfd-backed Provider keeps one descriptor
// of its memfd, close-on-exec, for bcc's tools to find (as libstapsdt
// does), and that Close releases it: no descriptor is left after
// load/close cycles.
func TestMemfdKept(t *testing.T) {
	hostSupported(t)
	before := countFDs(t)
	for cycle := range 3 {
		p, err := dynsdt.Load(&loadSpec, &dynsdt.Options{Memfd: true})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { p.Close() })
		ms := objectMappings(t, p.Path())
		if len(ms) == 0 {
			t.Fatalf("cycle %d: no mapping of %s", cycle, p.Path())
		}
		fds := memfdDescriptors(t, p.Path(), ms[0].Inode)
		if len(fds) != 1 {
			t.Fatalf("cycle %d: descriptors of %s with inode %d: have %v, want one", cycle, p.Path(), ms[0].Inode, fds)
		}
		flags, err := unix.FcntlInt(uintptr(fds[0]), unix.F_GETFD, 0)
		if err != nil {
			t.Fatal(err)
		}
		if flags&unix.FD_CLOEXEC == 0 {
			t.Errorf("cycle %d: memfd %d is not close-on-exec", cycle, fds[0])
		}
		if err := p.Close(); err != nil {
			t.Fatal(err)
		}
		if fds := memfdDescriptors(t, p.Path(), ms[0].Inode); len(fds) != 0 {
			t.Errorf("cycle %d: descriptors of %s after Close: %v", cycle, p.Path(), fds)
		}
	}
	if after := countFDs(t); after != before {
		t.Errorf("open descriptors: %d before the load/close cycles, %d after", before, after)
	}
}
