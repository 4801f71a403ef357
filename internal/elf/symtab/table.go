package symtab

import (
	"debug/elf"
	"fmt"
	"slices"
	"strings"
)

// Table finds symbols by name. It is built once by [NewTable] and is
// safe for concurrent use.
type Table struct {
	syms []Symbol
	// byName maps the plain name of each symbol (without an "@VERSION"
	// suffix) to the indexes of its symbols in syms, in syms' order.
	byName map[string][]int
}

// NewTable returns a Table of syms, as returned by [Read]. It copies syms.
// Symbols of type STT_FILE (source file names) and STT_SECTION name no
// address and are not indexed.
func NewTable(syms []Symbol) *Table {
	t := &Table{syms: slices.Clone(syms), byName: make(map[string][]int, len(syms))}
	for i := range t.syms {
		s := &t.syms[i]
		if s.Type == elf.STT_FILE || s.Type == elf.STT_SECTION {
			continue
		}
		name := PlainName(s.Name)
		t.byName[name] = append(t.byName[name], i)
	}
	return t
}

// Lookup returns the symbol called name. The name is matched as follows:
//   - "foo" matches symbols named "foo", whatever their version, and
//     .symtab symbols named "foo@V" or "foo@@V";
//   - "foo@V" and "foo@@V" match the symbol "foo" of version V (from
//     .dynsym), and a .symtab symbol with that exact name.
//
// When all matching symbols are at one address, Lookup returns the first
// of them in the order of [Read], preferring one from .dynsym with a
// version; several matching symbols at different addresses (a static
// variable of the same name in two object files, or two versions of a
// function) give an error wrapping [ErrAmbiguous], and no match an error
// wrapping [ErrNotFound].
func (t *Table) Lookup(name string) (Symbol, error) {
	plain, ver := splitVersion(name)
	var (
		found   bool
		best    int
		other   = -1 // a match at another address than best
		matches int
	)
	for _, i := range t.byName[plain] {
		s := &t.syms[i]
		if ver != "" && s.Version != ver {
			if _, v := splitVersion(s.Name); v != ver {
				continue
			}
		}
		matches++
		switch {
		case !found:
			found, best = true, i
		case s.Value != t.syms[best].Value:
			if other < 0 {
				other = i
			}
		case s.Dynamic && s.Version != "" && t.syms[best].Version == "":
			best = i
		}
	}
	if !found {
		return Symbol{}, fmt.Errorf("symbol %s: %w", name, ErrNotFound)
	}
	if other >= 0 {
		a, b := &t.syms[best], &t.syms[other]
		hint := ""
		if ver == "" && a.Version != "" && b.Version != "" && a.Version != b.Version {
			hint = " (name a version: " + plain + "@" + a.Version + ")"
		}
		return Symbol{}, fmt.Errorf("symbol %s: %w: %d matches at different addresses, e.g. %#x and %#x%s",
			name, ErrAmbiguous, matches, a.Value, b.Value, hint)
	}
	return t.syms[best], nil
}

// splitVersion splits "foo@V" and "foo@@V" into "foo" and "V".
func splitVersion(name string) (plain, version string) {
	if i := strings.IndexByte(name, '@'); i > 0 {
		return name[:i], strings.TrimPrefix(name[i+1:], "@")
	}
	return name, ""
}
