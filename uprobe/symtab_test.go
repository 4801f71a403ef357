package uprobe

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
	"reflect"
	"testing"

	"github.com/usdtkit/usdtkit/elfnotes"
)

func newTestFile(t testing.TB, b []byte) *elfnotes.File {
	t.Helper()
	f, err := elfnotes.NewFile(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("elfnotes.NewFile: %v", err)
	}
	return f
}

func TestSymbolsSynthetic(t *testing.T) {
	const text = testBase + testDataOff
	for _, tc := range []struct {
		class elf.Class
		order testOrder
	}{
		{elf.ELFCLASS64, binary.LittleEndian},
		{elf.ELFCLASS64, binary.BigEndian},
		{elf.ELFCLASS32, binary.LittleEndian},
		{elf.ELFCLASS32, binary.BigEndian},
	} {
		t.Run(fmt.Sprintf("%v/%v", tc.class, tc.order), func(t *testing.T) {
			f := newTestFile(t, testLib(tc.class, tc.order).bytes())
			have, err := Symbols(f)
			if err != nil {
				t.Fatal(err)
			}
			want := []Symbol{
				{Name: "f1", Value: text, Size: 4, Offset: testDataOff, Kind: SymFunc, Bind: elf.STB_GLOBAL,
					Dynamic: true, Version: "V1", Source: SourceSymtab},
				{Name: "f2", Value: text + 4, Offset: testDataOff + 4, Kind: SymIFunc, Bind: elf.STB_GLOBAL,
					Dynamic: true, Version: "V2", Source: SourceDynsym},
				{Name: "loc", Value: text + 8, Size: 8, Offset: testDataOff + 8, Kind: SymFunc, Bind: elf.STB_LOCAL,
					Source: SourceSymtab},
			}
			if !reflect.DeepEqual(have, want) {
				t.Errorf("have %+v\nwant %+v", have, want)
			}
		})
	}
}

func TestSymbolsNoTables(t *testing.T) {
	e := testELF{class: elf.ELFCLASS64, order: binary.LittleEndian, typ: elf.ET_EXEC,
		sections: []testSection{{name: ".text", typ: elf.SHT_PROGBITS, data: make([]byte, 16)}}}
	have, err := Symbols(newTestFile(t, e.bytes()))
	if !errors.Is(err, ErrNoSymbols) || have != nil {
		t.Errorf("have %v, %v; want nil, ErrNoSymbols", have, err)
	}
}

func TestSymbolsNoSegment(t *testing.T) {
	e := testLib(elf.ELFCLASS64, binary.LittleEndian)
	e.noLoad = true
	have, err := Symbols(newTestFile(t, e.bytes()))
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
	e := testLib(elf.ELFCLASS64, binary.LittleEndian)
	e.typ = elf.ET_REL
	// In an ET_REL file values are section-relative: rewrite f1 and loc.
	str := newTestStrtab("f1", "loc")
	e.sections = []testSection{
		e.sections[0],
		{name: ".symtab", typ: elf.SHT_SYMTAB, link: 3, entsize: sym64Size, data: encodeSyms(elf.ELFCLASS64, binary.LittleEndian,
			testSym{name: str.offs["f1"], typ: elf.STT_FUNC, bind: elf.STB_GLOBAL, shndx: 1, value: 0, size: 4},
			testSym{name: str.offs["loc"], typ: elf.STT_FUNC, bind: elf.STB_LOCAL, shndx: 1, value: 8, size: 8},
		)},
		{name: ".strtab", typ: elf.SHT_STRTAB, data: str.data},
	}
	have, err := Symbols(newTestFile(t, e.bytes()))
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []uint64{testDataOff, testDataOff + 8} {
		if i >= len(have) || have[i].Offset != want {
			t.Fatalf("have %+v, want offsets %#x, %#x", have, testDataOff, testDataOff+8)
		}
	}
}

// TestSymbolsMalformed checks that broken tables give a *FormatError that
// points at the broken bytes.
func TestSymbolsMalformed(t *testing.T) {
	bo := binary.LittleEndian
	for _, tc := range []struct {
		name    string
		edit    func(e *testELF)
		wantOff func(e testELF) uint64
	}{
		{
			name:    "entsize",
			edit:    func(e *testELF) { e.sections[1].entsize = 20 },
			wantOff: func(e testELF) uint64 { return e.sectionOff(2) },
		},
		{
			name:    "size not a multiple",
			edit:    func(e *testELF) { e.sections[1].data = e.sections[1].data[:len(e.sections[1].data)-1] },
			wantOff: func(e testELF) uint64 { return e.sectionOff(2) },
		},
		{
			name: "name out of range",
			edit: func(e *testELF) {
				// Entry 1 (f1): st_name is its first word.
				bo.PutUint32(e.sections[1].data[sym64Size:], 0xffff)
			},
			wantOff: func(e testELF) uint64 { return e.sectionOff(2) + sym64Size },
		},
		{
			name: "name not terminated",
			edit: func(e *testELF) {
				s := &e.sections[2]
				s.data = s.data[:len(s.data)-1]
				bo.PutUint32(e.sections[1].data[2*sym64Size:], uint32(len(s.data)-2)) // loc: last name
			},
			wantOff: func(e testELF) uint64 { return e.sectionOff(2) + 2*sym64Size },
		},
		{
			name:    "link out of range",
			edit:    func(e *testELF) { e.sections[3].link = 99 },
			wantOff: func(e testELF) uint64 { return e.sectionOff(4) },
		},
		{
			name:    "link not a string table",
			edit:    func(e *testELF) { e.sections[1].link = 1 },
			wantOff: func(e testELF) uint64 { return e.sectionOff(1) },
		},
		{
			name: "version index undefined",
			edit: func(e *testELF) {
				e.sections[5].data = encodeVersym(bo, 9, 2, 0)
			},
			wantOff: func(e testELF) uint64 { return e.sectionOff(6) + 2 },
		},
		{
			name:    "versym too short",
			edit:    func(e *testELF) { e.sections[5].data = e.sections[5].data[:4] },
			wantOff: func(e testELF) uint64 { return e.sectionOff(6) },
		},
		{
			name: "verdef truncated",
			edit: func(e *testELF) {
				s := &e.sections[6]
				s.data = s.data[:verdefSize+verdauxSize+verdefSize-1]
			},
			wantOff: func(e testELF) uint64 { return e.sectionOff(7) + verdefSize + verdauxSize },
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := testLib(elf.ELFCLASS64, bo)
			tc.edit(&e)
			have, err := Symbols(newTestFile(t, e.bytes()))
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

func TestParseVerneed(t *testing.T) {
	bo := binary.BigEndian
	str := newTestStrtab("libc.so.6", "GLIBC_2.2.5", "GLIBC_2.34")
	var b []byte
	b = bo.AppendUint16(b, 1) // vn_version
	b = bo.AppendUint16(b, 2) // vn_cnt
	b = bo.AppendUint32(b, str.offs["libc.so.6"])
	b = bo.AppendUint32(b, verneedSize) // vn_aux
	b = bo.AppendUint32(b, 0)           // vn_next
	for i, name := range []string{"GLIBC_2.2.5", "GLIBC_2.34"} {
		b = bo.AppendUint32(b, 0) // vna_hash
		b = bo.AppendUint16(b, 0) // vna_flags
		b = bo.AppendUint16(b, uint16(3+i))
		b = bo.AppendUint32(b, str.offs[name])
		next := uint32(vernauxSize)
		if i == 1 {
			next = 0
		}
		b = bo.AppendUint32(b, next)
	}
	have := map[uint16]string{}
	if err := parseVerneed(have, b, 0, string(str.data), bo); err != nil {
		t.Fatal(err)
	}
	want := map[uint16]string{3: "GLIBC_2.2.5", 4: "GLIBC_2.34"}
	if !reflect.DeepEqual(have, want) {
		t.Errorf("have %v, want %v", have, want)
	}

	// A chain that loops back onto itself must end, with an error.
	bo.PutUint16(b[2:], 0xffff)
	bo.PutUint32(b[verneedSize+vernauxSize+12:], 1)
	var fe *elfnotes.FormatError
	if err := parseVerneed(map[uint16]string{}, b, 0, string(str.data), bo); !errors.As(err, &fe) {
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
		have, msg := cstring(tab, tc.off)
		if have != tc.want || (msg != "") != tc.wantErr {
			t.Errorf("cstring(%d): have %q, %q; want %q, error %v", tc.off, have, msg, tc.want, tc.wantErr)
		}
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
