package target

import (
	"errors"
	"fmt"
)

// ErrNoTarget means neither a path nor a process was named.
var ErrNoTarget = errors.New("no file, library or process to look in")

// Scope is what a listing reads: the objects, and for each selector (of
// sdt or uprobe) the objects its PATH part applies to.
type Scope struct {
	Objects []Object
	// in[i] is the set of object paths selector i applies to; nil: all.
	in []map[string]bool
}

// NewScope resolves paths and pid (see Resolve) together with the PATH parts
// of a listing's selectors, one entry per selector ("" or "*" for any).
// Without a process a selector's path also names objects to read, so
// "usdt:libc:*" alone reads libc. With a process it only filters.
func NewScope(paths []string, pid int, selectorPaths []string) (*Scope, error) {
	s := &Scope{in: make([]map[string]bool, len(selectorPaths))}
	names := append([]string(nil), paths...)
	for i, sp := range selectorPaths {
		if sp == "" || sp == "*" {
			continue
		}
		objs, err := Resolve([]string{sp}, pid)
		switch {
		case pid != 0 && errors.Is(err, ErrNotFound):
		case err != nil:
			return nil, fmt.Errorf("selector path %s: %w", sp, err)
		}
		s.in[i] = make(map[string]bool, len(objs))
		for _, o := range objs {
			s.in[i][o.Path] = true
		}
		if pid == 0 {
			names = append(names, sp)
		}
	}
	if pid == 0 && len(names) == 0 {
		return nil, ErrNoTarget
	}
	objs, err := Resolve(names, pid)
	if err != nil {
		return nil, err
	}
	s.Objects = objs
	return s, nil
}

// Applies reports whether selector i (in NewScope's order) applies to obj.
func (s *Scope) Applies(i int, obj Object) bool {
	return s.in[i] == nil || s.in[i][obj.Path]
}

// Wanted reports whether a listing reads obj: some selector applies to
// it, or there are none. A process's objects that no selector's PATH part
// names are passed over unread (their notes, their symbol tables).
func (s *Scope) Wanted(obj Object) bool {
	if len(s.in) == 0 {
		return true
	}
	for i := range s.in {
		if s.Applies(i, obj) {
			return true
		}
	}
	return false
}

// NewScopeOf is NewScope for a listing's selectors of any kind: path gives
// a selector's PATH part.
func NewScopeOf[S any](paths []string, pid int, sels []S, path func(S) string) (*Scope, error) {
	selPaths := make([]string, len(sels))
	for i, s := range sels {
		selPaths[i] = path(s)
	}
	return NewScope(paths, pid, selPaths)
}
