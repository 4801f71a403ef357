package elfnotes

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// addTestdataSeeds adds every file of testdata/ as a seed; an empty glob
// fails, so that the seeds cannot silently vanish.
func addTestdataSeeds(f *testing.F) {
	paths, err := filepath.Glob(filepath.Join("testdata", "*.elf"))
	if err != nil || len(paths) == 0 {
		f.Fatalf("no testdata/*.elf seeds: %v", err)
	}
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
}

// fileResult is everything FuzzNewFile compares between a sized and an
// unsized reader.
type fileResult struct {
	ok       bool
	warnings [3]bool // NewFile, ReadNotes, ReadSDTProbes warned
	notes    []Note
	probes   []SDTProbe
	offsets  []uint64
	addrs    []uint64 // OffsetToAddr of segment edges, which ignores the size
}

// checkWarnings checks that every warning is a *FormatError.
func checkWarnings(t *testing.T, what string, warnings []error) {
	t.Helper()
	for _, w := range warnings {
		var fe *FormatError
		if !errors.As(w, &fe) {
			t.Fatalf("%s: warning %v is not a *FormatError", what, w)
		}
	}
}

// readAll reads everything from r. Properties: no panic; an error (only
// from NewFile, as bytes.Reader has no I/O errors) means a zero result;
// partial results come with warnings, each a *FormatError; the strict
// variants fail exactly when the Read variants warn; notes and probes
// round-trip through AppendNote and AppendDesc.
func readAll(t *testing.T, r interface {
	ReadAt([]byte, int64) (int, error)
}, size int) fileResult {
	f, err := NewFile(r)
	if (err == nil) != (f != nil) {
		t.Fatalf("NewFile: file %v with error %v", f != nil, err)
	}
	if err != nil {
		var fe *FormatError
		if !errors.As(err, &fe) {
			t.Fatalf("NewFile: error %v is not a *FormatError", err)
		}
		return fileResult{}
	}
	res := fileResult{ok: true}
	checkWarnings(t, "NewFile", f.Warnings())
	res.warnings[0] = len(f.Warnings()) > 0
	notes, warnings, err := f.ReadNotes()
	if err != nil || notes == nil {
		t.Fatalf("ReadNotes: %d notes with error %v", len(notes), err)
	}
	checkWarnings(t, "ReadNotes", warnings)
	if strictNotes, err := f.Notes(); (err != nil) != (len(warnings) > 0) || (err != nil) != (strictNotes == nil) {
		t.Fatalf("Notes: %d notes, error %v, with %d warnings", len(strictNotes), err, len(warnings))
	}
	for _, n := range notes {
		// Re-encoding and reading back a note gives it unchanged.
		rec := AppendNote(nil, f.ByteOrder, n.Owner, n.Type, n.Desc)
		back, err := readRecords(rec, f.ByteOrder)
		if err != nil || len(back) != 1 || back[0].Owner != n.Owner || back[0].Type != n.Type || !bytes.Equal(back[0].Desc, n.Desc) {
			t.Fatalf("note %+v does not round-trip: %v", n, err)
		}
	}
	res.notes, res.warnings[1] = notes, len(warnings) > 0
	probes, warnings, err := f.ReadSDTProbes()
	if err != nil || probes == nil {
		t.Fatalf("ReadSDTProbes: %d probes with error %v", len(probes), err)
	}
	checkWarnings(t, "ReadSDTProbes", warnings)
	if strictProbes, err := f.SDTProbes(); (err != nil) != (len(warnings) > 0) || (err != nil) != (strictProbes == nil) {
		t.Fatalf("SDTProbes: %d probes, error %v, with %d warnings", len(strictProbes), err, len(warnings))
	}
	res.probes, res.warnings[2] = probes, len(warnings) > 0
	for _, p := range probes {
		back, err := ParseStapsdt(p.AppendDesc(nil, f.Class, f.ByteOrder), f.Class, f.ByteOrder)
		if err != nil || back != p.Stapsdt {
			t.Fatalf("probe %+v does not round-trip: %+v, %v", p.Stapsdt, back, err)
		}
		for _, addr := range []uint64{p.Addr, p.SemaphoreAddr} {
			off, err := f.AddrToOffset(addr)
			if err == nil && size >= 0 && off >= uint64(size) {
				t.Fatalf("AddrToOffset(%#x) = %#x, past end of %d-byte file", addr, off, size)
			}
			res.offsets = append(res.offsets, off)
		}
	}
	res.addrs = checkTranslations(t, f, size)
	return res
}

// checkTranslations translates the edges of f's first segments both ways.
// Properties: no panic; an error wraps ErrNoSegment or is a *FormatError,
// and comes with a zero result; an offset's bytes are inside the file of
// size bytes (when size >= 0); a LoadMap gives the File's answers, with
// ok false for its errors. It returns the addresses OffsetToAddr gave.
func checkTranslations(t *testing.T, f *File, size int) []uint64 {
	check := func(what string, v, res uint64, err error) {
		var fe *FormatError
		if err != nil && (res != 0 || !errors.Is(err, ErrNoSegment) && !errors.As(err, &fe)) {
			t.Fatalf("%s(%#x): %#x with error %v", what, v, res, err)
		}
	}
	m := f.LoadMap()
	var addrs []uint64
	// A fuzzed file may have 65536 segments; the first ones suffice.
	for _, p := range f.Progs[:min(len(f.Progs), 16)] {
		for _, off := range []uint64{p.Off, p.Off + p.Filesz/2, p.Off + p.Filesz - 1, p.Off + p.Filesz} {
			addr, err := f.OffsetToAddr(off)
			check("OffsetToAddr", off, addr, err)
			if have, ok := m.OffsetToAddr(off); have != addr || ok != (err == nil) {
				t.Fatalf("LoadMap.OffsetToAddr(%#x) = %#x, %v; File's %#x, %v", off, have, ok, addr, err)
			}
			addrs = append(addrs, addr)
		}
		for _, vaddr := range []uint64{p.Vaddr, p.Vaddr + p.Filesz - 1, p.Vaddr + p.Memsz - 1, p.Vaddr + p.Memsz} {
			off, err := f.AddrToOffset(vaddr)
			check("AddrToOffset", vaddr, off, err)
			if err == nil && size >= 0 && off >= uint64(size) {
				t.Fatalf("AddrToOffset(%#x) = %#x, past end of %d-byte file", vaddr, off, size)
			}
			if have, ok := m.AddrToOffset(vaddr); have != off || ok != (err == nil) {
				t.Fatalf("LoadMap.AddrToOffset(%#x) = %#x, %v; File's %#x, %v", vaddr, have, ok, off, err)
			}
		}
		off, err := f.AddrRangeToOffset(p.Vaddr, p.Filesz)
		check("AddrRangeToOffset", p.Vaddr, off, err)
		if err == nil && size >= 0 && (off > uint64(size) || p.Filesz > uint64(size)-off) {
			t.Fatalf("AddrRangeToOffset(%#x, %#x) = %#x, past end of %d-byte file", p.Vaddr, p.Filesz, off, size)
		}
	}
	return addrs
}

func FuzzNewFile(f *testing.F) {
	addTestdataSeeds(f)
	for _, seed := range fuzzSeeds(f) {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		sized := readAll(t, bytes.NewReader(data), len(data))
		unsized := readAll(t, readerAtOnly{bytes.NewReader(data)}, -1)
		// Without the size, only AddrToOffset's end-of-file check is
		// missing; everything else must agree.
		sized.offsets, unsized.offsets = nil, nil
		if !reflect.DeepEqual(sized, unsized) {
			t.Fatalf("sized and unsized readers disagree:\n%#v\n%#v", sized, unsized)
		}
	})
}

func FuzzParseStapsdt(f *testing.F) {
	for _, p := range fixtureProbes {
		f.Add(p.AppendDesc(nil, elf.ELFCLASS64, binary.LittleEndian), true, false)
		f.Add(p.AppendDesc(nil, elf.ELFCLASS32, binary.BigEndian), false, true)
	}
	f.Fuzz(func(t *testing.T, desc []byte, is64, big bool) {
		class, order := elf.ELFCLASS32, binary.ByteOrder(binary.LittleEndian)
		if is64 {
			class = elf.ELFCLASS64
		}
		if big {
			order = binary.BigEndian
		}
		s, err := ParseStapsdt(desc, class, order)
		if err != nil {
			if s != (Stapsdt{}) {
				t.Fatalf("non-zero result %+v with error %v", s, err)
			}
			var fe *FormatError
			if !errors.As(err, &fe) || fe.Off < 0 || fe.Off > int64(len(desc)) {
				t.Fatalf("error %v is not a *FormatError inside desc", err)
			}
			return
		}
		enc := s.AppendDesc(nil, class, order)
		back, err := ParseStapsdt(enc, class, order)
		if err != nil || back != s {
			t.Fatalf("round trip: have %+v, %v, want %+v", back, err, s)
		}
		if !bytes.HasPrefix(desc, enc) {
			t.Fatalf("re-encoding % x is not a prefix of the input % x", enc, desc)
		}
	})
}
