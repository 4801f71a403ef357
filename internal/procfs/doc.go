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
// identity of the file, which survives renames and deletion), keeps the
// objects that have at least one executable mapping, and decides for each
// one where it can be opened from the caller's mount namespace:
//
//   - normally "/proc/PID/root" + path, so that a process in a container is
//     read from its own root, not from ours;
//   - "/proc/PID/map_files/<start>-<end>" of one of its mappings when the path
//     cannot name the mapped file any more: memfd objects ("/memfd:NAME
//     (deleted)"), deleted files, and files replaced on disk (the device and
//     inode that stat reports for the path differ from those in maps).
//     Opening map_files needs CAP_SYS_ADMIN (or, since Linux 5.9,
//     CAP_CHECKPOINT_RESTORE).
//
// Pseudo mappings such as [vdso], [vsyscall], [heap] and anonymous memory
// have inode 0 and are never objects.
//
// # Pathnames
//
// The kernel prints the path as d_path would, escaping only the newline (as
// "\012"); the escape is kept as is. A trailing " (deleted)" is removed and
// recorded in [Mapping.Deleted]. A file whose real name ends in " (deleted)"
// is indistinguishable from a deleted one; Objects copes because it then
// opens the object through map_files.
//
// # Errors
//
// A malformed maps line gives a *[FormatError] with its 1-based line number.
// A process that does not exist (or exited while being read) gives an error
// wrapping both [ErrNoProcess] and, when the kernel said so, [os.ErrNotExist];
// missing permission to read another user's process (ptrace access mode
// PTRACE_MODE_READ) gives an error wrapping [os.ErrPermission].
//
// # Sources
//
// proc(5) ("/proc/pid/maps", "/proc/pid/map_files/"), and the kernel's
// fs/proc/task_mmu.c show_map_vma for the exact layout.
//
// All functions are safe for concurrent use; nothing is cached.
package procfs
