// Package procfs reads the memory map of a live process from /proc and
// turns it into the list of object files (executables and shared libraries)
// the process has mapped executable.
//
// # Model
//
// /proc/PID/maps has one line per virtual memory area (VMA):
//
//	start-end perms offset major:minor inode   pathname
//
// [ParseMaps] turns those lines into [Mapping] values without interpreting
// them. [Objects] groups the file-backed mappings by device and inode (the
// identity of the file, which survives renames and deletion) and keeps the
// objects that have at least one executable mapping. An [Object] is plain
// data: it holds no fd and names no path to open.
//
// # Opening an object
//
// [Open] opens an object once and returns the *os.File that every later
// step uses: readers read it, and uprobes are attached to it through
// [FDPath] ("/proc/self/fd/N"), so no name is resolved twice and a process
// cannot swap the file between the steps. The path in maps is a name the
// process controls (it may rename, bind-mount or swap directories with
// symlinks at any time), so Open:
//
//   - resolves it inside the process's root, with openat2 relative to an
//     O_PATH fd of /proc/PID/root and RESOLVE_IN_ROOT, RESOLVE_NO_MAGICLINKS
//     and RESOLVE_NO_SYMLINKS (maps prints a dentry's path, which holds no
//     symlink);
//   - opens O_PATH first, which opens nothing, and accepts only a regular
//     file ([ErrNotRegular] otherwise): a FIFO or device is never opened,
//     so Open never blocks; the final open is O_NONBLOCK|O_NOCTTY|O_CLOEXEC
//     through the O_PATH fd, without a name lookup;
//   - checks the file's device and inode against the mapping's; on any
//     failure, and directly for memfd objects ("/memfd:NAME (deleted)") and
//     deleted files, it opens /proc/PID/map_files/START-END of the first
//     mapping instead, which the kernel links to the mapped file itself,
//     and checks that too ([ErrChanged]). For overlayfs files maps shows
//     the underlying file's device and inode while the open file shows the
//     overlay's; a map_files file on overlayfs is accepted as the mapping's.
//     Opening map_files needs CAP_SYS_ADMIN (or, since Linux 5.9,
//     CAP_CHECKPOINT_RESTORE).
//
// [OpenFile] applies the same rules (regular files only, never blocking)
// to a path a user named. [OpenRoot] keeps a process's root (an O_PATH
// descriptor that outlives the process) and [OpenInRoot] opens a file the
// process names but does not map (a separate debug file, its perf map)
// inside that root, with RESOLVE_IN_ROOT: symlinks are followed but never
// out of the root.
//
// Pseudo mappings such as [vdso], [vsyscall], [heap] and anonymous memory
// have inode 0 and are never objects.
//
// # Pathnames
//
// The kernel prints the path as d_path would, escaping only the newline (as
// "\012"); the escape is kept as is. A trailing " (deleted)" is removed and
// recorded in [Mapping.Deleted]. A file whose real name ends in " (deleted)"
// is indistinguishable from a deleted one; Open copes because it then
// opens the object through map_files.
//
// # Errors
//
// A malformed maps line gives a *[FormatError] with its 1-based line number.
// A process that does not exist (or exited while being read) gives an error
// wrapping both [ErrNoProcess] and, when the kernel said so, [os.ErrNotExist];
// missing permission to read another user's process (ptrace access mode
// PTRACE_MODE_READ), or to open map_files, gives an error wrapping
// [os.ErrPermission]. Open's other errors are per object ([ErrNotRegular],
// [ErrChanged], a mapping that went away): callers skip that object and
// read the others.
//
// # Sources
//
// proc(5) ("/proc/pid/maps", "/proc/pid/map_files/"), openat2(2)
// (RESOLVE_IN_ROOT, RESOLVE_NO_SYMLINKS), open(2) (O_PATH), and the kernel's
// fs/proc/task_mmu.c show_map_vma for the exact layout.
//
// All functions are safe for concurrent use; nothing is cached. The caller
// owns the files Open and OpenFile return and closes them.
package procfs
