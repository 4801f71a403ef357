package procfs

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"golang.org/x/sys/unix"
)

// Errors of Open and OpenFile that callers branch on.
var (
	// ErrNotRegular means the name leads to something other than a regular
	// file: a FIFO, a device, a directory, a socket or a symlink.
	ErrNotRegular = errors.New("not a regular file")
	// ErrChanged means the file found is not the one the process maps:
	// its device and inode differ from those in maps.
	ErrChanged = errors.New("not the mapped file")
)

// openFlags are the flags every object is opened with: never blocking
// (a FIFO or a device cannot stall us; they are refused before this open
// anyway), never becoming our controlling terminal, never inherited.
const openFlags = unix.O_RDONLY | unix.O_NONBLOCK | unix.O_NOCTTY | unix.O_CLOEXEC

// resolveInRoot resolves an object's path as the process would, but
// without leaving its root (absolute symlinks and ".." stay inside), without
// /proc magic links, and without any symlink at all: maps prints the
// dentry's path, which has none, so a symlink means the path was changed
// after the mapping and the mapping is opened through map_files instead.
const resolveInRoot = unix.RESOLVE_IN_ROOT | unix.RESOLVE_NO_MAGICLINKS | unix.RESOLVE_NO_SYMLINKS

// overlayfsMagic is statfs's f_type of overlayfs (linux/magic.h
// OVERLAYFS_SUPER_MAGIC).
const overlayfsMagic = 0x794c7630

// Open opens the file o is, once, for reading, and returns it; the caller
// owns and closes it. The file is read, and attached to, through the
// returned descriptor (see FDPath), never by its name again.
//
// The path is resolved inside the process's root (openat2 RESOLVE_IN_ROOT
// relative to /proc/PID/root, no symlinks, no magic links). When that fails,
// or finds a file whose device and inode are not those of the mapping, the
// first mapping's /proc/PID/map_files/START-END is opened instead: the
// kernel links it to the mapped file itself. Deleted files and memfds go
// there directly. Both routes first open an O_PATH descriptor, which opens
// nothing, and go on only for a regular file: a FIFO, device, socket or
// directory gives an error wrapping ErrNotRegular without being opened, so
// Open never blocks. The returned file's Name is the route taken:
// "/proc/PID/root/PATH" or "/proc/PID/map_files/START-END".
//
// A map_files file must have the mapping's device and inode too, except on
// overlayfs, where maps shows the underlying file's device and inode and
// the file the overlay's. Otherwise the error wraps ErrChanged.
//
// Opening map_files needs CAP_SYS_ADMIN (or CAP_CHECKPOINT_RESTORE since
// Linux 5.9): without it the error wraps os.ErrPermission. A process that
// is gone gives an error wrapping ErrNoProcess.
func Open(o Object) (*os.File, error) {
	if len(o.Mappings) == 0 {
		return nil, fmt.Errorf("%s: no mapping", o.Path)
	}
	var rootErr error
	if !o.Deleted && strings.HasPrefix(o.Path, "/") {
		f, err := openInRoot(o)
		if err == nil {
			return f, nil
		}
		if errors.Is(err, ErrNoProcess) {
			return nil, err
		}
		rootErr = err
	}
	f, err := openMapFiles(o)
	if err != nil && rootErr != nil && !errors.Is(err, ErrNoProcess) {
		return nil, fmt.Errorf("%w (and by path: %w)", err, rootErr)
	}
	return f, err
}

func openInRoot(o Object) (*os.File, error) {
	rootName := fmt.Sprintf("/proc/%d/root", o.PID)
	root, err := unix.Open(rootName, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, procError(o.PID, &os.PathError{Op: "open", Path: rootName, Err: err})
	}
	defer unix.Close(root)
	name := rootName + o.Path
	pfd, err := unix.Openat2(root, o.Path, &unix.OpenHow{
		Flags:   unix.O_PATH | unix.O_NOFOLLOW | unix.O_CLOEXEC,
		Resolve: resolveInRoot,
	})
	if err != nil {
		return nil, &os.PathError{Op: "openat2", Path: name, Err: err}
	}
	defer unix.Close(pfd)
	st, err := fstatRegular(pfd, name)
	if err != nil {
		return nil, err
	}
	if !sameID(st, o) {
		return nil, fmt.Errorf("%s: %w (device %d:%d inode %d, maps has %d:%d inode %d)", name, ErrChanged,
			unix.Major(st.Dev), unix.Minor(st.Dev), st.Ino, o.Major, o.Minor, o.Inode)
	}
	return reopen(pfd, st, name)
}

func openMapFiles(o Object) (*os.File, error) {
	m := o.Mappings[0]
	name := fmt.Sprintf("/proc/%d/map_files/%x-%x", o.PID, m.Start, m.End)
	// O_PATH without O_NOFOLLOW follows the map_files link to the mapped
	// file; the kernel resolves it from the mapping, not by name.
	pfd, err := unix.Open(name, unix.O_PATH|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, mapFilesError(o.PID, name, err)
	}
	defer unix.Close(pfd)
	st, err := fstatRegular(pfd, name)
	if err != nil {
		return nil, err
	}
	if !sameID(st, o) {
		var fs unix.Statfs_t
		if err := unix.Fstatfs(pfd, &fs); err != nil || fs.Type != overlayfsMagic {
			return nil, fmt.Errorf("%s: %w (device %d:%d inode %d, maps has %d:%d inode %d)", name, ErrChanged,
				unix.Major(st.Dev), unix.Minor(st.Dev), st.Ino, o.Major, o.Minor, o.Inode)
		}
	}
	return reopen(pfd, st, name)
}

// mapFilesError says why map_files did not open: the process is gone, the
// mapping is gone, or we lack the capability.
func mapFilesError(pid int, name string, err error) error {
	perr := &os.PathError{Op: "open", Path: name, Err: err}
	switch {
	case errors.Is(err, unix.EPERM) || errors.Is(err, unix.EACCES):
		return fmt.Errorf("%w (a deleted or replaced file is opened through map_files, which needs CAP_SYS_ADMIN or CAP_CHECKPOINT_RESTORE)", perr)
	case errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ESRCH):
		if _, serr := os.Stat(fmt.Sprintf("/proc/%d", pid)); serr != nil {
			return procError(pid, perr)
		}
		return fmt.Errorf("mapping gone: %w", perr)
	}
	return perr
}

// OpenFile opens the file at path for reading like Open opens a process's
// object: it refuses, without opening it, anything but a regular file
// (error wrapping ErrNotRegular), and never blocks. Symlinks are followed:
// the caller named the path.
func OpenFile(path string) (*os.File, error) {
	pfd, err := unix.Open(path, unix.O_PATH|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	defer unix.Close(pfd)
	st, err := fstatRegular(pfd, path)
	if err != nil {
		return nil, err
	}
	return reopen(pfd, st, path)
}

func fstatRegular(fd int, name string) (*unix.Stat_t, error) {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, &os.PathError{Op: "fstat", Path: name, Err: err}
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return nil, fmt.Errorf("%s: %w (%s)", name, ErrNotRegular, fileType(st.Mode))
	}
	return &st, nil
}

func fileType(mode uint32) string {
	switch mode & unix.S_IFMT {
	case unix.S_IFIFO:
		return "a FIFO"
	case unix.S_IFCHR:
		return "a character device"
	case unix.S_IFBLK:
		return "a block device"
	case unix.S_IFDIR:
		return "a directory"
	case unix.S_IFSOCK:
		return "a socket"
	case unix.S_IFLNK:
		return "a symlink"
	}
	return fmt.Sprintf("file type %#o", mode&unix.S_IFMT)
}

func sameID(st *unix.Stat_t, o Object) bool {
	return st.Ino == o.Inode && unix.Major(st.Dev) == o.Major && unix.Minor(st.Dev) == o.Minor
}

// reopen opens the regular file that the O_PATH descriptor pfd refers to
// for reading. Going through /proc/self/fd reopens that very inode, with
// no name lookup; the result is checked against st all the same.
func reopen(pfd int, st *unix.Stat_t, name string) (*os.File, error) {
	fd, err := unix.Open(FDPathOf(pfd), openFlags, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: name, Err: err}
	}
	var st2 unix.Stat_t
	if err := unix.Fstat(fd, &st2); err != nil || st2.Dev != st.Dev || st2.Ino != st.Ino {
		unix.Close(fd)
		return nil, fmt.Errorf("%s: %w (reopened a different file)", name, ErrChanged)
	}
	return os.NewFile(uintptr(fd), name), nil
}

// FDPath returns "/proc/self/fd/N" for f: a name under which the kernel
// (attaching a uprobe) and readers find exactly f's file, without looking
// up any other name. It is valid while f is open.
func FDPath(f *os.File) string { return FDPathOf(int(f.Fd())) }

// FDPathOf is FDPath of a raw descriptor.
func FDPathOf(fd int) string { return fmt.Sprintf("/proc/self/fd/%d", fd) }

// FileID is the identity of an open file: stat's st_dev and st_ino.
type FileID struct{ Dev, Inode uint64 }

// IDOf returns the identity of f.
func IDOf(f *os.File) (FileID, error) {
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		return FileID{}, &os.PathError{Op: "fstat", Path: f.Name(), Err: err}
	}
	return FileID{Dev: st.Dev, Inode: st.Ino}, nil
}
