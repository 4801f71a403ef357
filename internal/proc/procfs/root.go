package procfs

import (
	"fmt"
	"os"
	"strings"

	"golang.org/x/sys/unix"
)

// OpenRoot returns an O_PATH descriptor of the root directory of process
// pid as the process sees it (/proc/PID/root), or of "/" for pid 0. The
// descriptor keeps that root reachable after the process exits, so files
// a process named (its separate debug files, its /tmp/perf-PID.map) can
// still be found in it. The caller closes it. Errors wrap [ErrNoProcess]
// when the process is gone.
func OpenRoot(pid int) (*os.File, error) {
	name := "/"
	if pid != 0 {
		name = fmt.Sprintf("/proc/%d/root", pid)
	}
	fd, err := unix.Open(name, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		err = &os.PathError{Op: "open", Path: name, Err: err}
		if pid != 0 {
			return nil, procError(pid, err)
		}
		return nil, err
	}
	return os.NewFile(uintptr(fd), name), nil
}

// OpenInRoot opens the file name (absolute or relative, both taken from
// root) for reading, resolved inside root as a process whose root it is
// would resolve it, but never leaving it: absolute symlinks and ".." stay
// inside, /proc magic links are refused. Unlike [Open], symlinks are
// followed (debug directories are symlink farms). Only regular files are
// opened, never blocking, as by [OpenFile]; others give an error wrapping
// [ErrNotRegular]. The caller closes the file.
func OpenInRoot(root *os.File, name string) (*os.File, error) {
	full := strings.TrimSuffix(root.Name(), "/") + "/" + strings.TrimPrefix(name, "/")
	pfd, err := unix.Openat2(int(root.Fd()), name, &unix.OpenHow{
		Flags:   unix.O_PATH | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_IN_ROOT | unix.RESOLVE_NO_MAGICLINKS,
	})
	if err != nil {
		return nil, &os.PathError{Op: "openat2", Path: full, Err: err}
	}
	defer unix.Close(pfd)
	st, err := fstatRegular(pfd, full)
	if err != nil {
		return nil, err
	}
	return reopen(pfd, st, full)
}
