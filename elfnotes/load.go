package elfnotes

import (
	"debug/elf"
	"fmt"
)

// AddrToOffset translates a virtual address, as found in symbols and SDT
// notes, to an offset in the file: the first PT_LOAD segment with
// Vaddr <= vaddr < Vaddr+Filesz gives Off + (vaddr - Vaddr). The returned
// error wraps [ErrNoSegment] when no segment holds file data for vaddr,
// which is always the case for addresses outside the first segment of a
// separate debug file. A segment whose file bytes would lie past the end of
// the file gives a *[FormatError] instead of an offset that cannot be read.
func (f *File) AddrToOffset(vaddr uint64) (uint64, error) {
	return f.AddrRangeToOffset(vaddr, 1)
}

// AddrRangeToOffset is [File.AddrToOffset] for the n bytes at vaddr: the
// first PT_LOAD segment whose file data holds all of them gives the file
// offset of the first. An n of 0 is taken as 1. It wraps [ErrNoSegment]
// when no segment holds them all, and gives a *[FormatError] when their
// offsets reach past the end of the file or of a uint64.
func (f *File) AddrRangeToOffset(vaddr, n uint64) (uint64, error) {
	for _, p := range f.Progs {
		if p.Type == elf.PT_LOAD {
			s := loadSpan(p)
			if off, held, sound := s.offset(vaddr, n, f.size); held && sound {
				return off, nil
			} else if held {
				return 0, formatErr(clampOff(s.off), "PT_LOAD segment extends past end of file", addrString(vaddr, n))
			}
		}
	}
	return 0, fmt.Errorf("%s: %w", addrString(vaddr, n), ErrNoSegment)
}

// OffsetToAddr is the inverse of [File.AddrToOffset]: the first PT_LOAD
// segment with Off <= off < Off+Filesz gives Vaddr + (off - Off), the
// address the file's symbols use for the byte at off. The returned error
// wraps [ErrNoSegment] when no segment holds off, for example in the page
// rounding of a mapping before a segment's first byte; an address past the
// end of a uint64 gives a *[FormatError]. Whether off is inside the file is
// not checked: a process may map a segment the file no longer holds.
func (f *File) OffsetToAddr(off uint64) (uint64, error) {
	for _, p := range f.Progs {
		if p.Type == elf.PT_LOAD {
			s := loadSpan(p)
			if addr, held, sound := s.addr(off); held && sound {
				return addr, nil
			} else if held {
				return 0, formatErr(clampOff(s.off), "PT_LOAD segment extends past end of address space", fmt.Sprintf("offset %#x", off))
			}
		}
	}
	return 0, fmt.Errorf("offset %#x: %w", off, ErrNoSegment)
}

// A LoadMap is the PT_LOAD segments with file data of a [File], copied out
// of it for repeated translations between file offsets and addresses (a
// symbolizer's frames, an unwinder's PCs) after the File is closed. It
// gives the answers of [File.AddrToOffset] and [File.OffsetToAddr], with
// ok false where they give an error, and does not allocate. A LoadMap is
// immutable and safe for concurrent use; the zero LoadMap maps nothing.
type LoadMap struct {
	spans []span
	size  int64 // of the file, or -1 when unknown
}

// LoadMap returns the PT_LOAD segments of f with file data, in header order.
func (f *File) LoadMap() LoadMap {
	m := LoadMap{size: f.size}
	for _, p := range f.Progs {
		if p.Type == elf.PT_LOAD && p.Filesz > 0 {
			m.spans = append(m.spans, loadSpan(p))
		}
	}
	return m
}

// AddrToOffset is [File.AddrToOffset] with ok false for its errors.
func (m LoadMap) AddrToOffset(vaddr uint64) (off uint64, ok bool) {
	for _, s := range m.spans {
		if off, held, sound := s.offset(vaddr, 1, m.size); held {
			return off, sound
		}
	}
	return 0, false
}

// OffsetToAddr is [File.OffsetToAddr] with ok false for its errors.
func (m LoadMap) OffsetToAddr(off uint64) (addr uint64, ok bool) {
	for _, s := range m.spans {
		if addr, held, sound := s.addr(off); held {
			return addr, sound
		}
	}
	return 0, false
}

// span is the file data of one PT_LOAD segment: filesz bytes at file
// offset off, loaded at virtual address vaddr. The translations of the
// package are its two methods.
type span struct{ off, vaddr, filesz uint64 }

func loadSpan(p *Prog) span { return span{p.Off, p.Vaddr, p.Filesz} }

// offset returns the file offset of the n (0 taken as 1) bytes at vaddr
// and whether s holds them all. When it does, sound is false, and off 0,
// if their offsets overflow a uint64 or, with size >= 0, reach past size.
func (s span) offset(vaddr, n uint64, size int64) (off uint64, held, sound bool) {
	n = max(n, 1)
	d := vaddr - s.vaddr
	// Once d < s.filesz, s.filesz-d is at least 1: nothing here wraps,
	// whatever the header says.
	if vaddr < s.vaddr || d >= s.filesz || n > s.filesz-d {
		return 0, false, false
	}
	off = s.off + d
	if off < s.off || off+(n-1) < off || size >= 0 && (n > uint64(size) || off > uint64(size)-n) {
		return 0, true, false
	}
	return off, true, true
}

// addr returns the virtual address of the byte at file offset off and
// whether s holds it. When it does, sound is false, and addr 0, if the
// address overflows a uint64.
func (s span) addr(off uint64) (addr uint64, held, sound bool) {
	d := off - s.off
	if off < s.off || d >= s.filesz {
		return 0, false, false
	}
	addr = s.vaddr + d
	if addr < s.vaddr {
		return 0, true, false
	}
	return addr, true, true
}

func addrString(vaddr, n uint64) string {
	if n <= 1 {
		return fmt.Sprintf("address %#x", vaddr)
	}
	return fmt.Sprintf("%d bytes at address %#x", n, vaddr)
}
