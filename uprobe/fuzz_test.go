package uprobe

import (
	"bytes"
	"cmp"
	"slices"
	"testing"

	"github.com/usdtkit/usdtkit/elfnotes"
	"github.com/usdtkit/usdtkit/internal/elf/symtab/symtabtest"
)

// FuzzSymbols checks that no input makes Symbols panic, that it returns
// either symbols or an error, and that what it returns is sorted functions.
// The table reader underneath has its own target, symtab's FuzzRead, with
// the corpus of real files; this one covers what Symbols adds (file
// offsets, demangling) and is seeded with the generated libraries.
func FuzzSymbols(f *testing.F) {
	for _, l := range symtabtest.Layouts() {
		f.Add(symtabtest.Lib(l.Class, l.Order).Bytes())
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		ef, err := elfnotes.NewFile(bytes.NewReader(b))
		if err != nil {
			return
		}
		syms, err := Symbols(ef)
		if (err != nil) != (syms == nil) {
			t.Fatalf("have %d symbols and error %v", len(syms), err)
		}
		if !slices.IsSortedFunc(syms, func(a, b Symbol) int { return cmp.Compare(a.Value, b.Value) }) {
			t.Error("not sorted by value")
		}
		for _, s := range syms {
			if s.Kind != SymFunc && s.Kind != SymIFunc {
				t.Errorf("%s: kind %v", s.Name, s.Kind)
			}
		}
	})
}
