package elfnotes

import (
	"bytes"
	"encoding/binary"
	"fmt"
)

// Note owners and types this package knows by name. Note types are only
// meaningful together with the owner: NT_STAPSDT and NT_GNU_BUILD_ID are
// both 3.
const (
	OwnerStapsdt = "stapsdt"
	OwnerGNU     = "GNU"
	OwnerGo      = "Go"

	NTStapsdt = 3 // owner "stapsdt": SystemTap SDT probe descriptor

	NTGNUABITag    = 1 // owner "GNU": ABI tag
	NTGNUHWCap     = 2 // owner "GNU": hardware capabilities
	NTGNUBuildID   = 3 // owner "GNU": build ID
	NTGNUGoldVer   = 4 // owner "GNU": gold linker version
	NTGNUProperty0 = 5 // owner "GNU": program properties (NT_GNU_PROPERTY_TYPE_0)

	NTGoBuildID = 4 // owner "Go": Go build ID
)

// noteHeaderSize is n_namesz, n_descsz and n_type: three 4-byte words in both
// ELF classes. The gABI asks for 8-byte words in ELF64, but Linux, binutils,
// elfutils and every toolchain in use write 4-byte words everywhere.
const noteHeaderSize = 12

// A Note is one record of a SHT_NOTE section or PT_NOTE segment.
type Note struct {
	Owner   string // note name without the trailing NUL, e.g. "stapsdt", "GNU"
	Type    uint32
	Desc    []byte // descriptor; not shared between calls to Notes
	Offset  uint64 // file offset of this note's header
	Section string // section it came from ("" when read from a PT_NOTE segment)
}

// TypeName returns the conventional name of the note's type, which depends
// on its owner, e.g. "NT_STAPSDT" or "NT_GNU_BUILD_ID", or the type in hex
// when the pair is not known.
func (n Note) TypeName() string {
	return noteTypeName(n.Owner, n.Type)
}

func noteTypeName(owner string, typ uint32) string {
	switch {
	case owner == OwnerStapsdt && typ == NTStapsdt:
		return "NT_STAPSDT"
	case owner == OwnerGo && typ == NTGoBuildID:
		return "NT_GO_BUILDID"
	case owner == OwnerGNU:
		switch typ {
		case NTGNUABITag:
			return "NT_GNU_ABI_TAG"
		case NTGNUHWCap:
			return "NT_GNU_HWCAP"
		case NTGNUBuildID:
			return "NT_GNU_BUILD_ID"
		case NTGNUGoldVer:
			return "NT_GNU_GOLD_VERSION"
		case NTGNUProperty0:
			return "NT_GNU_PROPERTY_TYPE_0"
		}
	}
	return fmt.Sprintf("%#x", typ)
}

// Notes returns every note of every SHT_NOTE section, in section and then
// record order, as [File.ReadNotes] does, but fails on the first problem
// ReadNotes would report as a warning: then the slice is nil and the error
// is that warning. A file without notes gives an empty, non-nil slice.
func (f *File) Notes() ([]Note, error) {
	return strict(f.ReadNotes())
}

// ReadNotes returns every note of every SHT_NOTE section, in section and
// then record order. A file without section headers is read through its
// PT_NOTE segments instead. SHT_NOBITS sections (the notes of a separate
// debug file that objcopy emptied) have no records and are skipped.
//
// Damage stays local. A note whose name or descriptor is longer than
// [MaxNoteName] or [MaxNoteDesc] is skipped; a record that does not fit
// what remains of its section, or a section that extends past the end of
// the file, ends that section after the notes read so far, and so does a
// section of more than [MaxNotes] records; keeping more than MaxNotes
// notes or reading more than [MaxNoteBytes] ends the walk. Each of these adds one
// warning, a *[FormatError] with the file offset of the bad record or
// section (wrapping [ErrLimit] for the limits), and the other notes are
// returned. err is reserved for I/O errors of the underlying reader, and
// then notes is nil. A file without notes gives an empty, non-nil slice.
func (f *File) ReadNotes() (notes []Note, warnings []error, err error) {
	notes = []Note{}
	w := &noteWalker{f: f}
	err = w.walk(func([]byte, uint32) bool { return true }, func(r *noteRecord) {
		n := Note{Owner: string(r.name), Type: r.typ, Offset: r.off, Section: r.area.section}
		if len(r.desc) > 0 {
			n.Desc = bytes.Clone(r.desc)
		}
		notes = append(notes, n)
	})
	if err != nil {
		return nil, nil, err
	}
	return notes, w.warnings, nil
}

// strict turns the result of a Read method with warnings into that of its
// strict variant: the first warning becomes the error.
func strict[T any](v []T, warnings []error, err error) ([]T, error) {
	if err != nil {
		return nil, err
	}
	if len(warnings) > 0 {
		return nil, warnings[0]
	}
	return v, nil
}

// noteAlign returns the padding unit of the records in a note section or
// segment with alignment a. Name and descriptor are padded to 4 bytes, except
// in 8-aligned areas, where both are padded to 8 while the header stays
// three 4-byte words. Only NT_GNU_PROPERTY_TYPE_0 in ELF64 uses that (see
// the x86-64 psABI "Program Property" and Linux fs/binfmt_elf.c
// parse_elf_properties). Other alignments are treated as 4, as elfutils'
// gelf_getnote does; readelf rejects them.
func noteAlign(a uint64) uint64 {
	if a == 8 {
		return 8
	}
	return 4
}

func alignUp(v, a uint64) uint64 { return (v + a - 1) &^ (a - 1) }

// AppendNote appends one note record to dst and returns the extended
// slice: the three header words in byte order order, the owner with its
// terminating NUL (nothing at all when owner is empty, as the gABI asks),
// and desc, each padded with zeros to 4 bytes. This is the layout of every
// note except NT_GNU_PROPERTY_TYPE_0 in ELF64.
func AppendNote(dst []byte, order binary.ByteOrder, owner string, typ uint32, desc []byte) []byte {
	namesz := 0
	if owner != "" {
		namesz = len(owner) + 1
	}
	dst = appendUint32(dst, order, uint32(namesz))
	dst = appendUint32(dst, order, uint32(len(desc)))
	dst = appendUint32(dst, order, typ)
	if owner != "" {
		dst = append(dst, owner...)
		dst = append(dst, 0)
		dst = pad4(dst, namesz)
	}
	dst = append(dst, desc...)
	return pad4(dst, len(desc))
}

// pad4 appends the zeros that round a field of n bytes up to 4.
func pad4(dst []byte, n int) []byte {
	for ; n%4 != 0; n++ {
		dst = append(dst, 0)
	}
	return dst
}

func appendUint32(dst []byte, order binary.ByteOrder, v uint32) []byte {
	// binary.LittleEndian and BigEndian append without the temporary
	// array, which escapes through the interface call below.
	if ao, ok := order.(binary.AppendByteOrder); ok {
		return ao.AppendUint32(dst, v)
	}
	var b [4]byte
	order.PutUint32(b[:], v)
	return append(dst, b[:]...)
}

func appendUint64(dst []byte, order binary.ByteOrder, v uint64) []byte {
	if ao, ok := order.(binary.AppendByteOrder); ok {
		return ao.AppendUint64(dst, v)
	}
	var b [8]byte
	order.PutUint64(b[:], v)
	return append(dst, b[:]...)
}
