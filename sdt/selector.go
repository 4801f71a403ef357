package sdt

import (
	"fmt"
	"path"
	"strings"

	"github.com/usdtkit/usdtkit/internal/escape"
)

// Selector picks USDT probes, in bpftrace's syntax:
//
//	usdt:PATH:PROVIDER:NAME
//	usdt:PATH:NAME          (any provider)
//	PROVIDER:NAME           (the objects named elsewhere)
//
// "U" is accepted for "usdt". A \xNN in a part is byte NN, as listings
// print bytes that are not printable UTF-8 (and \\ a backslash in PATH).
// Each part may be a glob (path.Match syntax);
// an empty or "*" part matches everything. PATH is a file path, a glob, or a
// library short name; with a process it filters the process's objects (see
// target.Match).
type Selector struct {
	Path     string
	Provider string
	Name     string
}

// ParseSelector parses a selector. It returns an error for other probe kinds
// (uprobe:...) and for malformed globs.
func ParseSelector(s string) (Selector, error) {
	var sel Selector
	parts := strings.Split(s, ":")
	switch {
	case len(parts) >= 2 && (parts[0] == "usdt" || parts[0] == "U"):
		switch len(parts) {
		case 3:
			sel = Selector{Path: parts[1], Name: parts[2]}
		case 4:
			sel = Selector{Path: parts[1], Provider: parts[2], Name: parts[3]}
		default:
			return Selector{}, fmt.Errorf("selector %q: want usdt:PATH:PROVIDER:NAME or usdt:PATH:NAME", s)
		}
	case len(parts) == 2:
		sel = Selector{Provider: parts[0], Name: parts[1]}
	default:
		return Selector{}, fmt.Errorf("selector %q: want usdt:PATH:PROVIDER:NAME or PROVIDER:NAME", s)
	}
	// Names print escaped (package escape): read the escapes back.
	sel.Path, sel.Provider, sel.Name = escape.Literal(sel.Path), escape.Glob(sel.Provider), escape.Glob(sel.Name)
	for _, g := range []string{sel.Provider, sel.Name} {
		if _, err := path.Match(g, ""); err != nil {
			return Selector{}, fmt.Errorf("selector %q: glob %q: %w", s, g, err)
		}
	}
	return sel, nil
}

// String returns the selector in the usdt:PATH:PROVIDER:NAME form.
func (s Selector) String() string {
	return "usdt:" + s.Path + ":" + or(s.Provider, "*") + ":" + or(s.Name, "*")
}

// MatchProbe reports whether provider and name match the selector's globs;
// the path is matched by the caller against the object.
func (s Selector) MatchProbe(provider, name string) bool {
	return glob(s.Provider, provider) && glob(s.Name, name)
}

func glob(pattern, s string) bool {
	if pattern == "" || pattern == "*" {
		return true
	}
	ok, _ := path.Match(pattern, s)
	return ok
}

func or(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
