package symtab

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"testing"

	"github.com/usdtkit/usdtkit/elfnotes"
	"github.com/usdtkit/usdtkit/internal/elf/symtab/symtabtest"
	"github.com/usdtkit/usdtkit/internal/testutil"
)

// TestPartialDamage damages one part of a copy of python3.11 at a time
// (issue 10, item 6) and checks that ReadPartial lists exactly what
// readelf -sW --dyn-syms lists in the damaged file, the entries readelf
// marks <corrupt> aside, with exactly one warning: a *FormatError at the
// damaged byte. The damaged entry is chosen in the file at test time.
func TestPartialDamage(t *testing.T) {
	good, err := os.ReadFile(testutil.RequireFile(t, testutil.Python311))
	if err != nil {
		t.Fatal(err)
	}
	ef, err := elf.NewFile(bytes.NewReader(good))
	if err != nil {
		t.Fatal(err)
	}
	if ef.Class != elf.ELFCLASS64 || ef.Data != elf.ELFDATA2LSB {
		t.Fatal("want ELF64 little-endian")
	}
	le := binary.LittleEndian
	section := func(typ elf.SectionType) (int, *elf.Section) {
		for i, s := range ef.Sections {
			if s.Type == typ {
				return i, s
			}
		}
		t.Fatalf("no section of type %v", typ)
		return 0, nil
	}
	_, dynsym := section(elf.SHT_DYNSYM)
	_, versym := section(elf.SHT_GNU_VERSYM)
	// A defined .dynsym entry with a version of its own (index > 1).
	entry := 0
	for i := 1; uint64(i*sym64Size) < dynsym.Size; i++ {
		e := good[dynsym.Offset+uint64(i*sym64Size):]
		if le.Uint16(e[6:]) != 0 && le.Uint16(good[versym.Offset+uint64(2*i):])&versymVersion > verNdxGlobal {
			entry = i
			break
		}
	}
	if entry == 0 {
		t.Fatal("no defined, versioned .dynsym entry")
	}
	shoff := le.Uint64(good[40:])

	tests := []struct {
		name   string
		damage func(raw []byte) int64 // returns the offset the warning must name
		header bool                   // the warning is NewFile's
	}{
		{"version index", func(raw []byte) int64 {
			off := versym.Offset + uint64(2*entry)
			le.PutUint16(raw[off:], 0x7ff0)
			return int64(off)
		}, false},
		{"symbol name", func(raw []byte) int64 {
			off := dynsym.Offset + uint64(entry*sym64Size)
			le.PutUint32(raw[off:], 0x7fffffff)
			return int64(off)
		}, false},
		{"sh_name", func(raw []byte) int64 {
			i, _ := section(elf.SHT_GNU_VERSYM)
			off := shoff + uint64(i)*64
			le.PutUint32(raw[off:], 0x7fffffff)
			return int64(off)
		}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			raw := bytes.Clone(good)
			wantOff := tt.damage(raw)
			path := filepath.Join(t.TempDir(), "damaged")
			if err := os.WriteFile(path, raw, 0o644); err != nil {
				t.Fatal(err)
			}
			f, err := elfnotes.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			have, warnings, err := ReadPartial(f)
			if err != nil {
				t.Fatal(err)
			}
			compareSymbols(t, have, symtabtest.Readelf(t, path))
			if tt.header {
				if len(warnings) != 0 {
					t.Errorf("ReadPartial: have warnings %v, want none", warnings)
				}
				warnings = f.Warnings()
			}
			var fe *elfnotes.FormatError
			if len(warnings) != 1 || !errors.As(warnings[0], &fe) || fe.Off != wantOff {
				t.Errorf("have warnings %v, want one *FormatError at %#x", warnings, wantOff)
			}
			if _, err := Read(f); !tt.header && !errors.As(err, &fe) {
				t.Errorf("strict Read: have %v, want the warning", err)
			}
		})
	}
}

// sparseCopy writes a copy of good, an ELF64 little-endian file, whose
// section named name claims size bytes from the first page boundary past
// the end of good, a hole in the copy, and returns the copy's path and
// that offset.
func sparseCopy(t *testing.T, good []byte, name string, size uint64) (path string, off uint64) {
	t.Helper()
	ef, err := elf.NewFile(bytes.NewReader(good))
	if err != nil {
		t.Fatal(err)
	}
	idx := -1
	for i, s := range ef.Sections {
		if s.Name == name {
			idx = i
		}
	}
	if idx < 0 {
		t.Fatalf("no %s", name)
	}
	le := binary.LittleEndian
	raw := bytes.Clone(good)
	// e_shoff is at byte 40 of the header; sh_offset and sh_size at 24
	// and 32 of a 64-byte section header.
	hdr := le.Uint64(raw[40:]) + uint64(idx)*64
	off = (uint64(len(raw)) + 0xfff) &^ 0xfff
	le.PutUint64(raw[hdr+24:], off)
	le.PutUint64(raw[hdr+32:], size)
	path = filepath.Join(t.TempDir(), "sparse")
	if err := os.WriteFile(path, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(path, int64(off+size)); err != nil {
		t.Fatal(err)
	}
	return path, off
}

// readPartialAllocs opens path and returns what ReadPartial returns, and
// the bytes it allocated.
func readPartialAllocs(t *testing.T, path string) (syms []Symbol, warnings []error, allocated uint64, err error) {
	t.Helper()
	f, err := elfnotes.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	syms, warnings, err = ReadPartial(f)
	runtime.ReadMemStats(&after)
	return syms, warnings, after.TotalAlloc - before.TotalAlloc, err
}

// TestSparseTables gives a gcc-built program a .symtab, or a .strtab,
// that claims gigabytes in a hole at the end of the file (issue 10, item
// 3, through list --symbols): ReadPartial still lists the .dynsym
// symbols, reads a bounded prefix, allocates a few megabytes, and warns
// when it stops at a limit.
func TestSparseTables(t *testing.T) {
	good, err := os.ReadFile(buildDataProgram(t))
	if err != nil {
		t.Fatal(err)
	}
	orig, err := Read(symtabtest.NewFile(t, good))
	if err != nil {
		t.Fatal(err)
	}
	wantDyn := map[symtabtest.RefKey]bool{}
	for _, s := range orig {
		if s.Dynamic {
			wantDyn[symtabtest.RefKey{Name: s.Name, Value: s.Value}] = true
		}
	}
	for _, tc := range []struct {
		section   string
		size      uint64
		wantLimit bool // a warning that the table was cut short
	}{
		{".symtab", 3 << 29, true},
		{".symtab", 16 << 30, true},
		{".strtab", 16 << 30, false}, // names in the hole are empty: no symbols, no warning
	} {
		t.Run(fmt.Sprintf("%s/%dMiB", tc.section, tc.size>>20), func(t *testing.T) {
			path, _ := sparseCopy(t, good, tc.section, tc.size/sym64Size*sym64Size)
			syms, warnings, allocated, err := readPartialAllocs(t, path)
			if err != nil {
				t.Fatal(err)
			}
			if allocated > 16<<20 {
				t.Errorf("allocated %d MiB", allocated>>20)
			}
			have := map[symtabtest.RefKey]bool{}
			for _, s := range syms {
				if s.Dynamic {
					have[symtabtest.RefKey{Name: s.Name, Value: s.Value}] = true
				}
			}
			if !reflect.DeepEqual(have, wantDyn) {
				t.Errorf("have dynamic symbols %v, want %v", have, wantDyn)
			}
			var fe *elfnotes.FormatError
			if tc.wantLimit && (len(warnings) != 1 || !errors.As(warnings[0], &fe)) || !tc.wantLimit && len(warnings) != 0 {
				t.Errorf("have warnings %v, want a limit warning: %v", warnings, tc.wantLimit)
			}
		})
	}
}

// TestSparseGopclntab gives a stripped Go binary a .gopclntab that claims
// 16 GiB in a hole: ReadPartial refuses the table with one warning at the
// section, lists what else there is, and allocates little.
func TestSparseGopclntab(t *testing.T) {
	good, err := os.ReadFile(testutil.BuildGoSource(t, goProgram, "-ldflags=-s -w"))
	if err != nil {
		t.Fatal(err)
	}
	path, off := sparseCopy(t, good, ".gopclntab", 16<<30)
	syms, warnings, allocated, err := readPartialAllocs(t, path)
	if err != nil || syms == nil {
		t.Fatalf("have %d symbols, %v", len(syms), err)
	}
	var fe *elfnotes.FormatError
	if len(warnings) != 1 || !errors.As(warnings[0], &fe) || fe.Off != int64(off) {
		t.Errorf("have warnings %v, want one *FormatError at %#x", warnings, off)
	}
	if allocated > 16<<20 {
		t.Errorf("allocated %d MiB", allocated>>20)
	}
}
