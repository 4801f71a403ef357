package elfnotes

import (
	"debug/elf"
	"errors"
	"math"
	"testing"
)

// fileOfProgs returns a File with the program headers progs, as NewFile
// would have read them from a file of size bytes (-1: size unknown).
func fileOfProgs(size int64, progs ...Prog) *File {
	f := &File{size: size}
	for i := range progs {
		p := progs[i]
		p.f = f
		f.Progs = append(f.Progs, &p)
	}
	return f
}

func loadProg(off, vaddr, filesz, memsz uint64) Prog {
	return Prog{Type: elf.PT_LOAD, Off: off, Vaddr: vaddr, Filesz: filesz, Memsz: memsz, Align: 0x1000}
}

// Program headers the table tests share.
var (
	// An executable: headers and text, data with a .bss tail, a PT_NOTE
	// outside every PT_LOAD's file data, and a segment without file data
	// (as in a separate debug file).
	progsExec = []Prog{
		loadProg(0, 0x400000, 0x1000, 0x1000),
		loadProg(0x1000, 0x401000, 0x800, 0x2000),
		{Type: elf.PT_NOTE, Off: 0x1900, Vaddr: 0x1900, Filesz: 0x100, Memsz: 0x100},
		loadProg(0x3000, 0x600000, 0, 0x1000),
	}
	// Out of address order, with file ranges that overlap (the first
	// two) and address ranges that overlap (the first and third): the
	// first segment in header order that holds the byte wins.
	progsOverlap = []Prog{
		loadProg(0x2000, 0x2000, 0x1000, 0x1000),
		loadProg(0, 0x10000, 0x3000, 0x3000),
		loadProg(0x500, 0x2000, 0x2000, 0x2000),
	}
	// Offsets, then addresses, that run off the end of a uint64.
	progsHighOff   = []Prog{loadProg(math.MaxUint64-0xfff, 0x1000, 0x2000, 0x2000)}
	progsHighVaddr = []Prog{loadProg(0x1000, math.MaxUint64-0xfff, 0x2000, 0x2000)}
	progsWhole     = []Prog{loadProg(0, 0, math.MaxUint64, math.MaxUint64)}
)

// What a translation gives.
type outcome int

const (
	found       outcome = iota
	noSegment           // an error wrapping ErrNoSegment
	formatError         // a *FormatError
)

func checkOutcome(t *testing.T, what string, have uint64, err error, want uint64, wantOutcome outcome) {
	t.Helper()
	var fe *FormatError
	switch {
	case wantOutcome == found && (err != nil || have != want):
		t.Errorf("%s: have %#x, %v, want %#x", what, have, err, want)
	case wantOutcome == noSegment && (!errors.Is(err, ErrNoSegment) || have != 0):
		t.Errorf("%s: have %#x, %v, want ErrNoSegment", what, have, err)
	case wantOutcome == formatError && (!errors.As(err, &fe) || have != 0):
		t.Errorf("%s: have %#x, %v, want a *FormatError", what, have, err)
	}
}

func TestAddrToOffset(t *testing.T) {
	tests := []struct {
		name        string
		progs       []Prog
		size        int64
		vaddr, n    uint64
		want        uint64
		wantOutcome outcome
	}{
		{"first byte", progsExec, 0x2000, 0x400000, 1, 0, found},
		{"last byte of text", progsExec, 0x2000, 0x400fff, 1, 0xfff, found},
		{"second segment", progsExec, 0x2000, 0x401000, 1, 0x1000, found},
		{"last file byte of data", progsExec, 0x2000, 0x4017ff, 1, 0x17ff, found},
		{"bss tail", progsExec, 0x2000, 0x401800, 1, 0, noSegment},
		{"below every segment", progsExec, 0x2000, 0x3fffff, 1, 0, noSegment},
		{"PT_NOTE is not loaded", progsExec, 0x2000, 0x1900, 1, 0, noSegment},
		{"segment with Filesz 0", progsExec, 0x2000, 0x600000, 1, 0, noSegment},
		{"uint64 max", progsExec, 0x2000, math.MaxUint64, 1, 0, noSegment},
		{"unknown size", progsExec, -1, 0x401000, 1, 0x1000, found},
		{"past end of file", progsExec, 0x1400, 0x401400, 1, 0, formatError},
		{"last byte of file", progsExec, 0x1400, 0x4013ff, 1, 0x13ff, found},
		{"empty file", progsExec, 0, 0x400000, 1, 0, formatError},

		{"n 0 is 1", progsExec, 0x2000, 0x4017ff, 0, 0x17ff, found},
		{"range to segment end", progsExec, 0x2000, 0x401700, 0x100, 0x1700, found},
		{"range into bss", progsExec, 0x2000, 0x401700, 0x101, 0, noSegment},
		{"range across two segments", progsExec, 0x2000, 0x400ff0, 0x20, 0, noSegment},
		{"range of uint64 max bytes", progsExec, 0x2000, 0x400000, math.MaxUint64, 0, noSegment},
		{"range past end of file", progsExec, 0x1400, 0x401300, 0x101, 0, formatError},
		{"range to end of file", progsExec, 0x1400, 0x401300, 0x100, 0x1300, found},
		{"range of segment past end of file", progsExec, 0x1400, 0x401000, 0x10, 0x1000, found},

		{"overlap: header order", progsOverlap, 0x3000, 0x2050, 1, 0x2050, found},
		{"overlap: later segment", progsOverlap, 0x3000, 0x10100, 1, 0x100, found},
		{"overlap: past the first", progsOverlap, 0x3000, 0x3800, 1, 0x1d00, found},
		{"overlap: range only in the later", progsOverlap, 0x3000, 0x2f00, 0x200, 0x1400, found},

		{"high offset", progsHighOff, -1, 0x1000, 1, math.MaxUint64 - 0xfff, found},
		{"high offset: last byte", progsHighOff, -1, 0x1fff, 1, math.MaxUint64, found},
		{"high offset: wraps", progsHighOff, -1, 0x2000, 1, 0, formatError},
		{"high offset: range wraps", progsHighOff, -1, 0x1f00, 0x101, 0, formatError},
		{"high offset: sized", progsHighOff, 0x10000, 0x1000, 1, 0, formatError},
		{"high address: last byte", progsHighVaddr, -1, math.MaxUint64, 1, 0x1fff, found},
		{"whole address space: max", progsWhole, -1, math.MaxUint64, 1, 0, noSegment},
		{"whole address space: max-1", progsWhole, -1, math.MaxUint64 - 1, 1, math.MaxUint64 - 1, found},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := fileOfProgs(tc.size, tc.progs...)
			off, err := f.AddrRangeToOffset(tc.vaddr, tc.n)
			checkOutcome(t, "AddrRangeToOffset", off, err, tc.want, tc.wantOutcome)
			if tc.n > 1 {
				return
			}
			off, err = f.AddrToOffset(tc.vaddr)
			checkOutcome(t, "AddrToOffset", off, err, tc.want, tc.wantOutcome)
			off, ok := f.LoadMap().AddrToOffset(tc.vaddr)
			if ok != (tc.wantOutcome == found) || off != tc.want {
				t.Errorf("LoadMap.AddrToOffset: have %#x, %v, want %#x, %v", off, ok, tc.want, tc.wantOutcome == found)
			}
		})
	}
}

func TestOffsetToAddr(t *testing.T) {
	tests := []struct {
		name        string
		progs       []Prog
		off         uint64
		want        uint64
		wantOutcome outcome
	}{
		{"first byte", progsExec, 0, 0x400000, found},
		{"last byte of text", progsExec, 0xfff, 0x400fff, found},
		{"second segment", progsExec, 0x1000, 0x401000, found},
		{"last file byte of data", progsExec, 0x17ff, 0x4017ff, found},
		{"past Filesz", progsExec, 0x1800, 0, noSegment},
		{"PT_NOTE is not loaded", progsExec, 0x1950, 0, noSegment},
		{"segment with Filesz 0", progsExec, 0x3000, 0, noSegment},
		{"uint64 max", progsExec, math.MaxUint64, 0, noSegment},
		{"no segments", nil, 0, 0, noSegment},

		{"overlap: header order", progsOverlap, 0x2100, 0x2100, found},
		{"overlap: later segment", progsOverlap, 0x100, 0x10100, found},
		{"overlap: past the first", progsOverlap, 0x2000 + 0x1000, 0, noSegment},
		{"overlap: second before third", progsOverlap, 0x500, 0x10500, found},

		{"high offset", progsHighOff, math.MaxUint64 - 0xfff, 0x1000, found},
		{"high offset: uint64 max", progsHighOff, math.MaxUint64, 0x1fff, found},
		{"high address", progsHighVaddr, 0x1fff, math.MaxUint64, found},
		{"high address: wraps", progsHighVaddr, 0x2000, 0, formatError},
		{"whole file: max-1", progsWhole, math.MaxUint64 - 1, math.MaxUint64 - 1, found},
		{"whole file: max", progsWhole, math.MaxUint64, 0, noSegment},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// The file's size does not matter: a process may map a
			// segment past the end of its file.
			f := fileOfProgs(0x10, tc.progs...)
			addr, err := f.OffsetToAddr(tc.off)
			checkOutcome(t, "OffsetToAddr", addr, err, tc.want, tc.wantOutcome)
			addr, ok := f.LoadMap().OffsetToAddr(tc.off)
			if ok != (tc.wantOutcome == found) || addr != tc.want {
				t.Errorf("LoadMap.OffsetToAddr: have %#x, %v, want %#x, %v", addr, ok, tc.want, tc.wantOutcome == found)
			}
		})
	}
}

func TestLoadMapZero(t *testing.T) {
	var m LoadMap
	if off, ok := m.AddrToOffset(0); ok || off != 0 {
		t.Errorf("AddrToOffset: have %#x, %v, want 0, false", off, ok)
	}
	if addr, ok := m.OffsetToAddr(0); ok || addr != 0 {
		t.Errorf("OffsetToAddr: have %#x, %v, want 0, false", addr, ok)
	}
}

func TestLoadMapAllocs(t *testing.T) {
	m := fileOfProgs(0x2000, progsExec...).LoadMap()
	allocs := testing.AllocsPerRun(100, func() {
		m.OffsetToAddr(0x1000)
		m.OffsetToAddr(0x1800)
		m.AddrToOffset(0x401000)
		m.AddrToOffset(0x401800)
	})
	if allocs != 0 {
		t.Errorf("have %v allocations per run, want 0", allocs)
	}
}
