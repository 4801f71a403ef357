package uprobe

import (
	"bytes"
	"cmp"
	"debug/elf"
	"encoding/binary"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/usdtkit/usdtkit/elfnotes"
)

// fuzzSeeds returns the generated ELF files used as fuzz seeds.
func fuzzSeeds() [][]byte {
	var seeds [][]byte
	for _, c := range []elf.Class{elf.ELFCLASS32, elf.ELFCLASS64} {
		for _, bo := range []testOrder{binary.LittleEndian, binary.BigEndian} {
			seeds = append(seeds, testLib(c, bo).bytes())
		}
	}
	// A Go-looking file with no .symtab and a Go 1.20 pclntab header:
	// magic, pad, quantum 1, pointer size 8, then nfunc = 1 and garbage.
	pcln := binary.LittleEndian.AppendUint32(nil, 0xfffffff1)
	pcln = append(pcln, 0, 0, 1, 8)
	pcln = binary.LittleEndian.AppendUint64(pcln, 1)
	pcln = append(pcln, bytes.Repeat([]byte{0x40, 0, 0, 0, 0, 0, 0, 0}, 10)...)
	goFile := testELF{class: elf.ELFCLASS64, order: binary.LittleEndian, typ: elf.ET_EXEC,
		sections: []testSection{
			{name: ".text", typ: elf.SHT_PROGBITS, data: make([]byte, 32)},
			{name: ".gopclntab", typ: elf.SHT_PROGBITS, data: pcln},
			{name: ".go.buildinfo", typ: elf.SHT_PROGBITS, data: []byte("\xff Go buildinf:")},
		}}
	return append(seeds, goFile.bytes())
}

// FuzzSymbols checks that no input makes Symbols panic, that it returns
// either symbols or an error, and that what it returns is sorted and
// consistent.
func FuzzSymbols(f *testing.F) {
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
