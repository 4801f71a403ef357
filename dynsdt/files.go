package dynsdt

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// ErrUnsafeDir is wrapped by Load's error when Options.Dir is a symbolic
// link, not a directory, not owned by this process's effective user, or
// writable by others. (When the default directory is so, or not private
// with mode 0700, Load uses a memfd instead.)
var ErrUnsafeDir = errors.New("directory is not private")

// defaultDir is where Load writes object files when Options.Dir is empty:
// $XDG_RUNTIME_DIR/usdtkit (a per-user tmpfs that systemd empties at
// logout), else usdtkit-<euid> in os.TempDir().
func defaultDir() string {
	if d := os.Getenv("XDG_RUNTIME_DIR"); filepath.IsAbs(d) {
		return filepath.Join(d, "usdtkit")
	}
	return filepath.Join(os.TempDir(), "usdtkit-"+strconv.Itoa(os.Geteuid()))
}

// openDir opens the directory for object files and checks that only this
// user can create, rename or remove entries in it. With dir == "" it is
// defaultDir, created with mode 0700 if missing and required to have no
// group or other permissions at all; a given dir must exist, and may be
// readable by others. The checks are made on the open descriptor (fstat),
// never following a symbolic link, so that the directory checked is the one
// files are created in (openat). The caller closes the returned fd.
func openDir(dir string) (path string, fd int, err error) {
	return openDirFlags(dir, true)
}

// openDirFlags is openDir, creating the default directory only if mkdir.
func openDirFlags(dir string, mkdir bool) (path string, fd int, err error) {
	private := dir == ""
	if private {
		dir = defaultDir()
		if mkdir {
			if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
				return "", -1, err
			}
		}
	}
	fd, err = unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		if errors.Is(err, unix.ELOOP) || errors.Is(err, unix.ENOTDIR) {
			return "", -1, fmt.Errorf("open %s: %w: %w", dir, ErrUnsafeDir, err)
		}
		return "", -1, &os.PathError{Op: "open", Path: dir, Err: err}
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return "", -1, &os.PathError{Op: "stat", Path: dir, Err: err}
	}
	perm := st.Mode & 0o777
	switch {
	case st.Uid != uint32(os.Geteuid()):
		err = fmt.Errorf("%s is owned by uid %d, not %d: %w", dir, st.Uid, os.Geteuid(), ErrUnsafeDir)
	case private && perm&0o077 != 0:
		err = fmt.Errorf("%s has mode %#o, want 0700: %w", dir, perm, ErrUnsafeDir)
	case perm&0o022 != 0:
		err = fmt.Errorf("%s has mode %#o, writable by others: %w", dir, perm, ErrUnsafeDir)
	}
	if err != nil {
		unix.Close(fd)
		return "", -1, err
	}
	return dir, fd, nil
}

// objectName is the name of an object file: "<provider>-<pid>-<16 hex>.so".
// The PID tells people which process made it (reap asks the file's lock,
// not the PID, whether it is in use); the random part makes names
// unpredictable and lets a process load a provider more than once.
func objectName(provider string, pid int) (string, error) {
	var r [8]byte
	if _, err := rand.Read(r[:]); err != nil {
		return "", err
	}
	return provider + "-" + strconv.Itoa(pid) + "-" + hex.EncodeToString(r[:]) + ".so", nil
}

// parseObjectName returns the PID in a name objectName made, and false for
// any other name.
func parseObjectName(name string) (int, bool) {
	rest, ok := strings.CutSuffix(name, ".so")
	if !ok {
		return 0, false
	}
	parts := strings.Split(rest, "-")
	if len(parts) != 3 || !isIdent(parts[0]) || len(parts[2]) != 16 {
		return 0, false
	}
	if _, err := hex.DecodeString(parts[2]); err != nil {
		return 0, false
	}
	pid, err := strconv.Atoi(parts[1])
	if err != nil || pid <= 0 || strconv.Itoa(pid) != parts[1] {
		return 0, false
	}
	return pid, true
}

// createObjectFile creates a new object file in the directory open as
// dirfd, writes b to it and returns its descriptor, holding a shared
// flock(2) on it: the lock tells reapers, in any PID namespace, that the
// file is in use. The caller owns fd and removes name on failure after the
// file was created.
func createObjectFile(dirfd int, provider string, b []byte) (name string, fd int, err error) {
	pid := os.Getpid()
	for range 8 {
		if name, err = objectName(provider, pid); err != nil {
			return "", -1, err
		}
		fd, err = unix.Openat(dirfd, name, unix.O_RDWR|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
		if errors.Is(err, unix.EEXIST) {
			continue
		}
		if err != nil {
			return "", -1, fmt.Errorf("create %s: %w", name, err)
		}
		reaped, err := lockAndCheck(dirfd, name, fd)
		if err != nil || reaped {
			unix.Close(fd)
			if err != nil {
				return "", -1, err
			}
			// Another Load reaped the file before we locked it: its
			// lock was free, as every new file's is for a moment.
			err = fmt.Errorf("create %s: reaped before it was locked", name)
			continue
		}
		if err := writeAll(fd, b); err != nil {
			unix.Close(fd)
			unix.Unlinkat(dirfd, name, 0)
			return "", -1, fmt.Errorf("write %s: %w", name, err)
		}
		return name, fd, nil
	}
	return "", -1, fmt.Errorf("create object file for %s: %w", provider, err)
}

// lockAndCheck takes the shared lock on the new file fd and checks that
// name still refers to it. It reports reaped if a reaper took the file for
// stale between its creation and the lock (it holds the exclusive lock or
// removed the name); the caller then tries another name.
func lockAndCheck(dirfd int, name string, fd int) (reaped bool, err error) {
	if err := unix.Flock(fd, unix.LOCK_SH|unix.LOCK_NB); errors.Is(err, unix.EWOULDBLOCK) {
		return true, nil
	} else if err != nil {
		return false, fmt.Errorf("lock %s: %w", name, err)
	}
	same, err := isFile(dirfd, name, fd)
	if errors.Is(err, unix.ENOENT) {
		return true, nil
	}
	if err != nil {
		return false, fmt.Errorf("stat %s: %w", name, err)
	}
	if !same {
		return false, fmt.Errorf("%s was replaced after its creation: %w", name, ErrUnsafeDir)
	}
	return false, nil
}

// isFile reports whether name in the directory open as dirfd is the file
// open as fd (same device and inode), without following a symbolic link.
func isFile(dirfd int, name string, fd int) (bool, error) {
	var have, want unix.Stat_t
	if err := unix.Fstat(fd, &want); err != nil {
		return false, err
	}
	if err := unix.Fstatat(dirfd, name, &have, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return false, err
	}
	return have.Dev == want.Dev && have.Ino == want.Ino, nil
}

// removeObjectFile removes name from the directory open as dirfd if it
// still is the file open as fd; it never resolves the directory's path
// again, which may now lead elsewhere.
func removeObjectFile(dirfd int, name string, fd int) error {
	same, err := isFile(dirfd, name, fd)
	if err != nil {
		return fmt.Errorf("remove %s: %w", name, err)
	}
	if !same {
		return fmt.Errorf("remove %s: the name now refers to another file: %w", name, ErrUnsafeDir)
	}
	if err := unix.Unlinkat(dirfd, name, 0); err != nil {
		return fmt.Errorf("remove %s: %w", name, err)
	}
	return nil
}

func writeAll(fd int, b []byte) error {
	for off := 0; off < len(b); {
		n, err := unix.Pwrite(fd, b[off:], int64(off))
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return err
		}
		if n == 0 {
			return unix.EIO
		}
		off += n
	}
	return nil
}

// reap removes the object files in the directory open as dirfd that
// processes left when they ended without Close (killed, or exited without
// calling it). A file is stale when no process holds its lock: a process
// holds it from creation until Close or its end, in whatever PID namespace
// it runs, while the PID in the name says nothing across PID namespaces
// (there, PID 1 and many more are always alive) and may have been reused.
// It returns the names removed; it is best effort: a file that cannot be
// checked is left alone.
func reap(dir string, dirfd int) []string {
	// Read the names through a new open file description of the same
	// directory: the caller owns dirfd, and a dup would share its offset.
	fd, err := unix.Openat(dirfd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil
	}
	d := os.NewFile(uintptr(fd), dir)
	defer d.Close()
	// Bounded work: a directory filled by someone else (it is ours, but
	// a runaway process of ours may have filled it) costs at most
	// maxReapNames entries per call; the next call reaps more.
	names, err := d.Readdirnames(maxReapNames)
	if err != nil {
		return nil
	}
	var removed []string
	for _, name := range names {
		if _, ok := parseObjectName(name); !ok {
			continue
		}
		if reapFile(dirfd, name) {
			removed = append(removed, name)
		}
	}
	return removed
}

// maxReapNames bounds the directory entries one reap looks at.
const maxReapNames = 4096

// Reap removes, as Load does before it writes a file, the object files in
// dir that processes left when they ended without Close (killed by a
// signal, or exited without calling it), and returns their names. With dir
// == "" it is the default directory (see Options.Dir); a default directory
// that does not exist is not an error, and Reap never creates it. Only
// regular files named as Load names them, owned by this process's
// effective user, whose lock no process holds, are removed; symbolic links
// are never followed; at most a few thousand entries are looked at per
// call. The error wraps ErrUnsafeDir when the directory fails Load's
// checks.
func Reap(dir string) ([]string, error) {
	path, dirfd, err := openDirFlags(dir, false)
	if errors.Is(err, unix.ENOENT) && dir == "" {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reap object files: %w", err)
	}
	defer unix.Close(dirfd)
	return reap(path, dirfd), nil
}

// reapFile removes name if it is a regular file of ours that nobody holds a
// lock on, and reports whether it did.
func reapFile(dirfd int, name string) bool {
	fd, err := unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return false
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFREG || st.Uid != uint32(os.Geteuid()) {
		return false
	}
	if err := unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB); err != nil {
		return false
	}
	return unix.Unlinkat(dirfd, name, 0) == nil
}
