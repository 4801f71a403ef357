package uprobe

import (
	"debug/elf"
	"encoding/binary"
	"errors"
	"reflect"
	"testing"

	"github.com/usdtkit/usdtkit/elfnotes"
	"github.com/usdtkit/usdtkit/internal/elf/symtab"
	"github.com/usdtkit/usdtkit/internal/elf/symtab/symtabtest"
)

// TestSymbolsSynthetic checks what Symbols adds to the symbols the table
// reader returns (internal/elf/symtab's TestReadSynthetic checks those, of
// the same files): it keeps the functions, in their order, gives each its
// kind and the file offset of its address, and copies the other fields.
func TestSymbolsSynthetic(t *testing.T) {
	type added struct {
		kind   SymbolKind
		offset uint64
	}
	// symtabtest.Lib's functions; its OBJECT obj is not one.
	funcs := map[string]added{
		"f1":  {SymFunc, symtabtest.DataOff},
		"f2":  {SymIFunc, symtabtest.DataOff + 4},
		"loc": {SymFunc, symtabtest.DataOff + 8},
	}
	for _, l := range symtabtest.Layouts() {
		t.Run(l.String(), func(t *testing.T) {
			f := symtabtest.NewFile(t, symtabtest.Lib(l.Class, l.Order).Bytes())
			have, err := Symbols(f)
			if err != nil {
				t.Fatal(err)
			}
			read, err := symtab.Read(f)
			if err != nil {
				t.Fatal(err)
			}
			var want []Symbol
			for _, s := range read {
				a, ok := funcs[s.Name]
				if !ok {
					continue
				}
				want = append(want, Symbol{Name: s.Name, Value: s.Value, Size: s.Size, Offset: a.offset, Kind: a.kind,
					Bind: s.Bind, Dynamic: s.Dynamic, Version: s.Version, Source: sourceOf(s.Source)})
			}
			if len(want) != len(funcs) {
				t.Fatalf("symtab.Read lists %+v, want %d functions among them", read, len(funcs))
			}
			if !reflect.DeepEqual(have, want) {
				t.Errorf("have %+v\nwant %+v", have, want)
			}
		})
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

// TestSymbolsErrors checks what Symbols adds to the table reader's errors
// (internal/elf/symtab's TestReadNoTables and TestReadMalformed check which
// error, at which offset, each damage gives): ErrNoSymbols is uprobe's,
// and the first warning SymbolsPartial reports, which lists the other
// functions, is the error of Symbols, with no symbols.
func TestSymbolsErrors(t *testing.T) {
	bo := binary.LittleEndian
	noTables := symtabtest.ELF{Class: elf.ELFCLASS64, Order: bo, Type: elf.ET_EXEC,
		Sections: []symtabtest.Section{{Name: ".text", Type: elf.SHT_PROGBITS, Data: make([]byte, 16)}}}
	// The version index of f2, which only .dynsym has, names no version
	// (.gnu.version is section 6; f2 is .dynsym entry 2).
	badVersion := symtabtest.Lib(elf.ELFCLASS64, bo)
	badVersion.Sections[5].Data = symtabtest.EncodeVersym(bo, 2, 9, 0)
	for _, tc := range []struct {
		name        string
		file        symtabtest.ELF
		wantIs      error
		wantOff     int64    // of the *FormatError, without wantIs
		wantPartial []string // the functions SymbolsPartial lists
	}{
		{"no tables", noTables, ErrNoSymbols, 0, nil},
		{"version index undefined", badVersion, nil, int64(badVersion.SectionOff(6) + 4), []string{"f1", "loc"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := symtabtest.NewFile(t, tc.file.Bytes())
			have, err := Symbols(f)
			if have != nil {
				t.Errorf("have %d symbols with error %v, want none", len(have), err)
			}
			partial, warnings, perr := SymbolsPartial(f)
			if tc.wantIs != nil {
				if !errors.Is(err, tc.wantIs) || !errors.Is(perr, tc.wantIs) || partial != nil {
					t.Errorf("have %v; SymbolsPartial %d symbols, %v; want %v", err, len(partial), perr, tc.wantIs)
				}
				return
			}
			var fe *elfnotes.FormatError
			if !errors.As(err, &fe) || fe.Off != tc.wantOff {
				t.Fatalf("have %v, want a *FormatError at %#x", err, tc.wantOff)
			}
			var names []string
			for _, s := range partial {
				names = append(names, s.Name)
			}
			if perr != nil || len(warnings) != 1 || !reflect.DeepEqual(warnings[0], err) || !reflect.DeepEqual(names, tc.wantPartial) {
				t.Errorf("SymbolsPartial: have %v, %v, %v; want %v and the one warning %v", names, warnings, perr, tc.wantPartial, err)
			}
		})
	}
}

func TestKindString(t *testing.T) {
	for _, tc := range []struct {
		have SymbolKind
		want string
	}{
		{SymFunc, "func"},
		{SymIFunc, "ifunc"},
		{SymbolKind(9), "SymbolKind(9)"},
	} {
		if have := tc.have.String(); have != tc.want {
			t.Errorf("have %q, want %q", have, tc.want)
		}
	}
}

// TestSymbolSources: each table symtab reads has its SymbolSource, named
// as symtab names it.
func TestSymbolSources(t *testing.T) {
	for _, s := range []symtab.Source{symtab.SourceSymtab, symtab.SourceDynsym, symtab.SourceGopclntab, symtab.SourceDebug} {
		if u := sourceOf(s); u == 0 || u.String() != s.String() {
			t.Errorf("%v: SymbolSource %v", s, u)
		}
	}
}
