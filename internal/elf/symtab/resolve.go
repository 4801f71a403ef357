package symtab

import (
	"debug/elf"
	"fmt"

	"github.com/usdtkit/usdtkit/elfnotes"
)

// Resolvers resolve the symbols that USDT argument specs name
// ("8@counter+8(%rip)"): each file's table is read once, on first use, and
// only if an argument needs it. A damaged symbol is left out of its table
// (see ReadPartial): an argument naming it does not resolve, the others do.
// The zero value is ready to use; it is not safe for concurrent use.
type Resolvers struct {
	tables map[string]*lazyTable
}

type lazyTable struct {
	table *Table
	err   error
}

// For returns the resolver of the file at path: the symbol's value, or an
// error for a missing or thread-local symbol or an unreadable table.
func (r *Resolvers) For(path string) func(name string) (uint64, error) {
	return func(name string) (uint64, error) {
		t := r.tables[path]
		if t == nil {
			if r.tables == nil {
				r.tables = make(map[string]*lazyTable)
			}
			t = &lazyTable{}
			r.tables[path] = t
			t.table, t.err = readTable(path)
		}
		if t.err != nil {
			return 0, t.err
		}
		sym, err := t.table.Lookup(name)
		if err != nil {
			return 0, err
		}
		if sym.Type == elf.STT_TLS {
			return 0, fmt.Errorf("symbol %s is thread-local", name)
		}
		return sym.Value, nil
	}
}

func readTable(path string) (*Table, error) {
	f, err := elfnotes.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	syms, _, err := ReadPartial(f)
	if err != nil {
		return nil, err
	}
	return NewTable(syms), nil
}
