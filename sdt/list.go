package sdt

import (
	"errors"
	"fmt"

	"github.com/usdtkit/usdtkit/elfnotes"
	"github.com/usdtkit/usdtkit/internal/procfs"
	"github.com/usdtkit/usdtkit/internal/target"
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
	// the process's objects instead (see target.Match).
	Paths []string
	// PID is a process whose mapped objects are searched; 0 for none.
	PID int
	// Selectors keep the probes matching any of them; none keeps all. The
	// Path of a selector also names a file to read when PID is 0, and
	// restricts the selector to matching objects otherwise.
	Selectors []Selector
	// Warn, when not nil, is called once for each part of an object that
	// List passes over: a damaged note, whose error wraps an
	// *elfnotes.FormatError with its offset and names the object. The
	// rest of the object is listed. Without Warn they pass silently.
	Warn func(error)
}

// List returns the probes of the objects named by opts, in the order of the
// objects and, within one, of their notes.
//
// Objects of a process that are not ELF files (JIT code in a memfd, for
// example) are passed over; a named file that is not ELF is an error.
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
		ps, warnings, err := readObject(obj)
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
	f, err := elfnotes.Open(obj.OpenPath)
	if obj.PID != 0 && errors.Is(err, elfnotes.ErrNotELF) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	probes, warnings, err := ReadProbesPartial(f, obj.Path)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", obj.Path, err)
	}
	for i, w := range warnings {
		warnings[i] = fmt.Errorf("%s: %w", obj.Path, w)
	}
	for i := range probes {
		probes[i].PID = obj.PID
		probes[i].OpenPath = obj.OpenPath
	}
	return probes, warnings, nil
}
