package uprobe

import (
	"debug/elf"
	"strings"
)

// dedupeSites keeps one Function per site (object, address, entry or
// return): the first one's place in the order, the preferred one's name.
func dedupeSites(fns []Function) []Function {
	type site struct {
		path string
		addr uint64
		ret  bool
	}
	at := make(map[site]int, len(fns))
	out := fns[:0]
	for _, fn := range fns {
		k := site{fn.OpenPath, fn.Symbol.Value + fn.Delta, fn.Return}
		if i, dup := at[k]; dup {
			if preferName(&fn, &out[i]) {
				out[i] = fn
			}
			continue
		}
		at[k] = len(out)
		out = append(out, fn)
	}
	return out
}

// preferName reports whether a's symbol names a site better than b's:
// the innermost symbol (the smaller offset into it), then global over weak
// over local binding, then one without a version, then the one with fewer
// leading underscores (malloc over __libc_malloc), then the shorter name,
// then the first in byte order. The order is total, so the choice does
// not depend on the order of the symbol table.
func preferName(a, b *Function) bool {
	if a.Delta != b.Delta {
		return a.Delta < b.Delta
	}
	if ra, rb := bindRank(a.Symbol.Bind), bindRank(b.Symbol.Bind); ra != rb {
		return ra < rb
	}
	if va, vb := a.Symbol.Version == "", b.Symbol.Version == ""; va != vb {
		return va
	}
	na, nb := a.Symbol.Name, b.Symbol.Name
	if ua, ub := len(na)-len(strings.TrimLeft(na, "_")), len(nb)-len(strings.TrimLeft(nb, "_")); ua != ub {
		return ua < ub
	}
	if len(na) != len(nb) {
		return len(na) < len(nb)
	}
	return na < nb
}

func bindRank(b elf.SymBind) int {
	switch b {
	case elf.STB_GLOBAL:
		return 0
	case elf.STB_WEAK:
		return 1
	}
	return 2
}
