// Package procfs reads a live process's memory map from /proc and lists
// the object files it has mapped executable. It opens them safely.
//
// Entry points: ReadMaps and ParseMaps read /proc/PID/maps; Objects groups
// mappings by device and inode; Open opens an object once, inside the
// process's root or through map_files, and checks its identity; FDPath
// names the open file for the kernel; OpenFile, OpenRoot and OpenInRoot
// open other files by the same rules.
//
// Errors: a bad maps line is a *FormatError with its line number. A
// missing process wraps ErrNoProcess (and os.ErrNotExist); missing rights
// wrap os.ErrPermission. Open's other errors (ErrNotRegular, ErrChanged)
// concern one object: skip it and read the others.
//
// Nothing is cached; all is safe for concurrent use. The caller closes the
// files it gets. docs/architecture.md ("Opening a process's files") gives
// the rules.
package procfs
