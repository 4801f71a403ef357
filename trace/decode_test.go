package trace

import (
	"encoding/binary"
	"testing"

	"github.com/usdtkit/usdtkit/internal/btgen"
)

// testDecoder decodes records of one event of 3 arguments, arg1 a
// string of 16 bytes, of probe 0 ("p:n" in /bin/x).
func testDecoder(fn func(*Event) error) (*eventDecoder, []byte) {
	info := btgen.EventInfo{ArgCap: 3, Strings: 0b10, StrLen: 16, Size: btgen.EvArgsOff + 3*8 + 16}
	info.StrOffs[1] = btgen.EvArgsOff + 3*8
	p := &Program{
		gen:   &btgen.Program{Probes: []string{"usdt:/bin/x:p:n"}, Events: []btgen.EventInfo{info}},
		names: map[string]probeName{"usdt:/bin/x:p:n": {name: "p:n", path: "/bin/x"}},
	}
	rec := make([]byte, info.Size)
	ne := binary.NativeEndian
	ne.PutUint32(rec, btgen.RecEvent)
	ne.PutUint64(rec[btgen.EvTimeOff:], 12345)
	ne.PutUint32(rec[btgen.EvTIDOff:], 11)
	ne.PutUint32(rec[btgen.EvPIDOff:], 10)
	rec[btgen.EvNArgsOff] = 3
	ne.PutUint16(rec[btgen.EvSignedOff:], 0b001)
	ne.PutUint16(rec[btgen.EvFaultsOff:], 0b100)
	copy(rec[btgen.EvCommOff:], "comm")
	ne.PutUint64(rec[btgen.EvArgsOff:], uint64(0xffffffffffffffff))
	ne.PutUint64(rec[btgen.EvArgsOff+8:], 0x7000)
	copy(rec[info.StrOffs[1]:], "GET")
	return newEventDecoder(p, fn), rec
}

// TestDecode decodes a record into a self-describing Event, without
// allocating once the Event has been used.
func TestDecode(t *testing.T) {
	var have *Event
	d, rec := testDecoder(func(ev *Event) error { have = ev; return nil })
	if err := d.record(rec); err != nil {
		t.Fatal(err)
	}
	want := []Value{{Raw: 1<<64 - 1, Signed: true}, {Raw: 0x7000, IsString: true, Str: "GET"}, {Fault: true}}
	if have.Name != "p:n" || have.Path != "/bin/x" || have.PID != 10 || have.TID != 11 || have.Comm != "comm" || have.Time != 12345 || len(have.Args) != 3 {
		t.Fatalf("have %+v", have)
	}
	for i, v := range want {
		if have.Args[i] != v {
			t.Errorf("arg%d: have %+v, want %+v", i, have.Args[i], v)
		}
	}
	if s := have.Args[0].String() + " " + have.Args[1].String() + " " + have.Args[2].String(); s != `-1 "GET" <fault>` {
		t.Errorf("String: have %s", s)
	}
	if n := testing.AllocsPerRun(100, func() { d.record(rec) }); n != 0 {
		t.Errorf("%v allocations per record, want 0", n)
	}
}

// TestDecodeBad: records that do not have their event's layout are errors.
func TestDecodeBad(t *testing.T) {
	tests := []struct {
		name   string
		change func([]byte) []byte
	}{
		{"short", func(r []byte) []byte { return r[:20] }},
		{"longer", func(r []byte) []byte { return append(r, 0) }},
		{"event id", func(r []byte) []byte { r[4] = 1; return r }},
		{"nargs", func(r []byte) []byte { r[btgen.EvNArgsOff] = 4; return r }},
		{"probe", func(r []byte) []byte { r[btgen.EvProbeOff] = 1; return r }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, rec := testDecoder(func(*Event) error { return nil })
			if err := d.record(tt.change(rec)); err == nil {
				t.Error("decoded")
			}
		})
	}
}
