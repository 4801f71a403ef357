// Package target turns what a user names — file paths, library short names,
// a process — into the object files to read, and filters them by the PATH
// part of a probe selector.
//
// Both sdt (USDT notes) and uprobe (symbols) look things up in the same
// objects, so the rules live here once:
//
//   - A name that is an existing file is that file.
//   - Any other name without a slash is a library short name ("libc",
//     "libstdc++", "libpython3.11") resolved like the dynamic loader does
//     (see internal/ldso).
//   - A process (PID) contributes every object it has mapped executable,
//     opened through /proc/PID/root or /proc/PID/map_files (see
//     internal/procfs). Names given together with a PID filter those objects
//     instead of adding files.
//
// Errors wrap [ErrNotFound] when a name resolves to nothing and
// procfs.ErrNoProcess when the process does not exist.
package target

import (
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/usdtkit/usdtkit/internal/ldso"
	"github.com/usdtkit/usdtkit/internal/procfs"
)

// ErrNotFound means a name matched no file, library or mapped object.
var ErrNotFound = errors.New("not found")

// Object is one object file to read.
type Object struct {
	// Path is the object as users know it: the path given, the resolved
	// library, or the path in the process's mount namespace.
	Path string
	// OpenPath is where this process reads it from; equal to Path unless the
	// object came from a process.
	OpenPath string
	// PID is the process the object was found in, 0 for files.
	PID int
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
			objs = append(objs, Object{Path: p, OpenPath: p})
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
				files = append(files, p)
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

func resolvePID(names []string, pid int) ([]Object, error) {
	pobjs, err := procfs.Objects(pid)
	if err != nil {
		return nil, err
	}
	var objs []Object
	for _, o := range pobjs {
		if len(names) > 0 && !slices.ContainsFunc(names, func(n string) bool { return Match(n, o.Path) }) {
			continue
		}
		objs = append(objs, Object{Path: o.Path, OpenPath: o.OpenPath, PID: pid})
	}
	if len(objs) == 0 && len(names) > 0 {
		return nil, fmt.Errorf("process %d maps no object matching %s: %w", pid, strings.Join(names, ", "), ErrNotFound)
	}
	return objs, nil
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
