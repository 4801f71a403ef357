package uprobe

import (
	"testing"

	"github.com/usdtkit/usdtkit/elfnotes"
	"github.com/usdtkit/usdtkit/internal/elf/symtab"
	"github.com/usdtkit/usdtkit/internal/testutil"
)

// BenchmarkSymbols lists libc's functions. The symtab-read sibling only
// reads libc's symbols with the table reader Symbols calls
// (internal/elf/symtab's BenchmarkRead times that against the I/O): the
// floor to compare what Symbols adds (filtering, file offsets,
// demangling) against.
func BenchmarkSymbols(b *testing.B) {
	f, err := elfnotes.Open(testutil.RequireFile(b, libc))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { f.Close() })

	b.Run("symtab-read", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			syms, err := symtab.Read(f)
			if err != nil || len(syms) == 0 {
				b.Fatal(len(syms), err)
			}
		}
	})
	b.Run("libc", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			syms, err := Symbols(f)
			if err != nil || len(syms) == 0 {
				b.Fatal(len(syms), err)
			}
		}
	})
}

// BenchmarkFunctionsLibc resolves one function of libc by name in a
// running C program, as `usdtkit trace -p PID -e 'uprobe:libc:malloc
// {...}'` does: libc is found in the process's maps, and its symbols are
// read with those of its separate debug file where one is installed. The
// list-all sibling lists every function of libc (a selector of the path
// only, as a glob would need); glob is a glob that matches the name.
func BenchmarkFunctionsLibc(b *testing.B) {
	tc := testutil.StartTracee(b, testutil.BuildTracee(b, "-O2"))
	tc.WaitReady(b)
	pid := tc.PID()
	for _, bc := range []struct {
		name string
		sel  Selector
	}{
		{"list-all", Selector{Path: "libc"}},
		{"named", Selector{Path: "libc", Func: "malloc"}},
		{"glob", Selector{Path: "libc", Func: "mallo[c]"}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			opts := &ListOptions{PID: pid, Selectors: []Selector{bc.sel}}
			b.ReportAllocs()
			for b.Loop() {
				objs, err := List(opts)
				if err != nil || len(objs) != 1 || len(objs[0].Symbols) == 0 {
					b.Fatalf("List(%v) = %d objects, %v", bc.sel, len(objs), err)
				}
			}
		})
	}
}
