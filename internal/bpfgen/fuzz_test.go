package bpfgen

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// FuzzDecodeEvent checks that DecodeEvent never panics on arbitrary ring
// buffer records, and that what it decodes encodes back to a record that
// decodes to the same Event.
func FuzzDecodeEvent(f *testing.F) {
	ev := sampleEvent()
	f.Add(encodeRecord(&ev, 0b1100, 16))
	f.Add(encodeRecord(&ev, 0b1111, 64))
	noStr := Event{NArgs: 2, Args: []uint64{1, 2}, Strings: []string{"", ""}, Comm: "x"}
	f.Add(encodeRecord(&noStr, 0, DefaultStrLen))
	seeds, err := filepath.Glob(filepath.Join("testdata", "records", "*.bin"))
	if err != nil || len(seeds) == 0 {
		f.Fatalf("no seed records in testdata/records: %v", err)
	}
	for _, p := range seeds {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		var c Config
		var ev Event
		if err := c.DecodeEvent(raw, &ev); err != nil {
			return
		}
		raw2 := encodeRecord(&ev, slotsOf(raw), strLenOf(raw))
		var ev2 Event
		if err := c.DecodeEvent(raw2, &ev2); err != nil {
			t.Fatalf("re-encoded record: %v", err)
		}
		// Bytes after a NUL are lost on the way; compare what survives.
		if n := strLenOf(raw); !reflect.DeepEqual(trimmed(ev, n), trimmed(ev2, n)) {
			t.Fatalf("round trip:\n%+v\n%+v", ev, ev2)
		}
	})
}

func slotsOf(raw []byte) uint16 { return binary.NativeEndian.Uint16(raw[offSlots:]) }

func strLenOf(raw []byte) int { return int(binary.NativeEndian.Uint16(raw[offStrLen:])) }

// trimmed cuts strings at the lengths the encoder keeps.
func trimmed(ev Event, strLen int) Event {
	cut := func(s string, n int) string {
		if n >= 0 && len(s) > n {
			return s[:n]
		}
		return s
	}
	ev.Comm = cut(ev.Comm, commLen-1)
	ev.Strings = append([]string(nil), ev.Strings...)
	for i := range ev.Strings {
		ev.Strings[i] = cut(ev.Strings[i], strLen-1)
	}
	return ev
}
