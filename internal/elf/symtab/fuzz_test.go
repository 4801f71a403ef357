package symtab

import (
	"bytes"
	"cmp"
	"debug/elf"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/usdtkit/usdtkit/elfnotes"
	"github.com/usdtkit/usdtkit/internal/elf/symtab/symtabtest"
)

// fuzzSeeds returns the generated ELF files used as fuzz seeds.
func fuzzSeeds() [][]byte {
	var seeds [][]byte
	for _, l := range symtabtest.Layouts() {
		seeds = append(seeds, symtabtest.Lib(l.Class, l.Order).Bytes())
	}
	seeds = append(seeds, dataLib().Bytes())
	// A Go-looking file with no .symtab and a Go 1.20 pclntab header:
	// magic, pad, quantum 1, pointer size 8, then nfunc = 1 and garbage.
	pcln := binary.LittleEndian.AppendUint32(nil, 0xfffffff1)
	pcln = append(pcln, 0, 0, 1, 8)
	pcln = binary.LittleEndian.AppendUint64(pcln, 1)
	pcln = append(pcln, bytes.Repeat([]byte{0x40, 0, 0, 0, 0, 0, 0, 0}, 10)...)
	goFile := symtabtest.ELF{Class: elf.ELFCLASS64, Order: binary.LittleEndian, Type: elf.ET_EXEC,
		Sections: []symtabtest.Section{
			{Name: ".text", Type: elf.SHT_PROGBITS, Data: make([]byte, 32)},
			{Name: ".gopclntab", Type: elf.SHT_PROGBITS, Data: pcln},
			{Name: ".go.buildinfo", Type: elf.SHT_PROGBITS, Data: []byte("\xff Go buildinf:")},
		}}
	return append(seeds, goFile.Bytes())
}

// FuzzRead checks that no input makes ReadPartial panic, that it returns
// either symbols (possibly with warnings, each a *FormatError) or an error,
// that Read fails exactly when ReadPartial warns, that what it returns is sorted, defined and named,
// and that a Table of it finds every name it indexes. Seeds: the generated
// files and testdata/*.elf (see testdata/README).
func FuzzRead(f *testing.F) {
	for _, s := range fuzzSeeds() {
		f.Add(s)
	}
	files, err := filepath.Glob("testdata/*.elf")
	if err != nil || len(files) == 0 {
		f.Fatalf("no seeds in testdata/*.elf (%v)", err)
	}
	for _, name := range files {
		b, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		ef, err := elfnotes.NewFile(bytes.NewReader(b))
		if err != nil {
			return
		}
		syms, warnings, err := ReadPartial(ef)
		if (err != nil) != (syms == nil) {
			t.Fatalf("have %d symbols and error %v", len(syms), err)
		}
		for _, w := range warnings {
			var fe *elfnotes.FormatError
			if !errors.As(w, &fe) && !errors.Is(w, ErrNoSymbols) {
				t.Errorf("warning %v is not a *FormatError", w)
			}
		}
		strictSyms, strictErr := Read(ef)
		if (strictErr != nil) != (err != nil || len(warnings) > 0) || (strictErr != nil) != (strictSyms == nil) {
			t.Fatalf("Read: %d symbols, error %v; ReadPartial: error %v, %d warnings", len(strictSyms), strictErr, err, len(warnings))
		}
		if !slices.IsSortedFunc(syms, func(a, b Symbol) int {
			return cmp.Or(cmp.Compare(a.Value, b.Value), strings.Compare(a.Name, b.Name))
		}) {
			t.Error("not sorted by value and name")
		}
		if err == nil {
			// Keep selects whole symbols: keeping the plain names of odd
			// length gives the symbols of the whole list with such names.
			keep := func(p string) bool { return len(p)%2 == 1 }
			some, _, err := ReadPartialWith(ef, &ReadOptions{Keep: keep})
			if err != nil || some == nil {
				t.Fatalf("with Keep: %d symbols, error %v; without: none", len(some), err)
			}
			want := slices.DeleteFunc(slices.Clone(syms), func(s Symbol) bool { return !keep(PlainName(s.Name)) })
			if len(some) != len(want) || (len(want) > 0 && !reflect.DeepEqual(some, want)) {
				t.Errorf("with Keep: have %+v\nwant %+v", some, want)
			}
		}
		tab := NewTable(syms)
		for _, s := range syms {
			if s.Name == "" || elf.SectionIndex(s.Section) == elf.SHN_UNDEF {
				t.Errorf("have %+v, want a named, defined symbol", s)
			}
			if s.Type == elf.STT_FILE || s.Type == elf.STT_SECTION {
				continue
			}
			have, err := tab.Lookup(s.Name)
			if err == nil && have.Value != s.Value {
				t.Errorf("Lookup(%q): have value %#x, want %#x", s.Name, have.Value, s.Value)
			}
			if err != nil && !errors.Is(err, ErrAmbiguous) {
				t.Errorf("Lookup(%q): %v", s.Name, err)
			}
		}
	})
}
