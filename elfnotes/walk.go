package elfnotes

import (
	"bufio"
	"bytes"
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
)

// Limits on what reading notes examines, whatever sizes a file claims.
// Real files stay far below them: no owner is longer than a few bytes, an
// NT_STAPSDT descriptor holds three addresses and three short strings, and
// a library with hundreds of SDT probes has well under a thousand notes.
const (
	// MaxNoteName bounds n_namesz. A note with a longer name is skipped
	// with a warning.
	MaxNoteName = 4 << 10
	// MaxNoteDesc bounds n_descsz of a note whose descriptor is read. A
	// note with a longer descriptor is skipped with a warning; notes that
	// are not read ([File.ReadSDTProbes] reads only NT_STAPSDT ones) may
	// have any size that fits their section.
	MaxNoteDesc = 1 << 20
	// MaxNotes bounds the note records examined in one section or
	// segment, and the notes returned from one file.
	MaxNotes = 1 << 18
	// MaxNoteBytes bounds the bytes of note headers, names and descriptors
	// read from one file.
	MaxNoteBytes = 32 << 20
)

// noteArea is one note section or PT_NOTE segment.
type noteArea struct {
	off, size, align uint64
	section          string // "" for a segment
}

// what names the area in messages.
func (a *noteArea) what() string {
	if a.section == "" {
		return "PT_NOTE segment"
	}
	return "note section " + a.section
}

// noteAreas returns the note sections (or, without section headers, the
// PT_NOTE segments) of f.
func (f *File) noteAreas() []noteArea {
	var areas []noteArea
	if len(f.Sections) > 0 {
		for _, s := range f.Sections {
			if s.Type == elf.SHT_NOTE {
				areas = append(areas, noteArea{s.Offset, s.Size, s.Align, s.Name})
			}
		}
		return areas
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_NOTE {
			areas = append(areas, noteArea{p.Off, p.Filesz, p.Align, ""})
		}
	}
	return areas
}

// noteRecord is one note as the walker passes it on. name and desc are
// scratch space, valid only during the callback.
type noteRecord struct {
	area *noteArea
	name []byte // owner without the trailing NULs
	typ  uint32
	desc []byte
	off  uint64 // file offset of the header
	doff uint64 // file offset of desc
}

// noteWalker reads the notes of one file through a small buffer, so that
// what is read and kept is bounded by the limits above and by what the
// caller keeps, not by the sizes the file claims. It collects a warning
// for each damaged note or area it passes over.
type noteWalker struct {
	f        *File
	areas    []noteArea
	kept     int    // records passed to the callback
	read     uint64 // bytes read
	name     []byte // scratch for names
	desc     []byte // scratch for descriptors
	hdr      [noteHeaderSize]byte
	rec      noteRecord // passed to the callback; reused so that it stays off the heap per record
	warnings []error

	// The area being read: br reads sr from position cur.
	sr  *io.SectionReader
	br  *bufio.Reader
	cur uint64
}

// errStop ends the whole walk and errTruncated the walk of one area; the
// warning saying why is already added.
var (
	errStop      = errors.New("stop")
	errTruncated = errors.New("truncated")
)

// reset prepares w for a second walk over the same file, keeping its
// buffers.
func (w *noteWalker) reset() {
	w.kept, w.read, w.warnings = 0, 0, nil
}

func (w *noteWalker) warn(off uint64, msg string, val any) {
	w.warnings = append(w.warnings, formatErr(clampOff(off), msg, val))
}

func (w *noteWalker) limit(off uint64, msg string) {
	w.warnings = append(w.warnings, &FormatError{Off: clampOff(off), Msg: msg, Err: ErrLimit})
}

// walk calls fn for every record of every note area. The descriptor is read
// only for records that want accepts; the others are skipped unread. It
// returns only I/O errors.
func (w *noteWalker) walk(want func(owner []byte, typ uint32) bool, fn func(*noteRecord)) error {
	if w.areas == nil {
		w.areas = w.f.noteAreas()
	}
	for i := range w.areas {
		err := w.walkArea(&w.areas[i], want, fn)
		if err == errStop {
			return nil
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func (w *noteWalker) walkArea(a *noteArea, want func([]byte, uint32) bool, fn func(*noteRecord)) error {
	size := a.size
	if err := w.f.checkRange(a.off, size, a.what()); err != nil {
		// Read the records that are in the file, as a reader of unknown
		// size does before it meets the end.
		w.warnings = append(w.warnings, err)
		end := uint64(math.MaxInt64)
		if w.f.size >= 0 {
			end = uint64(w.f.size)
		}
		if a.off >= end {
			return nil
		}
		size = min(size, end-a.off)
	}
	if size == 0 {
		return nil
	}
	w.sr = io.NewSectionReader(w.f.r, int64(a.off), int64(size))
	if w.br == nil {
		// Real note areas are small: a buffer as large as the largest
		// one up to a page, read in one call.
		n := uint64(0)
		for _, a := range w.areas {
			n = max(n, a.size)
		}
		w.br = bufio.NewReaderSize(w.sr, int(min(n, 4096)))
	} else {
		w.br.Reset(w.sr)
	}
	w.cur = 0
	err := w.records(a, size, want, fn)
	if err == errTruncated {
		return nil
	}
	return err
}

// records walks the records of area a, of which size bytes are in the file.
func (w *noteWalker) records(a *noteArea, size uint64, want func([]byte, uint32) bool, fn func(*noteRecord)) error {
	al := noteAlign(a.align)
	bo := w.f.ByteOrder
	hdr := w.hdr[:]
	for pos, n := uint64(0), 0; pos < size; n++ {
		rem := size - pos
		at := a.off + pos
		if n >= MaxNotes {
			w.limit(at, fmt.Sprintf("more than %d notes in %s", MaxNotes, a.what()))
			return nil
		}
		if rem < noteHeaderSize {
			w.warn(at, "truncated note header", fmt.Sprintf("%d bytes left in %s", rem, a.what()))
			return nil
		}
		if err := w.readAt(hdr, pos, a); err != nil {
			return err
		}
		namesz := uint64(bo.Uint32(hdr[0:]))
		descsz := uint64(bo.Uint32(hdr[4:]))
		r := &w.rec
		*r = noteRecord{area: a, typ: bo.Uint32(hdr[8:]), off: at}
		// Damage to the sizes loses the position of the next record:
		// the rest of the area is skipped.
		if namesz > rem-noteHeaderSize {
			w.warn(at, "note name extends past end of "+a.what(), namesz)
			return nil
		}
		descOff := alignUp(noteHeaderSize+namesz, al)
		if descsz > 0 && (descOff > rem || descsz > rem-descOff) {
			w.warn(at, "note descriptor extends past end of "+a.what(), descsz)
			return nil
		}
		r.doff = at + descOff
		// The last record may omit its trailing padding.
		next := pos + min(alignUp(descOff+descsz, al), rem)
		if namesz > MaxNoteName {
			w.warn(at, "note name longer than the limit", namesz)
			pos = next
			continue
		}
		w.name = slices.Grow(w.name[:0], int(namesz))[:namesz]
		if err := w.readAt(w.name, pos+noteHeaderSize, a); err != nil {
			return err
		}
		r.name = w.name
		if i := bytes.IndexByte(r.name, 0); i >= 0 {
			r.name = r.name[:i]
		}
		pos = next
		if !want(r.name, r.typ) {
			continue
		}
		if descsz > MaxNoteDesc {
			w.warn(at, "note descriptor longer than the limit", descsz)
			continue
		}
		w.desc = slices.Grow(w.desc[:0], int(descsz))[:descsz]
		if err := w.readAt(w.desc, r.doff-a.off, a); err != nil {
			return err
		}
		r.desc = w.desc
		if w.kept >= MaxNotes {
			w.limit(at, fmt.Sprintf("more than %d notes", MaxNotes))
			return errStop
		}
		w.kept++
		fn(r)
	}
	return nil
}

// readAt reads len(buf) bytes at position pos of area a. It returns errStop
// when that would pass MaxNoteBytes, errTruncated when the data ends early
// (both after adding a warning), or the reader's I/O error.
func (w *noteWalker) readAt(buf []byte, pos uint64, a *noteArea) error {
	if w.read+uint64(len(buf)) > MaxNoteBytes {
		w.limit(a.off+pos, fmt.Sprintf("more than %d bytes of notes", MaxNoteBytes))
		return errStop
	}
	w.read += uint64(len(buf))
	w.seek(pos)
	n, err := io.ReadFull(w.br, buf)
	w.cur += uint64(n)
	switch {
	case err == nil:
		return nil
	case err == io.EOF || err == io.ErrUnexpectedEOF:
		w.warn(a.off+pos, a.what()+" truncated", fmt.Sprintf("%#x of %#x bytes", n, len(buf)))
		return errTruncated
	}
	return fmt.Errorf("read %s: %w", a.what(), err)
}

// seek moves the reader of the current area to pos, reusing buffered bytes
// for short forward moves and reading nothing for long ones.
func (w *noteWalker) seek(pos uint64) {
	if pos >= w.cur && pos-w.cur <= uint64(w.br.Buffered()) {
		w.br.Discard(int(pos - w.cur)) // cannot fail: the bytes are buffered
	} else {
		w.sr.Seek(int64(pos), io.SeekStart) // cannot fail: 0 <= pos < size
		w.br.Reset(w.sr)
	}
	w.cur = pos
}
