package symtab

import (
	"debug/elf"
	"encoding/binary"
	"errors"
	"reflect"
	"testing"

	"github.com/usdtkit/usdtkit/elfnotes"
	"github.com/usdtkit/usdtkit/internal/elf/symtab/symtabtest"
)

func TestReadSynthetic(t *testing.T) {
	const text = symtabtest.Base + symtabtest.DataOff
	for _, l := range symtabtest.Layouts() {
		t.Run(l.String(), func(t *testing.T) {
			have, err := Read(symtabtest.NewFile(t, symtabtest.Lib(l.Class, l.Order).Bytes()))
			if err != nil {
				t.Fatal(err)
			}
			// The undefined "und" is in neither; the OBJECT "obj" is
			// listed like the functions.
			want := []Symbol{
				{Name: "f1", Value: text, Size: 4, Type: elf.STT_FUNC, Bind: elf.STB_GLOBAL, Section: 1,
					Dynamic: true, Version: "V1", Source: SourceSymtab},
				{Name: "f2", Value: text + 4, Type: elf.STT_GNU_IFUNC, Bind: elf.STB_GLOBAL, Section: 1,
					Dynamic: true, Version: "V2", Source: SourceDynsym},
				{Name: "loc", Value: text + 8, Size: 8, Type: elf.STT_FUNC, Bind: elf.STB_LOCAL, Section: 1,
					Source: SourceSymtab},
				{Name: "obj", Value: text + 0x10, Size: 8, Type: elf.STT_OBJECT, Bind: elf.STB_GLOBAL, Section: 1,
					Source: SourceSymtab},
			}
			if !reflect.DeepEqual(have, want) {
				t.Errorf("have %+v\nwant %+v", have, want)
			}
		})
	}
}

// dataLib returns a file whose .symtab has data symbols of several kinds,
// an unnamed section symbol and a versioned name, and whose .dynsym (no
// versions) repeats one of them.
func dataLib() symtabtest.ELF {
	le := binary.LittleEndian
	const data = symtabtest.Base + symtabtest.DataOff
	str := symtabtest.NewStrtab("counter", "table", "tls", "abs", "file.c", "v@V1")
	dynstr := symtabtest.NewStrtab("counter", "v")
	return symtabtest.ELF{Class: elf.ELFCLASS64, Order: le, Type: elf.ET_DYN, Sections: []symtabtest.Section{
		{Name: ".data", Type: elf.SHT_PROGBITS, Data: make([]byte, 0x40)},
		{Name: ".symtab", Type: elf.SHT_SYMTAB, Link: 3, Entsize: symtabtest.Sym64Size, Data: symtabtest.EncodeSyms(elf.ELFCLASS64, le,
			symtabtest.Sym{Type: elf.STT_SECTION, Bind: elf.STB_LOCAL, Shndx: 1, Value: data},
			symtabtest.Sym{Name: str.Offs["file.c"], Type: elf.STT_FILE, Bind: elf.STB_LOCAL, Shndx: uint16(elf.SHN_ABS)},
			symtabtest.Sym{Name: str.Offs["table"], Type: elf.STT_OBJECT, Bind: elf.STB_GLOBAL, Shndx: 1, Value: data + 0x10, Size: 16},
			symtabtest.Sym{Name: str.Offs["counter"], Type: elf.STT_OBJECT, Bind: elf.STB_GLOBAL, Shndx: 1, Value: data, Size: 8},
			symtabtest.Sym{Name: str.Offs["tls"], Type: elf.STT_TLS, Bind: elf.STB_GLOBAL, Shndx: 1, Value: 8, Size: 4},
			symtabtest.Sym{Name: str.Offs["abs"], Type: elf.STT_NOTYPE, Bind: elf.STB_GLOBAL, Shndx: uint16(elf.SHN_ABS), Value: 0x1234},
			symtabtest.Sym{Name: str.Offs["v@V1"], Type: elf.STT_OBJECT, Bind: elf.STB_GLOBAL, Shndx: 1, Value: data + 0x20, Size: 4},
		)},
		{Name: ".strtab", Type: elf.SHT_STRTAB, Data: str.Data},
		{Name: ".dynsym", Type: elf.SHT_DYNSYM, Link: 5, Entsize: symtabtest.Sym64Size, Data: symtabtest.EncodeSyms(elf.ELFCLASS64, le,
			symtabtest.Sym{Name: dynstr.Offs["counter"], Type: elf.STT_OBJECT, Bind: elf.STB_GLOBAL, Shndx: 1, Value: data, Size: 8},
			symtabtest.Sym{Name: dynstr.Offs["v"], Type: elf.STT_OBJECT, Bind: elf.STB_GLOBAL, Shndx: 1, Value: data + 0x20, Size: 4},
		)},
		{Name: ".dynstr", Type: elf.SHT_STRTAB, Data: dynstr.Data},
	}}
}

func TestReadDataSymbols(t *testing.T) {
	const data = symtabtest.Base + symtabtest.DataOff
	have, err := Read(symtabtest.NewFile(t, dataLib().Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	want := []Symbol{
		{Name: "file.c", Type: elf.STT_FILE, Bind: elf.STB_LOCAL, Section: uint16(elf.SHN_ABS), Source: SourceSymtab},
		{Name: "tls", Value: 8, Size: 4, Type: elf.STT_TLS, Bind: elf.STB_GLOBAL, Section: 1, Source: SourceSymtab},
		{Name: "abs", Value: 0x1234, Type: elf.STT_NOTYPE, Bind: elf.STB_GLOBAL, Section: uint16(elf.SHN_ABS), Source: SourceSymtab},
		{Name: "counter", Value: data, Size: 8, Type: elf.STT_OBJECT, Bind: elf.STB_GLOBAL, Section: 1, Dynamic: true, Source: SourceSymtab},
		{Name: "table", Value: data + 0x10, Size: 16, Type: elf.STT_OBJECT, Bind: elf.STB_GLOBAL, Section: 1, Source: SourceSymtab},
		// .dynsym's plain name replaces .symtab's "v@V1".
		{Name: "v", Value: data + 0x20, Size: 4, Type: elf.STT_OBJECT, Bind: elf.STB_GLOBAL, Section: 1, Dynamic: true, Source: SourceSymtab},
	}
	if !reflect.DeepEqual(have, want) {
		t.Errorf("have %+v\nwant %+v", have, want)
	}
}

func TestReadNoTables(t *testing.T) {
	e := symtabtest.ELF{Class: elf.ELFCLASS64, Order: binary.LittleEndian, Type: elf.ET_EXEC,
		Sections: []symtabtest.Section{{Name: ".text", Type: elf.SHT_PROGBITS, Data: make([]byte, 16)}}}
	have, err := Read(symtabtest.NewFile(t, e.Bytes()))
	if !errors.Is(err, ErrNoSymbols) || have != nil {
		t.Errorf("have %v, %v; want nil, ErrNoSymbols", have, err)
	}
}

// TestReadMalformed checks that broken tables give a *FormatError that
// points at the broken bytes. Sections of symtabtest.Lib: .symtab 2,
// .strtab 3, .dynsym 4, .gnu.version 6, .gnu.version_d 7.
func TestReadMalformed(t *testing.T) {
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
			// Entry 1 is the FUNC f1: st_name is its first word.
			name:    "name out of range",
			edit:    func(e *symtabtest.ELF) { bo.PutUint32(e.Sections[1].Data[symtabtest.Sym64Size:], 0xffff) },
			wantOff: func(e symtabtest.ELF) uint64 { return e.SectionOff(2) + symtabtest.Sym64Size },
		},
		{
			// .strtab loses its last NUL; entry 2 (loc) names its last byte.
			name: "name not terminated",
			edit: func(e *symtabtest.ELF) {
				s := &e.Sections[2]
				s.Data = s.Data[:len(s.Data)-1]
				bo.PutUint32(e.Sections[1].Data[2*symtabtest.Sym64Size:], uint32(len(s.Data)-2))
			},
			wantOff: func(e symtabtest.ELF) uint64 { return e.SectionOff(2) + 2*symtabtest.Sym64Size },
		},
		{
			// Entry 3 is the OBJECT obj: data symbols are checked too.
			name:    "object name out of range",
			edit:    func(e *symtabtest.ELF) { bo.PutUint32(e.Sections[1].Data[3*symtabtest.Sym64Size:], 0xffff) },
			wantOff: func(e symtabtest.ELF) uint64 { return e.SectionOff(2) + 3*symtabtest.Sym64Size },
		},
		{
			name:    "dynsym link out of range",
			edit:    func(e *symtabtest.ELF) { e.Sections[3].Link = 99 },
			wantOff: func(e symtabtest.ELF) uint64 { return e.SectionOff(4) },
		},
		{
			name:    "link not a string table",
			edit:    func(e *symtabtest.ELF) { e.Sections[1].Link = 1 },
			wantOff: func(e symtabtest.ELF) uint64 { return e.SectionOff(1) },
		},
		{
			name:    "version index undefined",
			edit:    func(e *symtabtest.ELF) { e.Sections[5].Data = symtabtest.EncodeVersym(bo, 9, 2, 0) },
			wantOff: func(e symtabtest.ELF) uint64 { return e.SectionOff(6) + 2 },
		},
		{
			name:    "versym too short",
			edit:    func(e *symtabtest.ELF) { e.Sections[5].Data = e.Sections[5].Data[:4] },
			wantOff: func(e symtabtest.ELF) uint64 { return e.SectionOff(6) },
		},
		{
			// The second Verdef (V1) is whole, the third cut short.
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
			have, err := Read(symtabtest.NewFile(t, e.Bytes()))
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

func TestSortSymbols(t *testing.T) {
	for _, tc := range []struct {
		name string
		have []Symbol
		want []string
	}{
		{"empty", nil, nil},
		{"one", []Symbol{{Name: "a"}}, []string{"a"}},
		{"by value", []Symbol{{Name: "c", Value: 3}, {Name: "a", Value: 1}, {Name: "b", Value: 2}}, []string{"a", "b", "c"}},
		{"by name and version", []Symbol{
			{Name: "b", Value: 1}, {Name: "a", Value: 1, Version: "V2"}, {Name: "a", Value: 1, Version: "V1"}, {Name: "z", Value: 0},
		}, []string{"z", "a@V1", "a@V2", "b"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sortSymbols(tc.have)
			var have []string
			for _, s := range tc.have {
				n := s.Name
				if s.Version != "" {
					n += "@" + s.Version
				}
				have = append(have, n)
			}
			if !reflect.DeepEqual(have, tc.want) {
				t.Errorf("have %v, want %v", have, tc.want)
			}
		})
	}
}

func TestSourceString(t *testing.T) {
	for _, tc := range []struct {
		have Source
		want string
	}{
		{SourceSymtab, "symtab"},
		{SourceDynsym, "dynsym"},
		{SourceGopclntab, "gopclntab"},
		{Source(9), "Source(9)"},
	} {
		if have := tc.have.String(); have != tc.want {
			t.Errorf("have %q, want %q", have, tc.want)
		}
	}
}

func TestParseVerneed(t *testing.T) {
	bo := binary.BigEndian
	str := symtabtest.NewStrtab("libc.so.6", "GLIBC_2.2.5", "GLIBC_2.34")
	var b []byte
	b = bo.AppendUint16(b, 1) // vn_version
	b = bo.AppendUint16(b, 2) // vn_cnt
	b = bo.AppendUint32(b, str.Offs["libc.so.6"])
	b = bo.AppendUint32(b, symtabtest.VerneedSize) // vn_aux
	b = bo.AppendUint32(b, 0)                      // vn_next
	for i, name := range []string{"GLIBC_2.2.5", "GLIBC_2.34"} {
		b = bo.AppendUint32(b, 0) // vna_hash
		b = bo.AppendUint16(b, 0) // vna_flags
		b = bo.AppendUint16(b, uint16(3+i))
		b = bo.AppendUint32(b, str.Offs[name])
		next := uint32(symtabtest.VernauxSize)
		if i == 1 {
			next = 0
		}
		b = bo.AppendUint32(b, next)
	}
	have := map[uint16]string{}
	if err := parseVerneed(have, b, 0, loadedStrTab(str.Data), bo); err != nil {
		t.Fatal(err)
	}
	want := map[uint16]string{3: "GLIBC_2.2.5", 4: "GLIBC_2.34"}
	if !reflect.DeepEqual(have, want) {
		t.Errorf("have %v, want %v", have, want)
	}

	// A chain that loops back onto itself must end, with an error.
	bo.PutUint16(b[2:], 0xffff)
	bo.PutUint32(b[symtabtest.VerneedSize+vernauxSize+12:], 1)
	var fe *elfnotes.FormatError
	if err := parseVerneed(map[uint16]string{}, b, 0, loadedStrTab(str.Data), bo); !errors.As(err, &fe) {
		t.Errorf("have %v, want a *FormatError", err)
	}
}

func TestCstring(t *testing.T) {
	tab := "\x00ab\x00c"
	for _, tc := range []struct {
		off     uint32
		want    string
		wantErr bool
	}{
		{0, "", false},
		{1, "ab", false},
		{2, "b", false},
		{4, "", true}, // no NUL after "c"
		{5, "", true},
		{1 << 31, "", true},
	} {
		have, msg, err := loadedStrTab([]byte(tab)).cstring(tc.off)
		if err != nil {
			t.Fatal(err)
		}
		if have != tc.want || (msg != "") != tc.wantErr {
			t.Errorf("cstring(%d): have %q, %q; want %q, error %v", tc.off, have, msg, tc.want, tc.wantErr)
		}
	}
}

// loadedStrTab returns a string table holding data, read already.
func loadedStrTab(data []byte) *strTab {
	return &strTab{sec: &elfnotes.Section{Type: elf.SHT_STRTAB, Size: uint64(len(data))}, data: string(data)}
}
