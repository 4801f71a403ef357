package bpfgen

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/bits"
)

// Event record layout (native byte order, every field naturally aligned):
//
//	off  size  field
//	  0     8  time     bpf_ktime_get_ns (CLOCK_MONOTONIC)
//	  8     4  pid      thread group id
//	 12     4  tid      thread id
//	 16     4  cpu      bpf_get_smp_processor_id
//	 20     4  probe    Site.Probe
//	 24    16  comm     bpf_get_current_comm, NUL-padded
//	 40     1  nargs    arguments of the site
//	 41     1  version  recordVersion
//	 42     2  faults   bit i: argument i could not be read (value 0)
//	 44     2  strs     bit i: argument i was read as a string
//	 46     2  slots    bit i: the record has a string slot for argument i
//	 48     2  strlen   bytes per string slot
//	 50     1  argcap   u64 slots in args: the most arguments of any site
//	 51     1  (unused)
//	 52     2  bytes    bit i: argument i was read as a byte string
//	 54     2  cut      bit i: the byte string was longer than its slot
//	 56     …  args     argcap x u64, the fetched values, extended to 64 bits
//	  …     …  strings  one slot of strlen bytes per bit of slots, in
//	                    argument order
//
// A string slot (strs) holds the string up to its NUL, cut at strlen-1
// bytes. A byte slot (bytes) holds a u16 count n, at most strlen-2, then n
// bytes of data, NULs included; on a fault n is 0.
//
// The record describes itself (argcap, slots, strlen), so a reader needs no
// table of sites to decode it. The program builds the record in place in
// the ring buffer, which is not cleared between records: only the header,
// args[0:nargs] and the string slots named by strs and bytes are written;
// the unused bytes, the other args and the other string slots hold older
// records.
//
// Version 1 had a fixed args[12] and no argcap; version 2 sized args to the
// program; version 3 adds byte strings (bytes, cut).
const (
	offTime    = 0
	offPID     = 8
	offTID     = 12
	offCPU     = 16
	offProbe   = 20
	offComm    = 24
	commLen    = 16
	offNArgs   = 40
	offVersion = 41
	offFaults  = 42
	offStrs    = 44
	offSlots   = 46
	offStrLen  = 48
	offArgCap  = 50
	offBytes   = 52
	offCut     = 54
	offArgs    = 56
	headerSize = offArgs

	// bytesCount is the u16 count at the start of a byte slot.
	bytesCount = 2

	recordVersion = 3
)

// layout is where a program puts what in a record.
type layout struct {
	argCap int    // u64 argument slots
	slots  uint16 // args with a string slot
	strLen int
	size   int // record bytes
}

func newLayout(argCap int, slots uint16, strLen int) layout {
	return layout{argCap: argCap, slots: slots, strLen: strLen, size: headerSize + 8*argCap + bits.OnesCount16(slots)*strLen}
}

// strOff returns the offset of argument i's string slot.
func (l layout) strOff(i int) int {
	return headerSize + 8*l.argCap + bits.OnesCount16(l.slots&(1<<i-1))*l.strLen
}

// Event is one decoded record of the "events" ring buffer.
type Event struct {
	// Time is bpf_ktime_get_ns at the hit: CLOCK_MONOTONIC nanoseconds.
	Time uint64
	// PID is the thread group id, TID the thread id.
	PID, TID uint32
	CPU      uint32
	// Probe is the Site.Probe of the site hit.
	Probe uint32
	Comm  string
	// NArgs is the number of arguments of the site; Args and Strings have
	// that length.
	NArgs int
	// Args are the argument values, sign- or zero-extended to 64 bits per
	// the site's Fetch. For a string argument it is the address.
	Args []uint64
	// Strings[i] is argument i read as a string (bit i of StringArgs) or
	// as a byte string (bit i of BytesArgs: exactly the bytes copied,
	// NULs included), "" otherwise.
	Strings []string
	// StringArgs has bit i set when argument i was read as a string.
	StringArgs uint16
	// BytesArgs has bit i set when argument i was read as a byte string
	// (Site.Bytes).
	BytesArgs uint16
	// Truncated has bit i set when byte string i was longer than the
	// Config.StrLen-2 bytes of its slot, or its length was negative:
	// Strings[i] holds its first bytes.
	Truncated uint16
	// Faults has bit i set when argument i (or, for a string argument, the
	// string) could not be read: its value is then 0 (or "").
	Faults uint16
}

// FormatError reports a record that does not have the layout Generate
// gives; Off is the byte offset in the record.
type FormatError struct {
	Off int
	Msg string
}

func (e *FormatError) Error() string {
	return fmt.Sprintf("event record: %s at byte %#x", e.Msg, e.Off)
}

// RecordSize returns the size in bytes of the records of the program
// Generate makes for c, or 0 if c is not valid.
func (c *Config) RecordSize() int {
	s, err := c.check(4096)
	if err != nil {
		return 0
	}
	return s.layout.size
}

// DecodeEvent decodes a record of the "events" ring buffer into ev. It
// reuses ev.Args and ev.Strings and allocates only for a comm or string that
// differs from the one already in ev. A record of the wrong size or with
// impossible header fields gives a *FormatError and leaves ev unchanged.
// It may be called concurrently with different ev.
func (c *Config) DecodeEvent(raw []byte, ev *Event) error {
	if len(raw) < headerSize {
		return &FormatError{Off: len(raw), Msg: fmt.Sprintf("record of %d bytes is shorter than the %d-byte header", len(raw), headerSize)}
	}
	ne := binary.NativeEndian
	if v := raw[offVersion]; v != recordVersion {
		return &FormatError{Off: offVersion, Msg: fmt.Sprintf("version %d, want %d", v, recordVersion)}
	}
	argCap := int(raw[offArgCap])
	if argCap > MaxArgs {
		return &FormatError{Off: offArgCap, Msg: fmt.Sprintf("%d argument slots exceed %d", argCap, MaxArgs)}
	}
	nargs := int(raw[offNArgs])
	if nargs > argCap {
		return &FormatError{Off: offNArgs, Msg: fmt.Sprintf("%d arguments exceed the record's %d slots", nargs, argCap)}
	}
	faults := ne.Uint16(raw[offFaults:])
	strs := ne.Uint16(raw[offStrs:])
	slots := ne.Uint16(raw[offSlots:])
	strLen := int(ne.Uint16(raw[offStrLen:]))
	if slots != 0 && (strLen < 2 || strLen > MaxStrLen) {
		return &FormatError{Off: offStrLen, Msg: fmt.Sprintf("string length %d", strLen)}
	}
	if want := c.StrLen; slots != 0 && want != 0 && strLen != want {
		return &FormatError{Off: offStrLen, Msg: fmt.Sprintf("string length %d, want Config.StrLen %d", strLen, want)}
	}
	if slots>>argCap != 0 || strs&^slots != 0 || strs>>nargs != 0 || faults>>nargs != 0 {
		return &FormatError{Off: offFaults, Msg: fmt.Sprintf("argument bits faults %#x strs %#x slots %#x for %d arguments in %d slots", faults, strs, slots, nargs, argCap)}
	}
	byteArgs := ne.Uint16(raw[offBytes:])
	cut := ne.Uint16(raw[offCut:])
	if byteArgs&^slots != 0 || byteArgs&strs != 0 || byteArgs>>nargs != 0 {
		return &FormatError{Off: offBytes, Msg: fmt.Sprintf("byte string bits %#x with strs %#x slots %#x for %d arguments", byteArgs, strs, slots, nargs)}
	}
	if cut&^byteArgs != 0 {
		return &FormatError{Off: offCut, Msg: fmt.Sprintf("cut bits %#x outside byte strings %#x", cut, byteArgs)}
	}
	l := newLayout(argCap, slots, strLen)
	if len(raw) != l.size {
		return &FormatError{Off: len(raw), Msg: fmt.Sprintf("record of %d bytes, want %d", len(raw), l.size)}
	}
	// Check every count before writing to ev, which an error leaves
	// unchanged.
	for i := range nargs {
		if byteArgs&(1<<i) == 0 {
			continue
		}
		off := l.strOff(i)
		if n := int(ne.Uint16(raw[off:])); n > strLen-bytesCount {
			return &FormatError{Off: off, Msg: fmt.Sprintf("byte string of %d bytes in a %d-byte slot", n, strLen)}
		}
	}

	ev.Time = ne.Uint64(raw[offTime:])
	ev.PID = ne.Uint32(raw[offPID:])
	ev.TID = ne.Uint32(raw[offTID:])
	ev.CPU = ne.Uint32(raw[offCPU:])
	ev.Probe = ne.Uint32(raw[offProbe:])
	setString(&ev.Comm, cstring(raw[offComm:offComm+commLen]))
	ev.NArgs = nargs
	ev.Faults = faults
	ev.StringArgs = strs
	ev.BytesArgs = byteArgs
	ev.Truncated = cut
	ev.Args = ev.Args[:0]
	for i := range nargs {
		ev.Args = append(ev.Args, ne.Uint64(raw[offArgs+8*i:]))
	}
	if cap(ev.Strings) < nargs {
		ev.Strings = make([]string, nargs)
	}
	ev.Strings = ev.Strings[:nargs]
	for i := range nargs {
		off := l.strOff(i)
		switch {
		case strs&(1<<i) != 0:
			setString(&ev.Strings[i], cstring(raw[off:off+strLen]))
		case byteArgs&(1<<i) != 0:
			n := int(ne.Uint16(raw[off:]))
			setString(&ev.Strings[i], raw[off+bytesCount:off+bytesCount+n])
		default:
			ev.Strings[i] = ""
		}
	}
	return nil
}

// cstring returns b up to its first NUL.
func cstring(b []byte) []byte {
	if i := bytes.IndexByte(b, 0); i >= 0 {
		return b[:i]
	}
	return b
}

// setString sets *s to b, allocating only when the text differs (the
// comparison string(b) does not allocate).
func setString(s *string, b []byte) {
	if *s != string(b) {
		*s = string(b)
	}
}
