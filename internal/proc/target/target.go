// Package target turns what a user names (file paths, library short
// names, a process) into object files to read. sdt and uprobe share its
// rules:
//   - an existing file is that file;
//   - a name without a slash is a library short name ("libc"), found as
//     the dynamic loader does (internal/elf/ldso);
//   - a process contributes every object it maps executable; names given
//     with a PID filter those objects.
//
// An Object is data. Object.Open opens it once by procfs's rules; Reopen
// opens it again to attach and refuses a different file. Errors wrap
// ErrNotFound or procfs.ErrNoProcess.
package target

import (
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/usdtkit/usdtkit/internal/elf/ldso"
	"github.com/usdtkit/usdtkit/internal/proc/procfs"
	"golang.org/x/sys/unix"
)

// ErrNotFound means a name matched no file, library or mapped object.
var ErrNotFound = errors.New("not found")

// Object is one object file to read.
type Object struct {
	// Path is the object as users know it: the path given, the resolved
	// library, or the path in the process's mount namespace.
	Path string
	// PID is the process the object was found in, 0 for files.
	PID int

	proc procfs.Object // the object in process PID
}

// Open opens the object for reading; the caller closes the file. Its Name
// says where it was opened: Path, "/proc/PID/root/..." or
// "/proc/PID/map_files/...". Errors wrap procfs.ErrNotRegular for anything
// but a regular file and, for a process's object, what procfs.Open wraps.
func (o Object) Open() (*os.File, error) {
	if o.PID == 0 {
		return procfs.OpenFile(o.Path)
	}
	return procfs.Open(o.proc)
}

// Reopen opens again the object at path, as Resolve found it (in process
// pid when pid != 0), and checks that it is the file that had identity id
// (a zero id is not checked). In a process, an object that maps the file
// with identity id under another path (renamed since) is taken too. Callers that read a file and attach to it
// later call it to attach through the file they read; the caller closes the
// file. A different file gives an error wrapping procfs.ErrChanged.
func Reopen(path string, pid int, id procfs.FileID) (*os.File, error) {
	var cands []Object
	if pid == 0 {
		cands = []Object{{Path: path}}
	} else {
		objs, err := resolvePID(nil, pid)
		if err != nil {
			return nil, err
		}
		// By path first (on overlayfs the open file's identity is not
		// the one maps shows), then by the identity maps shows: the
		// process may have renamed the file since it was listed.
		for _, o := range objs {
			if o.Path == path {
				cands = append(cands, o)
			}
		}
		for _, o := range objs {
			if o.Path != path && id != (procfs.FileID{}) && o.proc.Inode == id.Inode &&
				o.proc.Major == unix.Major(id.Dev) && o.proc.Minor == unix.Minor(id.Dev) {
				cands = append(cands, o)
			}
		}
		if len(cands) == 0 {
			return nil, fmt.Errorf("process %d maps no %s any more: %w", pid, path, procfs.ErrChanged)
		}
	}
	var errs []error
	for _, o := range cands {
		f, err := o.Open()
		if err != nil {
			if errors.Is(err, procfs.ErrNoProcess) {
				return nil, err
			}
			errs = append(errs, err)
			continue
		}
		have, err := procfs.IDOf(f)
		if err == nil && (id == procfs.FileID{} || have == id) {
			return f, nil
		}
		f.Close()
		if err == nil {
			err = fmt.Errorf("%s: %w (device %#x inode %d, listed as device %#x inode %d)", f.Name(), procfs.ErrChanged, have.Dev, have.Inode, id.Dev, id.Inode)
		}
		errs = append(errs, err)
	}
	return nil, errors.Join(errs...)
}

// Resolve returns the objects named by names and pid.
//
// With pid == 0 every name must resolve to a file; names may be globs
// (filepath.Glob). With pid != 0 the objects of the process are returned,
// restricted to those matching one of names when names is not empty.
// Duplicates are removed; the order is that of the names, or of the process's
// mappings.
func Resolve(names []string, pid int) ([]Object, error) {
	if pid != 0 {
		return resolvePID(names, pid)
	}
	var objs []Object
	seen := make(map[string]bool)
	for _, name := range names {
		paths, err := resolveName(name)
		if err != nil {
			return nil, err
		}
		for _, p := range paths {
			if seen[p] {
				continue
			}
			seen[p] = true
			objs = append(objs, Object{Path: p})
		}
	}
	return objs, nil
}

func resolveName(name string) ([]string, error) {
	if name == "" {
		return nil, fmt.Errorf("empty path: %w", ErrNotFound)
	}
	if hasMeta(name) {
		paths, err := filepath.Glob(name)
		if err != nil {
			return nil, fmt.Errorf("path %q: %w", name, err)
		}
		var files []string
		for _, p := range paths {
			if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() {
				files = append(files, globPrefix(name, p))
			}
		}
		if len(files) == 0 {
			return nil, fmt.Errorf("no file matches %q: %w", name, ErrNotFound)
		}
		return files, nil
	}
	fi, err := os.Stat(name)
	switch {
	case err == nil && fi.IsDir():
		return nil, fmt.Errorf("%s is a directory", name)
	case err == nil:
		return []string{name}, nil
	case strings.Contains(name, "/"):
		return nil, err
	}
	lib, lerr := ldso.Find(name, nil)
	if lerr != nil {
		return nil, fmt.Errorf("%s: no such file, and no library of that name: %w", name, ErrNotFound)
	}
	return []string{lib}, nil
}

// globPrefix gives p, a path filepath.Glob found for pattern, the
// pattern's leading directories as written ("./bin/" stays "./bin/", which
// filepath.Glob cleans away), as glob(3) does and bpftrace prints them.
func globPrefix(pattern, p string) string {
	meta := strings.IndexAny(pattern, `*?[\`)
	slash := strings.LastIndex(pattern[:max(meta, 0)], "/")
	if meta < 0 || slash < 0 {
		return p
	}
	lit := pattern[:slash+1]
	clean := filepath.Clean(lit)
	switch clean {
	case "/":
		return p
	case ".":
		return lit + p
	}
	if rest, ok := strings.CutPrefix(p, clean+"/"); ok {
		return lit + rest
	}
	return p
}

func resolvePID(names []string, pid int) ([]Object, error) {
	pobjs, err := procfs.Objects(pid)
	if err != nil {
		return nil, err
	}
	filters := make([]string, len(names))
	for i, n := range names {
		filters[i] = pidPath(n, pid)
	}
	var objs []Object
	for _, o := range pobjs {
		if len(names) > 0 && !slices.ContainsFunc(filters, func(n string) bool { return Match(n, o.Path) }) {
			continue
		}
		objs = append(objs, Object{Path: o.Path, PID: pid, proc: o})
	}
	if len(objs) == 0 && len(names) > 0 {
		return nil, fmt.Errorf("process %d maps no object matching %s: %w", pid, strings.Join(names, ", "), ErrNotFound)
	}
	return objs, nil
}

// pidPath returns name, a filter of process pid's objects, as a path in
// the process's mount namespace. bpftrace 0.17 (resolve_binary_path and
// abs_path) takes a relative path from its own working directory and
// resolves its symbolic links when the process shares its mount namespace;
// otherwise it looks for the file under /proc/PID/root. Names without a
// slash stay names (Match compares them with base names and library short
// names).
func pidPath(name string, pid int) string {
	if !strings.Contains(name, "/") {
		return name
	}
	if !sameMountNS(pid) {
		if filepath.IsAbs(name) {
			return name
		}
		return path.Join("/", name)
	}
	abs, err := filepath.Abs(name)
	if err != nil {
		return name
	}
	if hasMeta(abs) {
		return abs
	}
	if real, err := filepath.EvalSymlinks(abs); err == nil {
		return real
	}
	return abs
}

// sameMountNS reports whether process pid is in this process's mount
// namespace; when either cannot be read it assumes so.
func sameMountNS(pid int) bool {
	self, err := os.Readlink("/proc/self/ns/mnt")
	if err != nil {
		return true
	}
	other, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/mnt", pid))
	return err != nil || self == other
}

// Match reports whether the object at objPath is what the selector path
// filter names. An empty filter or "*" matches everything. Otherwise filter
// matches as a glob against the whole path or its base name, or as a library
// short name: "libc" and "c" match ".../libc.so.6", "libpython3.11" matches
// ".../libpython3.11.so.1.0".
func Match(filter, objPath string) bool {
	if filter == "" || filter == "*" || filter == objPath {
		return true
	}
	base := path.Base(objPath)
	if ok, _ := path.Match(filter, objPath); ok {
		return true
	}
	if ok, _ := path.Match(filter, base); ok {
		return true
	}
	if strings.Contains(filter, "/") {
		return false
	}
	lib := filter
	if !strings.HasPrefix(lib, "lib") {
		lib = "lib" + lib
	}
	return base == lib+".so" || strings.HasPrefix(base, lib+".so.")
}

func hasMeta(s string) bool { return strings.ContainsAny(s, `*?[\`) }

// Skip reports whether err, from opening or reading obj, should skip only
// that object, with a warning, rather than end the listing: so it is for a
// process's objects, unless the process is gone. One object a process
// maps (a malformed library, a file it swapped) must not hide the others.
func Skip(obj Object, err error) bool {
	return obj.PID != 0 && !errors.Is(err, procfs.ErrNoProcess)
}
