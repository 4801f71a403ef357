package bpfgen

import (
	"bytes"
	"encoding/binary"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// FuzzDecodeEvent checks that DecodeEvent never panics on arbitrary ring
// buffer records, that an error leaves the Event unchanged (zero), and that
// what it decodes encodes back to a record that decodes to the same Event.
func FuzzDecodeEvent(f *testing.F) {
	ev := sampleEvent()
	f.Add(encodeRecord(&ev, 4, 0b1100, 16))
	f.Add(encodeRecord(&ev, MaxArgs, 0b1111, 64))
	noStr := Event{NArgs: 2, Args: []uint64{1, 2}, Strings: []string{"", ""}, Comm: "x"}
	f.Add(encodeRecord(&noStr, 2, 0, DefaultStrLen))
	bev := bytesEvent()
	f.Add(encodeRecord(&bev, 4, 0b0111, 16))
	f.Add(encodeRecord(&bev, 5, 0b10111, 2+14))
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
			if !reflect.DeepEqual(ev, Event{}) {
				t.Fatalf("error %v left %+v", err, ev)
			}
			return
		}
		raw2 := encodeRecord(&ev, int(raw[offArgCap]), slotsOf(raw), strLenOf(raw))
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
		if ev.BytesArgs&(1<<i) == 0 {
			ev.Strings[i] = cut(ev.Strings[i], strLen-1)
		}
	}
	return ev
}

var update = flag.Bool("update", false, "rewrite testdata/records")

// seedRecords are the records in testdata/records, seeds of FuzzDecodeEvent.
func seedRecords() map[string][]byte {
	ev := sampleEvent()
	ev.Time = 123456789
	faults := Event{
		Time: 1, PID: 2, TID: 2, Probe: 3, Comm: "tracee", NArgs: MaxArgs,
		Args: make([]uint64, MaxArgs), Strings: make([]string, MaxArgs), Faults: 1<<MaxArgs - 1,
	}
	empty := Event{Args: []uint64{}, Strings: []string{}}
	bev := bytesEvent()
	return map[string][]byte{
		"strings.bin":       encodeRecord(&ev, 4, 0b1100, 16),
		"twelve-faults.bin": encodeRecord(&faults, MaxArgs, 0, DefaultStrLen),
		"empty.bin":         encodeRecord(&empty, 0, 0, DefaultStrLen),
		"bytes.bin":         encodeRecord(&bev, 4, 0b0111, 16),
	}
}

// TestSeedRecords checks that the seed records decode and are what
// encodeRecord writes now; go test -update rewrites them.
func TestSeedRecords(t *testing.T) {
	for name, want := range seedRecords() {
		path := filepath.Join("testdata", "records", name)
		if *update {
			if err := os.WriteFile(path, want, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		have, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(have, want) {
			t.Errorf("%s differs from encodeRecord's (go test -update rewrites it)", path)
		}
		var ev Event
		if err := (&Config{}).DecodeEvent(have, &ev); err != nil {
			t.Errorf("%s: %v", path, err)
		}
	}
}
