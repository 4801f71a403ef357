package sdt

import (
	"errors"
	"fmt"

	"github.com/usdtkit/usdtkit/elfnotes"
	"github.com/usdtkit/usdtkit/internal/proc/procfs"
	"github.com/usdtkit/usdtkit/internal/proc/target"
)

// Errors of List that callers branch on; they are the same values as
// package uprobe's, so errors.Is works across both.
var (
	// ErrNoTarget means neither a path nor a process was named.
	ErrNoTarget = target.ErrNoTarget
	// ErrNotFound means a name matched no file, library or mapped object.
	ErrNotFound = target.ErrNotFound
	// ErrNoProcess means the process named by PID does not exist.
	ErrNoProcess = procfs.ErrNoProcess
)

// ListOptions says where List looks and what it keeps.
type ListOptions struct {
	// Paths are files, globs or library short names. With PID they filter
	// the process's objects instead: a path or glob matches an object's
	// whole path or its base name, a short name its library ("libc" and
	// "c" match .../libc.so.6).
	Paths []string
	// PID is a process whose mapped objects are searched; 0 for none.
	PID int
	// Selectors keep the probes matching any of them; none keeps all. The
	// Path of a selector also names a file to read when PID is 0, and
	// restricts the selector to matching objects otherwise.
	Selectors []Selector
	// Warn, when not nil, is called once for each part of the objects
	// that List passes over, with an error that names the object and says
	// why: an object of the process that is skipped because it cannot be
	// opened or read (a malformed library, a deleted file without
	// CAP_SYS_ADMIN, a path that no longer names the mapped file), or a
	// damaged note or section header of an object whose other probes are
	// listed (the error wraps an *elfnotes.FormatError with its file
	// offset). It is called on List's goroutine before List returns.
	// Without Warn these pass silently. Named files are never skipped:
	// their errors are List's.
	Warn func(error)
}

// List returns the probes of the objects named by opts, in the order of the
// objects and, within one, of their notes.
//
// Each object is opened once (see docs/architecture.md) and read through that file;
// with selectors, only the objects their PATH parts name are read.
// Objects of a process that are not ELF files (JIT code in a memfd, for
// example) are passed over; objects of a process that cannot be opened or
// read are skipped and reported to opts.Warn; a named file that is not
// ELF, not a regular file, or malformed is an error.
func List(opts *ListOptions) ([]Probe, error) {
	if opts == nil {
		opts = &ListOptions{}
	}
	scope, err := target.NewScopeOf(opts.Paths, opts.PID, opts.Selectors, func(s Selector) string { return s.Path })
	if err != nil {
		return nil, err
	}
	var probes []Probe
	for _, obj := range scope.Objects {
		if !scope.Wanted(obj) {
			continue
		}
		ps, warnings, err := readObject(obj)
		if err != nil && target.Skip(obj, err) {
			if opts.Warn != nil {
				opts.Warn(fmt.Errorf("pid %d: skipped %s: %w", obj.PID, obj.Path, err))
			}
			continue
		}
		if err != nil {
			return nil, err
		}
		for _, w := range warnings {
			if opts.Warn != nil {
				opts.Warn(w)
			}
		}
		for _, p := range ps {
			if keep(opts.Selectors, scope, obj, &p) {
				probes = append(probes, p)
			}
		}
	}
	return probes, nil
}

func keep(sels []Selector, scope *target.Scope, obj target.Object, p *Probe) bool {
	if len(sels) == 0 {
		return true
	}
	for i, s := range sels {
		if s.MatchProbe(p.Provider, p.Name) && scope.Applies(i, obj) {
			return true
		}
	}
	return false
}

func readObject(obj target.Object) ([]Probe, []error, error) {
	fd, err := obj.Open()
	if err != nil {
		return nil, nil, err
	}
	defer fd.Close()
	id, err := procfs.IDOf(fd)
	if err != nil {
		return nil, nil, err
	}
	f, err := elfnotes.NewFile(fd)
	if obj.PID != 0 && errors.Is(err, elfnotes.ErrNotELF) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, named(obj, err)
	}
	probes, warnings, err := ReadProbesPartial(f, obj.Path)
	if err != nil {
		return nil, nil, named(obj, err)
	}
	for i, w := range warnings {
		if obj.PID != 0 {
			warnings[i] = fmt.Errorf("pid %d: %s: %w", obj.PID, obj.Path, w)
		} else {
			warnings[i] = fmt.Errorf("%s: %w", obj.Path, w)
		}
	}
	for i := range probes {
		probes[i].PID = obj.PID
		probes[i].OpenPath = fd.Name()
		probes[i].Dev, probes[i].Inode = id.Dev, id.Inode
	}
	return probes, warnings, nil
}

// named adds a named file's path to err; a process's object gets it in
// the warning that skips it (see List).
func named(obj target.Object, err error) error {
	if obj.PID != 0 {
		return err
	}
	return fmt.Errorf("%s: %w", obj.Path, err)
}
