package dynsdt

import (
	"fmt"
	"os"
	"unsafe"

	"golang.org/x/sys/unix"
)

// image is an Object mapped into this process the way the dynamic loader
// would map it: one reservation of the whole span, each PT_LOAD mapped
// from the file over it. See docs/probes.md.
type image struct {
	base unsafe.Pointer
	span uintptr
	// text are the executable page ranges with the bytes the file has
	// there: Close swaps in anonymous copies of them.
	text []textPages
}

// textPages is one executable range of an image, relative to its base.
type textPages struct {
	off, size uintptr
	orig      []byte
}

// pageRange is a segment rounded out to host pages, relative to the base.
type pageRange struct {
	start, fileEnd, memEnd uintptr // start and memEnd page-aligned
}

func alignDownPtr(v, a uintptr) uintptr { return v &^ (a - 1) }
func alignUpPtr(v, a uintptr) uintptr   { return (v + a - 1) &^ (a - 1) }

// layout checks that obj can be mapped with host pages of size pg and
// returns each segment's page range and the total span. Build's objects
// always pass; the checks turn a bug there into an error, not a fault.
func layout(obj *Object, pg uintptr) ([]pageRange, uintptr, error) {
	size := uint64(len(obj.Bytes))
	ranges := make([]pageRange, len(obj.Segments))
	var span uintptr
	for i, s := range obj.Segments {
		switch {
		case s.Filesz > s.Memsz:
			return nil, 0, fmt.Errorf("segment %d: file size %#x exceeds memory size %#x", i, s.Filesz, s.Memsz)
		case s.Off > size || s.Filesz > size-s.Off:
			return nil, 0, fmt.Errorf("segment %d: file range %#x+%#x outside the %#x-byte file", i, s.Off, s.Filesz, size)
		case s.Memsz > 1<<40 || s.Vaddr > 1<<40:
			return nil, 0, fmt.Errorf("segment %d: address range %#x+%#x too large", i, s.Vaddr, s.Memsz)
		case s.Off%uint64(pg) != s.Vaddr%uint64(pg):
			return nil, 0, fmt.Errorf("segment %d: offset %#x and address %#x differ modulo the page size %#x", i, s.Off, s.Vaddr, pg)
		}
		r := pageRange{
			start:   alignDownPtr(uintptr(s.Vaddr), pg),
			fileEnd: uintptr(s.Vaddr + s.Filesz),
			memEnd:  alignUpPtr(uintptr(s.Vaddr+s.Memsz), pg),
		}
		if r.start < span {
			return nil, 0, fmt.Errorf("segment %d at %#x overlaps the page of the one before", i, s.Vaddr)
		}
		ranges[i] = r
		span = r.memEnd
	}
	if span == 0 {
		return nil, 0, fmt.Errorf("no segment to map")
	}
	if len(obj.Stubs) != len(obj.Semaphores) {
		return nil, 0, fmt.Errorf("%d stubs but %d semaphores", len(obj.Stubs), len(obj.Semaphores))
	}
	for i := range obj.Stubs {
		// Enabled loads the 4-byte word at the stub, libstapsdt.h's check
		// the 8 bytes from the copy of that word before it.
		if obj.Stubs[i]%8 != 4 || !inSegment(obj, obj.Stubs[i]-4, 8, unix.PROT_EXEC, true) {
			return nil, 0, fmt.Errorf("probe %d: stub at %#x is not 4 bytes into 8 aligned bytes of code", i, obj.Stubs[i])
		}
		if obj.Semaphores[i]%2 != 0 || !inSegment(obj, obj.Semaphores[i], 2, unix.PROT_WRITE, false) {
			return nil, 0, fmt.Errorf("probe %d: semaphore at %#x is not 2 aligned bytes of writable data", i, obj.Semaphores[i])
		}
	}
	return ranges, span, nil
}

// inSegment reports whether [addr, addr+n) lies in one segment with prot,
// within its file part if inFile.
func inSegment(obj *Object, addr, n uint64, prot int, inFile bool) bool {
	for _, s := range obj.Segments {
		end := s.Vaddr + s.Memsz
		if inFile {
			end = s.Vaddr + s.Filesz
		}
		if s.Prot&prot == prot && addr >= s.Vaddr && addr <= end && n <= end-addr {
			return true
		}
	}
	return false
}

// mapObject maps obj, whose bytes the file open as fd holds, into this
// process. On error nothing stays mapped.
func mapObject(fd int, obj *Object) (*image, error) {
	pg := uintptr(os.Getpagesize())
	ranges, span, err := layout(obj, pg)
	if err != nil {
		return nil, err
	}
	// One reservation first, so that the segments keep their distances
	// and nothing else is mapped between them; pages of no segment stay
	// PROT_NONE.
	base, err := unix.MmapPtr(-1, 0, nil, span, unix.PROT_NONE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_NORESERVE)
	if err != nil {
		return nil, fmt.Errorf("reserve %#x bytes: %w", span, err)
	}
	m := &image{base: base, span: span}
	for i, s := range obj.Segments {
		if err := m.mapSegment(fd, s, ranges[i], pg); err != nil {
			unix.MunmapPtr(base, span)
			return nil, fmt.Errorf("map segment %d: %w", i, err)
		}
		if s.Prot&unix.PROT_EXEC != 0 {
			r := ranges[i]
			orig := make([]byte, r.memEnd-r.start)
			fileStart := s.Off - (s.Vaddr - uint64(r.start))
			copy(orig, obj.Bytes[fileStart:s.Off+s.Filesz])
			m.text = append(m.text, textPages{off: r.start, size: r.memEnd - r.start, orig: orig})
		}
	}
	return m, nil
}

// mapSegment maps one segment over the reservation: its file pages
// MAP_PRIVATE from fd at the segment's offset, then, if it has more memory
// than file, zeroes the rest of the last file page and maps anonymous
// pages for the rest, as ld.so does for .bss.
func (m *image) mapSegment(fd int, s Segment, r pageRange, pg uintptr) error {
	fileOff := int64(s.Off) - int64(uintptr(s.Vaddr)-r.start)
	filePagesEnd := alignUpPtr(r.fileEnd, pg)
	bssTail := s.Memsz > s.Filesz && r.fileEnd != filePagesEnd
	anonStart := r.start
	if s.Filesz > 0 {
		prot := s.Prot
		if bssTail {
			prot |= unix.PROT_WRITE
		}
		_, err := unix.MmapPtr(fd, fileOff, unsafe.Add(m.base, r.start), filePagesEnd-r.start, prot, unix.MAP_PRIVATE|unix.MAP_FIXED)
		if err != nil {
			return err
		}
		if bssTail {
			clear(unsafe.Slice((*byte)(unsafe.Add(m.base, r.fileEnd)), filePagesEnd-r.fileEnd))
			if prot != s.Prot {
				if err := unix.Mprotect(unsafe.Slice((*byte)(unsafe.Add(m.base, r.start)), filePagesEnd-r.start), s.Prot); err != nil {
					return err
				}
			}
		}
		anonStart = filePagesEnd
	}
	if r.memEnd > anonStart {
		_, err := unix.MmapPtr(-1, 0, unsafe.Add(m.base, anonStart), r.memEnd-anonStart, s.Prot, unix.MAP_PRIVATE|unix.MAP_FIXED|unix.MAP_ANONYMOUS)
		if err != nil {
			return err
		}
	}
	return nil
}

// at returns the address of the object's address addr in this process.
func (m *image) at(addr uint64) unsafe.Pointer { return unsafe.Add(m.base, uintptr(addr)) }

// unmap removes the image. Only for Load's failures: once a Probe exists a
// Fire may be running in the stubs.
func (m *image) unmap() error {
	return unix.MunmapPtr(m.base, m.span)
}

// retire replaces the image, in place, by anonymous memory that tracers do
// not see: each executable range by a read+execute copy of the original
// stubs, everything else by inaccessible pages. A Fire racing with Close
// still calls a stub that returns, and Enabled still reads an unchanged
// probe site (false). The address range stays reserved for the life of the
// process; see docs/probes.md.
//
// Each copy is prepared elsewhere and moved over the stubs with
// mremap(MREMAP_FIXED), which replaces the old pages atomically: at no
// moment is the stub address unmapped or not executable.
func (m *image) retire() error {
	for _, t := range m.text {
		tmp, err := unix.MmapPtr(-1, 0, nil, t.size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
		if err != nil {
			return fmt.Errorf("copy stubs: %w", err)
		}
		copy(unsafe.Slice((*byte)(tmp), t.size), t.orig)
		if err := unix.Mprotect(unsafe.Slice((*byte)(tmp), t.size), unix.PROT_READ|unix.PROT_EXEC); err != nil {
			unix.MunmapPtr(tmp, t.size)
			return fmt.Errorf("copy stubs: %w", err)
		}
		if _, err := unix.MremapPtr(tmp, t.size, unsafe.Add(m.base, t.off), t.size, unix.MREMAP_MAYMOVE|unix.MREMAP_FIXED); err != nil {
			unix.MunmapPtr(tmp, t.size)
			return fmt.Errorf("replace stubs: %w", err)
		}
	}
	// The gaps between the executable ranges, and after the last.
	var off uintptr
	for i := 0; i <= len(m.text); i++ {
		end, next := m.span, m.span
		if i < len(m.text) {
			end, next = m.text[i].off, m.text[i].off+m.text[i].size
		}
		if end > off {
			_, err := unix.MmapPtr(-1, 0, unsafe.Add(m.base, off), end-off, unix.PROT_NONE,
				unix.MAP_PRIVATE|unix.MAP_FIXED|unix.MAP_ANONYMOUS|unix.MAP_NORESERVE)
			if err != nil {
				return fmt.Errorf("unmap object: %w", err)
			}
		}
		off = next
	}
	return nil
}
