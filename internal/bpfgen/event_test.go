package bpfgen

import (
	"debug/elf"
	"encoding/binary"
	"errors"
	"reflect"
	"testing"
)

// encodeRecord builds the record the program would send for ev, with argCap
// argument slots and string slots for the arguments in slots. The bytes the
// program leaves unwritten are 0xa5, as stale ring buffer contents. A byte
// string longer than its slot is cut, as the program cuts it.
func encodeRecord(ev *Event, argCap int, slots uint16, strLen int) []byte {
	l := newLayout(argCap, slots, strLen)
	raw := make([]byte, l.size)
	for i := range raw {
		raw[i] = 0xa5
	}
	ne := binary.NativeEndian
	ne.PutUint64(raw[offTime:], ev.Time)
	ne.PutUint32(raw[offPID:], ev.PID)
	ne.PutUint32(raw[offTID:], ev.TID)
	ne.PutUint32(raw[offCPU:], ev.CPU)
	ne.PutUint32(raw[offProbe:], ev.Probe)
	clear(raw[offComm : offComm+commLen])
	copy(raw[offComm:offComm+commLen-1], ev.Comm)
	raw[offNArgs] = byte(ev.NArgs)
	raw[offVersion] = recordVersion
	ne.PutUint16(raw[offFaults:], ev.Faults)
	ne.PutUint16(raw[offStrs:], ev.StringArgs)
	ne.PutUint16(raw[offSlots:], slots)
	ne.PutUint16(raw[offStrLen:], uint16(strLen))
	raw[offArgCap] = byte(argCap)
	ne.PutUint16(raw[offBytes:], ev.BytesArgs)
	ne.PutUint16(raw[offCut:], ev.Truncated)
	for i, a := range ev.Args {
		ne.PutUint64(raw[offArgs+8*i:], a)
	}
	for i, s := range ev.Strings {
		off := l.strOff(i)
		switch {
		case ev.StringArgs&(1<<i) != 0:
			clear(raw[off : off+strLen])
			copy(raw[off:off+strLen-1], s)
		case ev.BytesArgs&(1<<i) != 0:
			n := copy(raw[off+bytesCount:off+strLen], s)
			ne.PutUint16(raw[off:], uint16(n))
		}
	}
	return raw
}

func sampleEvent() Event {
	return Event{
		Time: 123456789, PID: 42, TID: 43, CPU: 1, Probe: 7, Comm: "tracee",
		NArgs: 4, Args: []uint64{1, 0xffffffffffffffff, 0x7f0000001000, 0x7f0000002000},
		Strings: []string{"", "", "hello", "world"}, StringArgs: 0b1100, Faults: 0b0010,
	}
}

// bytesEvent has byte strings in arguments 0 (cut) and 2 (with NULs) and
// a string in argument 1.
func bytesEvent() Event {
	return Event{
		Time: 5, PID: 42, TID: 44, CPU: 2, Probe: 9, Comm: "gotracee",
		NArgs: 4, Args: []uint64{0xc000010000, 0x7f0000001000, 0xc000020000, 3},
		Strings:    []string{"0123456789abcd", "text", "a\x00\x00b", ""},
		StringArgs: 0b0010, BytesArgs: 0b0101, Truncated: 0b0001,
	}
}

func TestDecodeEventRoundTrip(t *testing.T) {
	want := sampleEvent()
	c := &Config{StrLen: 16}
	raw := encodeRecord(&want, 5, 0b1101, 16)
	var have Event
	if err := c.DecodeEvent(raw, &have); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(have, want) {
		t.Errorf("have %+v\nwant %+v", have, want)
	}
	// Decoding the same record again into the same Event allocates nothing.
	if n := testing.AllocsPerRun(100, func() { c.DecodeEvent(raw, &have) }); n != 0 {
		t.Errorf("%v allocations per decode, want 0", n)
	}
	// A string filling its slot is cut at StrLen-1 bytes by the kernel; an
	// unterminated slot decodes whole.
	off := newLayout(5, 0b1101, 16).strOff(3)
	for i := range 16 {
		raw[off+i] = 'x'
	}
	if err := c.DecodeEvent(raw, &have); err != nil || len(have.Strings[3]) != 16 {
		t.Errorf("unterminated slot: %q, %v", have.Strings[3], err)
	}
}

func TestDecodeEventBytes(t *testing.T) {
	want := bytesEvent()
	c := &Config{StrLen: 16}
	raw := encodeRecord(&want, 4, 0b0111, 16)
	var have Event
	if err := c.DecodeEvent(raw, &have); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(have, want) {
		t.Errorf("have %+v\nwant %+v", have, want)
	}
	// A faulted byte string has count 0 whatever its stale data.
	off := newLayout(4, 0b0111, 16).strOff(2)
	raw[off], raw[off+1] = 0, 0
	if err := c.DecodeEvent(raw, &have); err != nil || have.Strings[2] != "" {
		t.Errorf("empty byte string: %q, %v", have.Strings[2], err)
	}
	if n := testing.AllocsPerRun(100, func() { c.DecodeEvent(raw, &have) }); n != 0 {
		t.Errorf("%v allocations per decode, want 0", n)
	}
}

func TestDecodeEventErrors(t *testing.T) {
	ev := sampleEvent()
	good := encodeRecord(&ev, 4, 0b1100, 16)
	tests := []struct {
		name string
		edit func([]byte) []byte
		off  int
	}{
		{"short", func(b []byte) []byte { return b[:100] }, 100},
		{"long", func(b []byte) []byte { return append(b, 0) }, len(good) + 1},
		{"truncated slots", func(b []byte) []byte { return b[:len(b)-1] }, len(good) - 1},
		{"version", func(b []byte) []byte { b[offVersion] = 1; return b }, offVersion},
		{"argcap", func(b []byte) []byte { b[offArgCap] = 13; return b }, offArgCap},
		{"argcap differs", func(b []byte) []byte { b[offArgCap] = 5; return b }, len(good)},
		{"nargs", func(b []byte) []byte { b[offNArgs] = 5; return b }, offNArgs},
		{"slot past argcap", func(b []byte) []byte { b[offArgCap] = 3; b[offNArgs] = 3; b[offStrs] = 0b100; return b }, offFaults},
		{"strlen", func(b []byte) []byte { b[offStrLen] = 1; return b }, offStrLen},
		{"strlen differs from config", func(b []byte) []byte { b[offStrLen] = 32; return b }, offStrLen},
		{"string without slot", func(b []byte) []byte { b[offStrs] = 0b10000; return b }, offFaults},
		{"fault past nargs", func(b []byte) []byte { b[offFaults+1] = 1; return b }, offFaults},
		{"bytes and string", func(b []byte) []byte { b[offBytes] = 0b100; return b }, offBytes},
		{"bytes without slot", func(b []byte) []byte { b[offBytes] = 0b1; return b }, offBytes},
		{"cut without bytes", func(b []byte) []byte { b[offCut] = 0b100; return b }, offCut},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			raw := tc.edit(append([]byte(nil), good...))
			var have Event
			err := (&Config{StrLen: 16}).DecodeEvent(raw, &have)
			var fe *FormatError
			if !errors.As(err, &fe) {
				t.Fatalf("have %v, want a *FormatError", err)
			}
			if fe.Off != tc.off {
				t.Errorf("offset %d, want %d (%v)", fe.Off, tc.off, err)
			}
			if !reflect.DeepEqual(have, Event{}) {
				t.Errorf("error left %+v in ev", have)
			}
		})
	}
	// A byte count past its slot.
	ev = bytesEvent()
	raw := encodeRecord(&ev, 4, 0b0111, 16)
	off := newLayout(4, 0b0111, 16).strOff(0)
	binary.NativeEndian.PutUint16(raw[off:], 15)
	var fe *FormatError
	if err := (&Config{}).DecodeEvent(raw, &Event{}); !errors.As(err, &fe) || fe.Off != off {
		t.Errorf("count 15 in a 16-byte slot: have %v, want a *FormatError at %d", err, off)
	}
}

func TestRecordSize(t *testing.T) {
	args := sampleArgs(t)
	tests := []struct {
		name string
		cfg  Config
		want int
	}{
		{"no args", Config{Sites: []Site{{}}}, headerSize},
		{"two args", Config{Sites: []Site{{Args: args[:2]}}}, headerSize + 2*8},
		{"widest site", Config{Sites: []Site{{Args: args[:2]}, {Args: args[:5]}, {}}}, headerSize + 5*8},
		{"strings", Config{StrLen: 32, Sites: []Site{{Args: args[:2], Strings: 0b10}, {Args: args[:3], Strings: 0b110}}}, headerSize + 3*8 + 2*32},
		{"bytes", Config{StrLen: 32, Sites: []Site{{Args: args[:2], Strings: 0b10}, {Args: args[:3], Bytes: 0b101, BytesLen: [MaxArgs]uint8{0: 1, 2: 1}}}}, headerSize + 3*8 + 3*32},
		{"count mode", Config{Mode: ModeCount, Sites: []Site{{Args: args[:2], Strings: 0b10}}}, headerSize + MaxArgs*8},
		{"invalid", Config{}, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.name != "invalid" {
				tc.cfg.Machine = elf.EM_X86_64
			}
			if have := tc.cfg.RecordSize(); have != tc.want {
				t.Errorf("have %d, want %d", have, tc.want)
			}
		})
	}
}
