package elfnotes

import (
	"bytes"
	"debug/elf"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/usdtkit/usdtkit/internal/testutil"
)

// shdr locates section name's header in the ELF64 little-endian file raw:
// the file offset of the header and the section's offset and size, read
// with debug/elf from the intact file.
func shdr(t *testing.T, raw []byte, name string) (hdr, off, size uint64) {
	t.Helper()
	ef, err := elf.NewFile(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	le := byteOrder(elf.ELFDATA2LSB)
	shoff := le.Uint64(raw[40:])
	for i, s := range ef.Sections {
		if s.Name == name {
			return shoff + uint64(i)*shdr64, s.Offset, s.Size
		}
	}
	t.Fatalf("no section %s", name)
	return 0, 0, 0
}

// TestPartialDamage damages one part of a gcc-built binary with SDT probes
// at a time (issue 10, item 6) and checks that the probes readelf -n lists
// in the damaged file are all listed, the damaged note aside, with exactly
// one warning: a *FormatError at the damaged byte.
func TestPartialDamage(t *testing.T) {
	bin := testutil.BuildTracee(t)
	good, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	le := byteOrder(elf.ELFDATA2LSB)
	f, err := NewFile(bytes.NewReader(good))
	if err != nil {
		t.Fatal(err)
	}
	all, err := f.SDTProbes()
	if err != nil || len(all) < 3 {
		t.Fatalf("intact file: %d probes, %v; want at least 3", len(all), err)
	}

	tests := []struct {
		name string
		// damage changes raw and returns the offset the warning must
		// name and the PC of the probe it destroys (0 for none).
		damage func(raw []byte) (off int64, lostPC uint64)
	}{
		{"build-id note", func(raw []byte) (int64, uint64) {
			_, off, _ := shdr(t, raw, ".note.gnu.build-id")
			le.PutUint32(raw[off:], 0xffffffff) // n_namesz past the section
			return int64(off), 0
		}},
		{"sh_name", func(raw []byte) (int64, uint64) {
			hdr, _, _ := shdr(t, raw, ".note.stapsdt")
			le.PutUint32(raw[hdr:], 0x7fffffff)
			return int64(hdr), 0
		}},
		{"stapsdt descriptor", func(raw []byte) (int64, uint64) {
			// The second probe's argument string loses its NUL.
			p := all[1]
			namesz := uint64(le.Uint32(raw[p.NoteOffset:]))
			descsz := uint64(le.Uint32(raw[p.NoteOffset+4:]))
			desc := p.NoteOffset + noteHeaderSize + alignUp(namesz, 4)
			if raw[desc+descsz-1] != 0 {
				t.Fatalf("descriptor at %#x does not end in NUL", desc)
			}
			raw[desc+descsz-1] = 'x'
			args := desc + 24 + uint64(len(p.Provider)+1+len(p.Name)+1)
			return int64(args), p.Addr
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			raw := bytes.Clone(good)
			wantOff, lostPC := tt.damage(raw)
			path := filepath.Join(t.TempDir(), "damaged")
			if err := os.WriteFile(path, raw, 0o644); err != nil {
				t.Fatal(err)
			}
			var want []Stapsdt
			for _, n := range runReadelfNotes(t, path, true) {
				if n.sdt != nil && n.sdt.PC != lostPC {
					want = append(want, *n.sdt)
				}
			}
			if lostPC == 0 && len(want) != len(all) || lostPC != 0 && len(want) != len(all)-1 {
				t.Fatalf("readelf lists %d probes of the damaged file, the intact file has %d", len(want), len(all))
			}

			f, err := Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			probes, warnings, err := f.ReadSDTProbes()
			if err != nil {
				t.Fatal(err)
			}
			var have []Stapsdt
			for _, p := range probes {
				have = append(have, p.Stapsdt)
			}
			if !equalStapsdt(have, want) {
				t.Errorf("have probes\n%+v\nreadelf\n%+v", have, want)
			}
			warnings = append(f.Warnings(), warnings...)
			var fe *FormatError
			if len(warnings) != 1 || !errors.As(warnings[0], &fe) || fe.Off != wantOff {
				t.Errorf("have warnings %v, want one *FormatError at %#x", warnings, wantOff)
			}
			if _, err := f.SDTProbes(); !errors.As(err, &fe) && len(f.Warnings()) == 0 {
				t.Errorf("strict SDTProbes: have %v, want the warning", err)
			}
		})
	}
}

func equalStapsdt(a, b []Stapsdt) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestNoteLimits checks the limits on what a note walk reads: a name or
// descriptor over its limit skips that note with a warning, and a section
// of zeros (records of 12 bytes each) ends after MaxNotes records with a
// warning wrapping ErrLimit, allocating little.
func TestNoteLimits(t *testing.T) {
	bo := byteOrder(elf.ELFDATA2LSB)
	sdt := fixtureProbes[0].AppendDesc(nil, elf.ELFCLASS64, bo)
	good := AppendNote(nil, bo, OwnerStapsdt, NTStapsdt, sdt)
	longName := AppendNote(nil, bo, string(bytes.Repeat([]byte("n"), MaxNoteName)), 1, nil)
	longDesc := AppendNote(nil, bo, OwnerStapsdt, NTStapsdt, make([]byte, MaxNoteDesc+4))
	zeros := make([]byte, 12*(MaxNotes+10))
	tests := []struct {
		name      string
		area      []byte
		probes    int
		wantOff   int64
		wantLimit bool
	}{
		{"long name", append(bytes.Clone(longName), good...), 1, 0, false},
		{"long descriptor", append(append(bytes.Clone(good), longDesc...), good...), 2, int64(len(good)), false},
		{"zeros", append(bytes.Clone(good), zeros...), 1, int64(len(good) + 12*(MaxNotes-1)), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &File{Class: elf.ELFCLASS64, ByteOrder: bo, r: bytes.NewReader(tt.area), size: int64(len(tt.area)),
				Progs: []*Prog{{Type: elf.PT_NOTE, Filesz: uint64(len(tt.area)), Align: 4}}}
			probes, warnings, err := f.ReadSDTProbes()
			if err != nil {
				t.Fatal(err)
			}
			if len(probes) != tt.probes {
				t.Errorf("have %d probes, want %d", len(probes), tt.probes)
			}
			var fe *FormatError
			if len(warnings) != 1 || !errors.As(warnings[0], &fe) || fe.Off != tt.wantOff || errors.Is(fe, ErrLimit) != tt.wantLimit {
				t.Errorf("have warnings %v, want one at %#x (limit %v)", warnings, tt.wantOff, tt.wantLimit)
			}
		})
	}
}

// TestSparseNoteSection reads a fixture whose build-id section claims
// 16 GiB of zeros in a hole at the end of the file (issue 10, item 3):
// the probes come back with one ErrLimit warning, and reading allocates
// a few megabytes, not the claimed size.
func TestSparseNoteSection(t *testing.T) {
	raw := buildFixture(t, fixtureOpts{class: elf.ELFCLASS64, data: elf.ELFDATA2LSB, baseSection: true})
	hdr, _, _ := shdr(t, raw, ".note.gnu.build-id")
	le := byteOrder(elf.ELFDATA2LSB)
	off := uint64(len(raw)+0xfff) &^ 0xfff
	const size = 16 << 30
	le.PutUint64(raw[hdr+24:], off)
	le.PutUint64(raw[hdr+32:], size)
	path := filepath.Join(t.TempDir(), "sparse.elf")
	if err := os.WriteFile(path, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(path, int64(off)+size); err != nil {
		t.Fatal(err)
	}
	f, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	probes, warnings, err := f.ReadSDTProbes()
	runtime.ReadMemStats(&after)
	if err != nil || len(probes) != len(fixtureProbes) {
		t.Fatalf("have %d probes, %v; want %d", len(probes), err, len(fixtureProbes))
	}
	if len(warnings) != 1 || !errors.Is(warnings[0], ErrLimit) {
		t.Errorf("have warnings %v, want one wrapping ErrLimit", warnings)
	}
	if n := after.TotalAlloc - before.TotalAlloc; n > 1<<20 {
		t.Errorf("allocated %d bytes", n)
	}
}

// TestSparseHeaders opens fixtures whose program or section header table
// has 0xfffe entries of 0xffff bytes, 4 GiB in a hole at the end of the
// file: NewFile reads only the bytes of each entry it decodes.
func TestSparseHeaders(t *testing.T) {
	for _, tc := range []struct {
		name               string
		offField, numField int // e_phoff/e_shoff, e_phnum/e_shnum
		entField           int // e_phentsize/e_shentsize
		progs, sections    int
	}{
		{"programs", 32, 56, 54, 0xfffe, -1},
		{"sections", 40, 60, 58, -1, 0xfffe},
	} {
		t.Run(tc.name, func(t *testing.T) {
			raw := buildFixture(t, fixtureOpts{class: elf.ELFCLASS64, data: elf.ELFDATA2LSB})
			le := byteOrder(elf.ELFDATA2LSB)
			off := uint64(len(raw)+0xfff) &^ 0xfff
			le.PutUint64(raw[tc.offField:], off)
			le.PutUint16(raw[tc.numField:], 0xfffe)
			le.PutUint16(raw[tc.entField:], 0xffff)
			path := filepath.Join(t.TempDir(), "sparse.elf")
			if err := os.WriteFile(path, raw, 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Truncate(path, int64(off+0xfffe*0xffff)); err != nil {
				t.Fatal(err)
			}
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			f, err := Open(path)
			runtime.ReadMemStats(&after)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if tc.progs >= 0 && len(f.Progs) != tc.progs || tc.sections >= 0 && len(f.Sections) != tc.sections {
				t.Errorf("have %d programs and %d sections", len(f.Progs), len(f.Sections))
			}
			if n := after.TotalAlloc - before.TotalAlloc; n > 32<<20 {
				t.Errorf("allocated %d MiB", n>>20)
			}
		})
	}
}
