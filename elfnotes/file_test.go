package elfnotes

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"

	"github.com/usdtkit/usdtkit/internal/testutil"
)

func TestMain(m *testing.M) { testutil.MainCheckingFDs(m) }

// readerAtOnly hides the Size method of the reader it wraps, so NewFile
// cannot know the file size.
type readerAtOnly struct{ r io.ReaderAt }

func (r readerAtOnly) ReadAt(p []byte, off int64) (int, error) { return r.r.ReadAt(p, off) }

func wantProbes(adjust bool) []SDTProbe {
	var want []SDTProbe
	for _, s := range fixtureProbes {
		p := SDTProbe{Stapsdt: s, Addr: s.PC, SemaphoreAddr: s.Semaphore}
		if adjust {
			p.Addr += fixDelta
			if s.Semaphore != 0 {
				p.SemaphoreAddr += fixDelta
			}
		}
		want = append(want, p)
	}
	return want
}

func TestFixtures(t *testing.T) {
	variants := []struct {
		name     string
		opts     fixtureOpts
		adjust   bool
		probes   int
		noteSecs []string // Section of each note, in order
	}{
		{"base", fixtureOpts{baseSection: true}, true, 3, []string{".note.gnu.build-id", ".note.stapsdt", ".note.stapsdt", ".note.stapsdt"}},
		{"no-base", fixtureOpts{}, false, 3, []string{".note.gnu.build-id", ".note.stapsdt", ".note.stapsdt", ".note.stapsdt"}},
		{"nobits-notes", fixtureOpts{baseSection: true, nobitsNotes: true}, true, 0, []string{".note.gnu.build-id"}},
		{"no-section-headers", fixtureOpts{noSectionHeaders: true}, false, 3, []string{"", "", "", ""}},
	}
	for _, c := range classes {
		for _, v := range variants {
			t.Run(c.name+"/"+v.name, func(t *testing.T) {
				o := v.opts
				o.class, o.data = c.class, c.data
				raw := buildFixture(t, o)
				for _, reader := range []struct {
					name string
					r    io.ReaderAt
				}{{"sized", bytes.NewReader(raw)}, {"unsized", readerAtOnly{bytes.NewReader(raw)}}} {
					f, err := NewFile(reader.r)
					if err != nil {
						t.Fatalf("%s: NewFile: %v", reader.name, err)
					}
					checkFixture(t, f, c.class, c.data, v.adjust, v.probes, v.noteSecs)
				}
			})
		}
	}
}

func checkFixture(t *testing.T, f *File, class elf.Class, data elf.Data, adjust bool, nprobes int, noteSecs []string) {
	t.Helper()
	if f.Class != class || f.Data != data || f.Machine != elf.EM_X86_64 || f.Type != elf.ET_EXEC || f.Entry != fixText {
		t.Errorf("header: have %v %v %v %v %#x", f.Class, f.Data, f.Machine, f.Type, f.Entry)
	}
	notes, err := f.Notes()
	if err != nil {
		t.Fatalf("Notes: %v", err)
	}
	var haveSecs []string
	for _, n := range notes {
		haveSecs = append(haveSecs, n.Section)
	}
	if !reflect.DeepEqual(haveSecs, noteSecs) {
		t.Fatalf("note sections: have %q, want %q", haveSecs, noteSecs)
	}
	if n := notes[0]; n.Owner != "GNU" || n.Type != NTGNUBuildID || n.TypeName() != "NT_GNU_BUILD_ID" || !bytes.Equal(n.Desc, []byte{0xde, 0xad, 0xbe, 0xef, 1, 2, 3, 4}) {
		t.Errorf("build-id note: have %+v", n)
	}
	for _, n := range notes[1:] {
		if n.Owner != OwnerStapsdt || n.TypeName() != "NT_STAPSDT" {
			t.Errorf("sdt note: have owner %q type %s", n.Owner, n.TypeName())
		}
	}

	probes, err := f.SDTProbes()
	if err != nil {
		t.Fatalf("SDTProbes: %v", err)
	}
	want := wantProbes(adjust)[:nprobes]
	for i := range probes {
		// NoteOffset must point at the header of the matching note.
		if probes[i].NoteOffset != notes[i+1].Offset {
			t.Errorf("probe %d: NoteOffset have %#x, want %#x", i, probes[i].NoteOffset, notes[i+1].Offset)
		}
		probes[i].NoteOffset = 0
	}
	if !reflect.DeepEqual(probes, want) {
		t.Fatalf("SDTProbes:\nhave %+v\nwant %+v", probes, want)
	}

	// Probe sites are in .text; semaphores in .data.
	for _, p := range probes {
		if !adjust {
			continue
		}
		off, err := f.AddrToOffset(p.Addr)
		if err != nil {
			t.Fatalf("AddrToOffset(%#x): %v", p.Addr, err)
		}
		text := f.Section(".text")
		if want := text.Offset + p.Addr - fixText; off != want {
			t.Errorf("AddrToOffset(%#x): have %#x, want %#x", p.Addr, off, want)
		}
		if addr, err := f.OffsetToAddr(off); err != nil || addr != p.Addr {
			t.Errorf("OffsetToAddr(%#x): have %#x, %v, want %#x", off, addr, err, p.Addr)
		}
		if p.SemaphoreAddr != 0 {
			off, err := f.AddrToOffset(p.SemaphoreAddr)
			if want := f.Section(".data").Offset + 4; err != nil || off != want {
				t.Errorf("AddrToOffset(sema %#x): have %#x, %v, want %#x", p.SemaphoreAddr, off, err, want)
			}
		}
	}
	// .bss has memory but no file bytes; below the image nothing maps.
	for _, addr := range []uint64{fixData + 16, fixData + 0x30, 0x1000} {
		if _, err := f.AddrToOffset(addr); !errors.Is(err, ErrNoSegment) {
			t.Errorf("AddrToOffset(%#x): have %v, want ErrNoSegment", addr, err)
		}
	}
}

func TestSectionData(t *testing.T) {
	raw := buildFixture(t, fixtureOpts{class: elf.ELFCLASS64, data: elf.ELFDATA2LSB, nobitsNotes: true})
	f, err := NewFile(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		want []byte
	}{
		{".text", bytes.Repeat([]byte{0x90}, 0x40)},
		{".bss", nil},
		{".note.stapsdt", nil},
		{".data", make([]byte, 16)},
	}
	for _, tt := range tests {
		s := f.Section(tt.name)
		if s == nil {
			t.Fatalf("Section(%q) = nil", tt.name)
		}
		have, err := s.Data()
		if err != nil || !bytes.Equal(have, tt.want) || (tt.want == nil) != (have == nil) {
			t.Errorf("%s: Data() have %x, %v, want %x", tt.name, have, err, tt.want)
		}
		viaOpen, err := io.ReadAll(s.Open())
		if err != nil || !bytes.Equal(viaOpen, tt.want) {
			t.Errorf("%s: Open() have %x, %v, want %x", tt.name, viaOpen, err, tt.want)
		}
	}
	if f.Section(".nope") != nil {
		t.Error("Section(.nope) != nil")
	}
	// A section claiming bytes past the end of the file.
	s := *f.Section(".text")
	s.Size = uint64(len(raw))
	var fe *FormatError
	if _, err := s.Data(); !errors.As(err, &fe) {
		t.Errorf("oversized Data(): have %v, want *FormatError", err)
	}
	if _, err := io.ReadAll(s.Open()); !errors.As(err, &fe) {
		t.Errorf("oversized Open(): have %v, want *FormatError", err)
	}
}

// TestNoteAlign8 checks the layout of notes in an 8-aligned section: header
// of three 4-byte words, name and descriptor padded to 8.
func TestNoteAlign8(t *testing.T) {
	le := byteOrder(elf.ELFDATA2LSB)
	var sec []byte
	// owner "abcde\0": 12+6 = 18 → descriptor at 24; 5-byte desc → next at 32.
	sec = appendUint32(sec, le, 6)
	sec = appendUint32(sec, le, 5)
	sec = appendUint32(sec, le, 7)
	sec = append(sec, "abcde\x00\x00\x00\x00\x00\x00\x00"...)
	sec = append(sec, "12345\x00\x00\x00"...)
	sec = AppendNote(sec, le, OwnerGNU, NTGNUProperty0, make([]byte, 16))
	raw, err := (&Builder{
		Class: elf.ELFCLASS64, Data: elf.ELFDATA2LSB, Type: elf.ET_DYN, Machine: elf.EM_X86_64,
		Sections: []BuildSection{{Name: ".note.gnu.property", Type: elf.SHT_NOTE, Flags: elf.SHF_ALLOC, Align: 8, Data: sec}},
	}).Bytes()
	if err != nil {
		t.Fatal(err)
	}
	f, err := NewFile(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	notes, err := f.Notes()
	if err != nil {
		t.Fatal(err)
	}
	base := f.Section(".note.gnu.property").Offset
	want := []Note{
		{Owner: "abcde", Type: 7, Desc: []byte("12345"), Offset: base, Section: ".note.gnu.property"},
		{Owner: "GNU", Type: NTGNUProperty0, Desc: make([]byte, 16), Offset: base + 32, Section: ".note.gnu.property"},
	}
	if !reflect.DeepEqual(notes, want) {
		t.Errorf("have %+v\nwant %+v", notes, want)
	}
}

func TestAppendNote(t *testing.T) {
	tests := []struct {
		name  string
		owner string
		typ   uint32
		desc  []byte
		want  []byte
	}{
		{"empty owner", "", 1, []byte{1}, []byte{0, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0}},
		{"GNU", "GNU", 3, []byte{9, 9}, []byte{4, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0, 'G', 'N', 'U', 0, 9, 9, 0, 0}},
		{"stapsdt", "stapsdt", 3, nil, []byte{8, 0, 0, 0, 0, 0, 0, 0, 3, 0, 0, 0, 's', 't', 'a', 'p', 's', 'd', 't', 0}},
		{"odd owner", "Go", 4, []byte{1, 2, 3, 4}, []byte{3, 0, 0, 0, 4, 0, 0, 0, 4, 0, 0, 0, 'G', 'o', 0, 0, 1, 2, 3, 4}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			have := AppendNote(nil, byteOrder(elf.ELFDATA2LSB), tt.owner, tt.typ, tt.desc)
			if !bytes.Equal(have, tt.want) {
				t.Errorf("have % x\nwant % x", have, tt.want)
			}
			got, err := readRecords(have, byteOrder(elf.ELFDATA2LSB))
			if err != nil || len(got) != 1 || got[0].Owner != tt.owner || got[0].Type != tt.typ || !bytes.Equal(got[0].Desc, tt.desc) {
				t.Errorf("read back: have %+v, %v", got, err)
			}
		})
	}
}

func TestParseStapsdt(t *testing.T) {
	le, be := byteOrder(elf.ELFDATA2LSB), byteOrder(elf.ELFDATA2MSB)
	s := Stapsdt{PC: 0x1122, Base: 0x3344, Semaphore: 0x5566, Provider: "p", Name: "n", Args: "8@%rdi"}
	tests := []struct {
		name    string
		desc    []byte
		class   elf.Class
		want    Stapsdt
		wantOff int64 // -1: no error
	}{
		{"64le", s.AppendDesc(nil, elf.ELFCLASS64, le), elf.ELFCLASS64, s, -1},
		{"32be", s.AppendDesc(nil, elf.ELFCLASS32, be), elf.ELFCLASS32, s, -1},
		{"trailing bytes ignored", append(s.AppendDesc(nil, elf.ELFCLASS32, le), 0, 0, 'x'), elf.ELFCLASS32, s, -1},
		{"empty strings", make([]byte, 27), elf.ELFCLASS64, Stapsdt{}, -1},
		{"short", make([]byte, 23), elf.ELFCLASS64, Stapsdt{}, 0},
		{"no provider NUL", make([]byte, 12), elf.ELFCLASS32, Stapsdt{}, 12},
		{"no args NUL", append(make([]byte, 14), 'a'), elf.ELFCLASS32, Stapsdt{}, 14},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			order := le
			if strings.HasSuffix(tt.name, "be") {
				order = be
			}
			have, err := ParseStapsdt(tt.desc, tt.class, order)
			if tt.wantOff >= 0 {
				var fe *FormatError
				if !errors.As(err, &fe) || fe.Off != tt.wantOff {
					t.Fatalf("have %v, want *FormatError at %d", err, tt.wantOff)
				}
				if have != (Stapsdt{}) {
					t.Errorf("result not zero on error: %+v", have)
				}
				return
			}
			if err != nil || have != tt.want {
				t.Errorf("have %+v, %v, want %+v", have, err, tt.want)
			}
		})
	}
	if _, err := ParseStapsdt(make([]byte, 64), elf.ELFCLASSNONE, le); err == nil {
		t.Error("ELFCLASSNONE: have nil error")
	}
}

// put writes v at off in b as a 2, 4 or 8-byte little-endian value.
func put(b []byte, off int, size int, v uint64) []byte {
	b = bytes.Clone(b)
	le := byteOrder(elf.ELFDATA2LSB)
	switch size {
	case 2:
		le.PutUint16(b[off:], uint16(v))
	case 4:
		le.PutUint32(b[off:], uint32(v))
	default:
		le.PutUint64(b[off:], v)
	}
	return b
}

// TestMalformed feeds ELF64 LE files damaged in one field and wants a
// *FormatError at the given offset from NewFile, or else from Notes and
// SDTProbes.
func TestMalformed(t *testing.T) {
	good := buildFixture(t, fixtureOpts{class: elf.ELFCLASS64, data: elf.ELFDATA2LSB, baseSection: true})
	f, err := NewFile(bytes.NewReader(good))
	if err != nil {
		t.Fatal(err)
	}
	le := byteOrder(elf.ELFDATA2LSB)
	shoff := int(le.Uint64(good[40:]))
	shstrndx := int(le.Uint16(good[62:]))
	idx := func(name string) int {
		for i, s := range f.Sections {
			if s.Name == name {
				return i
			}
		}
		t.Fatalf("no section %s", name)
		return 0
	}
	sh := func(i, field int) int { return shoff + i*shdr64 + field }
	sdt := f.Section(".note.stapsdt")
	sdtIdx := idx(".note.stapsdt")
	notes, err := f.Notes()
	if err != nil {
		t.Fatal(err)
	}
	second := notes[2].Offset // second SDT note
	const maxU64 = ^uint64(0)

	tests := []struct {
		name    string
		raw     []byte
		inNotes bool  // error comes from Notes/SDTProbes, not NewFile
		wantOff int64 // -1: any offset
		warning bool  // NewFile succeeds with this as File.Warnings()[0]
	}{
		{"empty", nil, false, 0, false},
		{"ident only", good[:16], false, -1, false},
		{"bad magic", put(good, 0, 4, 0x464c457e), false, 0, false},
		{"bad class", put(good, 4, 2, 0x0103), false, 4, false},
		{"bad data", put(good, 5, 1, 7), false, 5, false},
		{"header only", good[:64], false, -1, false},
		{"shoff past EOF", put(good, 40, 8, uint64(len(good))), false, int64(len(good)), false},
		{"shoff overflow", put(good, 40, 8, maxU64-8), false, -1, false},
		{"shnum huge", put(good, 60, 2, 0xfffe), false, int64(shoff), false},
		{"shentsize small", put(good, 58, 2, 8), false, 58, false},
		{"shstrndx range", put(good, 62, 2, 0xfff0), false, 62, true},
		{"phoff overflow", put(good, 32, 8, maxU64-100), false, -1, false},
		{"phnum huge", put(good, 56, 2, 0xfffe), false, 64, false},
		{"phentsize small", put(good, 54, 2, 1), false, 54, false},
		{"name off range", put(good, sh(1, 0), 4, 1<<30), false, int64(sh(1, 0)), true},
		{"strtab past EOF", put(good, sh(shstrndx, 24), 8, 1<<40), false, 1 << 40, true},
		{"xnum shnum huge", put(put(good, 60, 2, 0), sh(0, 32), 8, 1<<40), false, int64(shoff), false},
		{"note size past EOF", put(good, sh(sdtIdx, 32), 8, 1<<20), true, int64(sdt.Offset), false},
		{"note truncated header", put(good, sh(sdtIdx, 32), 8, second-sdt.Offset+5), true, int64(second), false},
		{"namesz huge", put(good, int(sdt.Offset), 4, 0xffffffff), true, int64(sdt.Offset), false},
		{"descsz huge", put(good, int(sdt.Offset+4), 4, 0xfffffff0), true, int64(sdt.Offset), false},
		{"sdt desc too short", put(good, int(sdt.Offset+4), 4, 20), true, -1, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for i, r := range []io.ReaderAt{bytes.NewReader(tt.raw), readerAtOnly{bytes.NewReader(tt.raw)}} {
				f, err := NewFile(r)
				if i == 1 && tt.name == "note size past EOF" {
					// Without the file size, the damage shows where
					// the data ends, at the note that reaches past it.
					tt.wantOff = -1
				}
				if tt.warning {
					// Bad names are warnings: the sections stay.
					if err != nil {
						t.Fatalf("NewFile: %v", err)
					}
					if len(f.Warnings()) == 0 || len(f.Sections) == 0 {
						t.Fatalf("have %d sections, warnings %v, want sections and warnings", len(f.Sections), f.Warnings())
					}
					checkFormatError(t, "NewFile warning", f.Warnings()[0], tt.wantOff)
					continue
				}
				if !tt.inNotes {
					checkFormatError(t, "NewFile", err, tt.wantOff)
					if f != nil {
						t.Error("NewFile returned a File with an error")
					}
					continue
				}
				if err != nil {
					t.Fatalf("NewFile: %v", err)
				}
				notes, err := f.Notes()
				if tt.name != "sdt desc too short" {
					checkFormatError(t, "Notes", err, tt.wantOff)
					if notes != nil {
						t.Error("Notes returned notes with an error")
					}
				}
				probes, err := f.SDTProbes()
				checkFormatError(t, "SDTProbes", err, tt.wantOff)
				if probes != nil {
					t.Error("SDTProbes returned probes with an error")
				}
			}
		})
	}
}

func checkFormatError(t *testing.T, what string, err error, wantOff int64) {
	t.Helper()
	var fe *FormatError
	if !errors.As(err, &fe) {
		t.Fatalf("%s: have %v, want *FormatError", what, err)
	}
	if wantOff >= 0 && fe.Off != wantOff {
		t.Errorf("%s: have offset %#x (%v), want %#x", what, fe.Off, err, wantOff)
	}
	if !strings.Contains(fe.Error(), "at byte 0x") && !strings.Contains(fe.Error(), "at byte 0") {
		t.Errorf("%s: message %q lacks the offset", what, fe.Error())
	}
}

// TestExtendedNumbering moves e_shnum and e_shstrndx into section header 0,
// as the gABI allows.
func TestExtendedNumbering(t *testing.T) {
	good := buildFixture(t, fixtureOpts{class: elf.ELFCLASS64, data: elf.ELFDATA2LSB, baseSection: true})
	le := byteOrder(elf.ELFDATA2LSB)
	shoff := int(le.Uint64(good[40:]))
	shnum, shstrndx := le.Uint16(good[60:]), le.Uint16(good[62:])
	raw := put(good, 60, 2, 0)
	raw = put(raw, 62, 2, shnXIndex)
	raw = put(raw, shoff+32, 8, uint64(shnum))
	raw = put(raw, shoff+40, 4, uint64(shstrndx))
	f, err := NewFile(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Sections) != int(shnum) || f.Section(".note.stapsdt") == nil {
		t.Fatalf("have %d sections, want %d with names", len(f.Sections), shnum)
	}
	probes, err := f.SDTProbes()
	if err != nil || len(probes) != len(fixtureProbes) {
		t.Fatalf("SDTProbes: have %d, %v", len(probes), err)
	}
}

func TestOpenClose(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.elf")
	if err := os.WriteFile(path, buildFixture(t, fixtureOpts{class: elf.ELFCLASS32, data: elf.ELFDATA2MSB}), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if _, err := Open(filepath.Join(t.TempDir(), "missing")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Open(missing): have %v, want ErrNotExist", err)
	}
	bad := filepath.Join(t.TempDir(), "bad")
	if err := os.WriteFile(bad, []byte("\x7fELF"), 0o600); err != nil {
		t.Fatal(err)
	}
	var fe *FormatError
	if _, err := Open(bad); !errors.As(err, &fe) {
		t.Errorf("Open(bad): have %v, want *FormatError", err)
	}
}

func TestBuilderErrors(t *testing.T) {
	tests := []struct {
		name string
		b    Builder
	}{
		{"no class", Builder{Data: elf.ELFDATA2LSB}},
		{"no data", Builder{Class: elf.ELFCLASS64}},
		{"wide for ELF32", Builder{Class: elf.ELFCLASS32, Data: elf.ELFDATA2LSB, Sections: []BuildSection{{Name: "a", Addr: 1 << 33}}}},
		{"bad align", Builder{Class: elf.ELFCLASS64, Data: elf.ELFDATA2LSB, Sections: []BuildSection{{Name: "a", Align: 3}}}},
		{"nobits data", Builder{Class: elf.ELFCLASS64, Data: elf.ELFDATA2LSB, Sections: []BuildSection{{Name: "a", Type: elf.SHT_NOBITS, Data: []byte{1}}}}},
		{"missing section", Builder{Class: elf.ELFCLASS64, Data: elf.ELFDATA2LSB, Progs: []BuildProg{{Sections: []string{"x"}}}}},
		{"not consecutive", Builder{Class: elf.ELFCLASS64, Data: elf.ELFDATA2LSB,
			Sections: []BuildSection{{Name: "a"}, {Name: "b"}, {Name: "c"}},
			Progs:    []BuildProg{{Sections: []string{"a", "c"}}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := tt.b.Bytes(); !errors.Is(err, ErrBuild) {
				t.Errorf("have %v, want ErrBuild", err)
			}
		})
	}
}

// TestBoundedAllocation opens headers that claim gigabytes of section and
// program headers and checks that reading them allocates about nothing,
// whether or not the reader's size is known.
func TestBoundedAllocation(t *testing.T) {
	good := buildFixture(t, fixtureOpts{class: elf.ELFCLASS64, data: elf.ELFDATA2LSB})
	hdr := bytes.Clone(good[:64])
	huge := []struct {
		name string
		raw  []byte
	}{
		{"sections", put(put(put(hdr, 40, 8, 64), 58, 2, 0xffff), 60, 2, 0xfffe)},
		{"programs", put(put(put(hdr, 32, 8, 64), 54, 2, 0xffff), 56, 2, 0xfffe)},
		{"xnum", append(put(put(put(hdr, 40, 8, 64), 58, 2, 64), 60, 2, 0),
			put(make([]byte, 64), 32, 8, 1<<40)...)},
	}
	for _, h := range huge {
		for _, r := range []io.ReaderAt{bytes.NewReader(h.raw), readerAtOnly{bytes.NewReader(h.raw)}} {
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			_, err := NewFile(r)
			runtime.ReadMemStats(&after)
			var fe *FormatError
			if !errors.As(err, &fe) {
				t.Errorf("%s: have %v, want *FormatError", h.name, err)
			}
			if n := after.TotalAlloc - before.TotalAlloc; n > 2*readChunk {
				t.Errorf("%s: allocated %d bytes for a %d-byte file", h.name, n, len(h.raw))
			}
		}
	}
}

// TestConcurrent reads one File from several goroutines; run with -race.
func TestConcurrent(t *testing.T) {
	path := filepath.Join("testdata", "sdt-elf64le.elf")
	f, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	want, err := f.SDTProbes()
	if err != nil {
		t.Fatal(err)
	}
	errs := make(chan error, 8)
	for range 8 {
		go func() {
			have, err := f.SDTProbes()
			if err == nil && !reflect.DeepEqual(have, want) {
				err = fmt.Errorf("have %+v, want %+v", have, want)
			}
			errs <- err
		}()
	}
	for range 8 {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}

// readRecords reads note records from rec as the notes of a PT_NOTE
// segment; a warning is an error.
func readRecords(rec []byte, bo binary.ByteOrder) ([]Note, error) {
	f := &File{ByteOrder: bo, r: bytes.NewReader(rec), size: int64(len(rec)),
		Progs: []*Prog{{Type: elf.PT_NOTE, Filesz: uint64(len(rec)), Align: 4}}}
	return f.Notes()
}
