package ldso

import (
	"bytes"
	"encoding/binary"
	"fmt"
)

// Layout of /etc/ld.so.cache, from glibc sysdeps/generic/dl-cache.h.
const (
	// Old format (libc5, glibc < 2.2): header {magic[11], pad[1],
	// uint32 nlibs} then nlibs entries {int32 flags, uint32 key, value};
	// strings are relative to the end of the entry array.
	oldMagic      = "ld.so-1.7.0"
	oldHeaderSize = 16
	oldEntrySize  = 12

	// New format: header {magic "glibc-ld.so.cache", version "1.1",
	// uint32 nlibs, uint32 len_strings, uint8 flags, pad[3],
	// uint32 extension_offset, uint32 unused[3]} then nlibs entries
	// {int32 flags, uint32 key, value, osversion, uint64 hwcap}; strings
	// are relative to the start of this header. ldconfig -c compat writes
	// it after the old entries, 8-byte aligned, where old readers see it
	// as the start of their string table.
	newMagic      = "glibc-ld.so.cache1.1"
	newHeaderSize = 48
	newEntrySize  = 24
	newAlign      = 8 // alignof(struct cache_file_new): it holds a uint64

	// Offsets inside the new header.
	newNlibsOff = 20
	newFlagsOff = 28

	// Low two bits of the new header's flags byte: byte order of the file.
	endianUnset   = 0 // written by ldconfig before glibc 2.33; host order
	endianInvalid = 1 // ldconfig marked the file as unusable
	endianLittle  = 2
	endianBig     = 3
	endianMask    = 3
)

// Entry is one library in the cache. It is plain data.
type Entry struct {
	Name  string // soname, e.g. "libc.so.6"
	Path  string // absolute path of the file, e.g. "/lib/x86_64-linux-gnu/libc.so.6"
	Flags Flags  // library type and architecture/ABI
	// HWCap is zero for ordinary entries. Entries for glibc-hwcaps
	// subdirectories (glibc 2.33+) have bit 62 set and index the cache's
	// list of subdirectory names in the low 32 bits; old-style hwcap
	// entries have the platform's capability bits. The loader uses such an
	// entry only when the CPU supports it. Always zero in the old format.
	HWCap uint64
}

// FormatError is malformed ld.so.cache data.
type FormatError struct {
	Off int64  // byte offset in the cache file of the bad field
	Msg string // what is wrong
	Val any    // the offending value, if any
}

func (e *FormatError) Error() string {
	msg := fmt.Sprintf("ld.so.cache: %s at byte %#x", e.Msg, e.Off)
	if e.Val != nil {
		msg += fmt.Sprintf(": %v", e.Val)
	}
	return msg
}

// ParseCache parses the contents of an ld.so.cache file: the new format
// ("glibc-ld.so.cache1.1"), the old format ("ld.so-1.7.0"), or the old
// format with the new one appended, in which case only the new part is
// returned, as glibc's loader and ldconfig -p do. Entries keep the file's
// order, which is the loader's search order. Malformed data gives a
// *FormatError and no entries.
func ParseCache(b []byte) ([]Entry, error) {
	switch {
	case bytes.HasPrefix(b, []byte(newMagic)):
		return parseNew(b, 0)
	case bytes.HasPrefix(b, []byte(oldMagic)):
		return parseOld(b)
	}
	return nil, &FormatError{Off: 0, Msg: "not an ld.so.cache file"}
}

func parseOld(b []byte) ([]Entry, error) {
	if len(b) < oldHeaderSize {
		return nil, &FormatError{Off: int64(len(b)), Msg: "truncated header"}
	}
	// The old format has no byte-order mark: take the order in which the
	// entry count fits the file, preferring little endian.
	maxLibs := uint64(len(b)-oldHeaderSize) / oldEntrySize
	var order binary.ByteOrder = binary.LittleEndian
	n := uint64(order.Uint32(b[12:]))
	if n > maxLibs && uint64(binary.BigEndian.Uint32(b[12:])) <= maxLibs {
		order = binary.BigEndian
		n = uint64(order.Uint32(b[12:]))
	}
	if n > maxLibs {
		return nil, &FormatError{Off: 12, Msg: "entry count exceeds file size", Val: n}
	}
	end := oldHeaderSize + n*oldEntrySize
	if next := (end + newAlign - 1) &^ (newAlign - 1); next <= uint64(len(b)) &&
		bytes.HasPrefix(b[next:], []byte(newMagic)) {
		return parseNew(b, next)
	}

	strs := b[end:]
	entries := make([]Entry, 0, n)
	for i := uint64(0); i < n; i++ {
		off := oldHeaderSize + i*oldEntrySize
		e := b[off : off+oldEntrySize]
		name, err := cstring(strs, order.Uint32(e[4:]), off+4)
		if err != nil {
			return nil, err
		}
		path, err := cstring(strs, order.Uint32(e[8:]), off+8)
		if err != nil {
			return nil, err
		}
		entries = append(entries, Entry{Name: name, Path: path, Flags: Flags(order.Uint32(e))})
	}
	return entries, nil
}

// parseNew parses the new format whose header starts at b[base:].
func parseNew(b []byte, base uint64) ([]Entry, error) {
	h := b[base:]
	if len(h) < newHeaderSize {
		return nil, &FormatError{Off: int64(len(b)), Msg: "truncated header"}
	}
	var order binary.ByteOrder
	switch f := h[newFlagsOff]; f & endianMask {
	case endianUnset, endianLittle:
		order = binary.LittleEndian
	case endianBig:
		order = binary.BigEndian
	case endianInvalid:
		return nil, &FormatError{Off: int64(base + newFlagsOff), Msg: "cache marked invalid by ldconfig", Val: f}
	}
	n := uint64(order.Uint32(h[newNlibsOff:]))
	if n > uint64(len(h)-newHeaderSize)/newEntrySize {
		return nil, &FormatError{Off: int64(base + newNlibsOff), Msg: "entry count exceeds file size", Val: n}
	}

	entries := make([]Entry, 0, n)
	for i := uint64(0); i < n; i++ {
		off := newHeaderSize + i*newEntrySize
		e := h[off : off+newEntrySize]
		name, err := cstring(h, order.Uint32(e[4:]), base+off+4)
		if err != nil {
			return nil, err
		}
		path, err := cstring(h, order.Uint32(e[8:]), base+off+8)
		if err != nil {
			return nil, err
		}
		entries = append(entries, Entry{
			Name:  name,
			Path:  path,
			Flags: Flags(order.Uint32(e)),
			HWCap: order.Uint64(e[16:]),
		})
	}
	return entries, nil
}

// cstring returns the NUL-terminated string at strs[idx:]; at is the file
// offset of the index field, for the error.
func cstring(strs []byte, idx uint32, at uint64) (string, error) {
	if uint64(idx) >= uint64(len(strs)) {
		return "", &FormatError{Off: int64(at), Msg: "string index out of range", Val: idx}
	}
	s := strs[idx:]
	n := bytes.IndexByte(s, 0)
	if n < 0 {
		return "", &FormatError{Off: int64(at), Msg: "unterminated string", Val: idx}
	}
	return string(s[:n]), nil
}
