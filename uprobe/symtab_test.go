package uprobe

import (
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
	"reflect"
	"testing"

	"github.com/usdtkit/usdtkit/elfnotes"
	"github.com/usdtkit/usdtkit/internal/symtab/symtabtest"
)

func TestSymbolsSynthetic(t *testing.T) {
	const text = symtabtest.Base + symtabtest.DataOff
	for _, tc := range []struct {
		class elf.Class
		order symtabtest.Order
	}{
		{elf.ELFCLASS64, binary.LittleEndian},
		{elf.ELFCLASS64, binary.BigEndian},
		{elf.ELFCLASS32, binary.LittleEndian},
		{elf.ELFCLASS32, binary.BigEndian},
	} {
		t.Run(fmt.Sprintf("%v/%v", tc.class, tc.order), func(t *testing.T) {
			f := symtabtest.NewFile(t, symtabtest.Lib(tc.class, tc.order).Bytes())
			have, err := Symbols(f)
			if err != nil {
				t.Fatal(err)
			}
			want := []Symbol{
				{Name: "f1", Value: text, Size: 4, Offset: symtabtest.DataOff, Kind: SymFunc, Bind: elf.STB_GLOBAL,
					Dynamic: true, Version: "V1", Source: SourceSymtab},
				{Name: "f2", Value: text + 4, Offset: symtabtest.DataOff + 4, Kind: SymIFunc, Bind: elf.STB_GLOBAL,
					Dynamic: true, Version: "V2", Source: SourceDynsym},
				{Name: "loc", Value: text + 8, Size: 8, Offset: symtabtest.DataOff + 8, Kind: SymFunc, Bind: elf.STB_LOCAL,
					Source: SourceSymtab},
			}
			if !reflect.DeepEqual(have, want) {
				t.Errorf("have %+v\nwant %+v", have, want)
			}
		})
	}
}

func TestSymbolsNoTables(t *testing.T) {
	e := symtabtest.ELF{Class: elf.ELFCLASS64, Order: binary.LittleEndian, Type: elf.ET_EXEC,
		Sections: []symtabtest.Section{{Name: ".text", Type: elf.SHT_PROGBITS, Data: make([]byte, 16)}}}
	have, err := Symbols(symtabtest.NewFile(t, e.Bytes()))
	if !errors.Is(err, ErrNoSymbols) || have != nil {
		t.Errorf("have %v, %v; want nil, ErrNoSymbols", have, err)
	}
}

func TestSymbolsNoSegment(t *testing.T) {
	e := symtabtest.Lib(elf.ELFCLASS64, binary.LittleEndian)
	e.NoLoad = true
	have, err := Symbols(symtabtest.NewFile(t, e.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range have {
		if s.Offset != 0 {
			t.Errorf("%s: have offset %#x, want 0 (no PT_LOAD)", s.Name, s.Offset)
		}
	}
}

func TestSymbolsRelocatable(t *testing.T) {
	e := symtabtest.Lib(elf.ELFCLASS64, binary.LittleEndian)
	e.Type = elf.ET_REL
	// In an ET_REL file values are section-relative: rewrite f1 and loc.
	str := symtabtest.NewStrtab("f1", "loc")
	e.Sections = []symtabtest.Section{
		e.Sections[0],
		{Name: ".symtab", Type: elf.SHT_SYMTAB, Link: 3, Entsize: symtabtest.Sym64Size, Data: symtabtest.EncodeSyms(elf.ELFCLASS64, binary.LittleEndian,
			symtabtest.Sym{Name: str.Offs["f1"], Type: elf.STT_FUNC, Bind: elf.STB_GLOBAL, Shndx: 1, Value: 0, Size: 4},
			symtabtest.Sym{Name: str.Offs["loc"], Type: elf.STT_FUNC, Bind: elf.STB_LOCAL, Shndx: 1, Value: 8, Size: 8},
		)},
		{Name: ".strtab", Type: elf.SHT_STRTAB, Data: str.Data},
	}
	have, err := Symbols(symtabtest.NewFile(t, e.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []uint64{symtabtest.DataOff, symtabtest.DataOff + 8} {
		if i >= len(have) || have[i].Offset != want {
			t.Fatalf("have %+v, want offsets %#x, %#x", have, symtabtest.DataOff, symtabtest.DataOff+8)
		}
	}
}

// TestSymbolsMalformed checks that broken tables give a *FormatError that
// points at the broken bytes.
func TestSymbolsMalformed(t *testing.T) {
	bo := binary.LittleEndian
	for _, tc := range []struct {
		name    string
		edit    func(e *symtabtest.ELF)
		wantOff func(e symtabtest.ELF) uint64
	}{
		{
			name:    "entsize",
			edit:    func(e *symtabtest.ELF) { e.Sections[1].Entsize = 20 },
			wantOff: func(e symtabtest.ELF) uint64 { return e.SectionOff(2) },
		},
		{
			name:    "size not a multiple",
			edit:    func(e *symtabtest.ELF) { e.Sections[1].Data = e.Sections[1].Data[:len(e.Sections[1].Data)-1] },
			wantOff: func(e symtabtest.ELF) uint64 { return e.SectionOff(2) },
		},
		{
			name: "name out of range",
			edit: func(e *symtabtest.ELF) {
				// Entry 1 (f1): st_name is its first word.
				bo.PutUint32(e.Sections[1].Data[symtabtest.Sym64Size:], 0xffff)
			},
			wantOff: func(e symtabtest.ELF) uint64 { return e.SectionOff(2) + symtabtest.Sym64Size },
		},
		{
			name: "name not terminated",
			edit: func(e *symtabtest.ELF) {
				s := &e.Sections[2]
				s.Data = s.Data[:len(s.Data)-1]
				bo.PutUint32(e.Sections[1].Data[2*symtabtest.Sym64Size:], uint32(len(s.Data)-2)) // loc: last name
			},
			wantOff: func(e symtabtest.ELF) uint64 { return e.SectionOff(2) + 2*symtabtest.Sym64Size },
		},
		{
			name:    "link out of range",
			edit:    func(e *symtabtest.ELF) { e.Sections[3].Link = 99 },
			wantOff: func(e symtabtest.ELF) uint64 { return e.SectionOff(4) },
		},
		{
			name:    "link not a string table",
			edit:    func(e *symtabtest.ELF) { e.Sections[1].Link = 1 },
			wantOff: func(e symtabtest.ELF) uint64 { return e.SectionOff(1) },
		},
		{
			name: "version index undefined",
			edit: func(e *symtabtest.ELF) {
				e.Sections[5].Data = symtabtest.EncodeVersym(bo, 9, 2, 0)
			},
			wantOff: func(e symtabtest.ELF) uint64 { return e.SectionOff(6) + 2 },
		},
		{
			name:    "versym too short",
			edit:    func(e *symtabtest.ELF) { e.Sections[5].Data = e.Sections[5].Data[:4] },
			wantOff: func(e symtabtest.ELF) uint64 { return e.SectionOff(6) },
		},
		{
			name: "verdef truncated",
			edit: func(e *symtabtest.ELF) {
				s := &e.Sections[6]
				s.Data = s.Data[:symtabtest.VerdefSize+symtabtest.VerdauxSize+symtabtest.VerdefSize-1]
			},
			wantOff: func(e symtabtest.ELF) uint64 { return e.SectionOff(7) + symtabtest.VerdefSize + symtabtest.VerdauxSize },
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := symtabtest.Lib(elf.ELFCLASS64, bo)
			tc.edit(&e)
			have, err := Symbols(symtabtest.NewFile(t, e.Bytes()))
			var fe *elfnotes.FormatError
			if !errors.As(err, &fe) {
				t.Fatalf("have %v, %v; want a *FormatError", have, err)
			}
			if have != nil {
				t.Errorf("have %d symbols with an error, want none", len(have))
			}
			if want := tc.wantOff(e); fe.Off != int64(want) {
				t.Errorf("have offset %#x, want %#x (%v)", fe.Off, want, err)
			}
		})
	}
}

func TestKindString(t *testing.T) {
	for _, tc := range []struct {
		have fmt.Stringer
		want string
	}{
		{SymFunc, "func"},
		{SymIFunc, "ifunc"},
		{SymbolKind(9), "SymbolKind(9)"},
		{SourceSymtab, "symtab"},
		{SourceDynsym, "dynsym"},
		{SourceGopclntab, "gopclntab"},
	} {
		if have := tc.have.String(); have != tc.want {
			t.Errorf("have %q, want %q", have, tc.want)
		}
	}
}
