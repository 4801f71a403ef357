package symtab

import (
	"debug/elf"
	"testing"

	"github.com/usdtkit/usdtkit/elfnotes"
	"github.com/usdtkit/usdtkit/internal/testutil"
)

// BenchmarkRead reads libc's symbols. The read-tables sibling only reads
// the sections Read reads (.dynsym, .dynstr, .gnu.version*): the floor
// that I/O sets, to compare the parsing cost against. libc+debug reads
// them with the .symtab of libc's separate debug file, where one is
// installed (most of libc's symbols). NewTable and Lookup are timed on
// the result.
func BenchmarkRead(b *testing.B) {
	f, err := elfnotes.Open(testutil.RequireFile(b, libc))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { f.Close() })

	b.Run("read-tables", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			for _, s := range f.Sections {
				switch s.Type {
				case elf.SHT_DYNSYM, elf.SHT_SYMTAB, elf.SHT_STRTAB, elf.SHT_GNU_VERSYM, elf.SHT_GNU_VERDEF, elf.SHT_GNU_VERNEED:
					if _, err := s.Data(); err != nil {
						b.Fatal(err)
					}
				}
			}
		}
	})
	b.Run("libc", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			syms, err := Read(f)
			if err != nil || len(syms) == 0 {
				b.Fatal(len(syms), err)
			}
		}
	})
	b.Run("libc+debug", func(b *testing.B) {
		path := installedLibc(b)
		f, err := elfnotes.Open(path)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { f.Close() })
		d, err := OpenDebugFile(f, path, nil)
		if err != nil {
			b.Skipf("no debug file of %s: %v", path, err)
		}
		b.Cleanup(func() { d.Close() })
		opts := &ReadOptions{Debug: d.File}
		b.ReportAllocs()
		for b.Loop() {
			syms, warnings, err := ReadPartialWith(f, opts)
			if err != nil || len(warnings) > 0 || len(syms) == 0 {
				b.Fatal(len(syms), warnings, err)
			}
		}
	})
	syms, err := Read(f)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("NewTable", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			NewTable(syms)
		}
	})
	tab := NewTable(syms)
	b.Run("Lookup", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := tab.Lookup("stdout"); err != nil {
				b.Fatal(err)
			}
		}
	})
}
