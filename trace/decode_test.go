package trace

import (
	"encoding/binary"
	"testing"

	"github.com/usdtkit/usdtkit/internal/golang/gofunc"
	"github.com/usdtkit/usdtkit/internal/lang/btgen"
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

// testGoDecoder decodes records of a Go function's event: the goroutine
// id, a string s (bytes at slot 1, length at 2), an int n, an error err
// (type and data words), a slice xs of int64 (data, length, two
// elements), and a value that cannot be read.
func testGoDecoder(fn func(*Event) error) (*eventDecoder, []byte) {
	info := btgen.EventInfo{ArgCap: 10, Strings: 0b10, Bytes: 0b10, StrLen: 16, Size: btgen.EvArgsOff + 10*8 + 16}
	info.StrOffs[1] = btgen.EvArgsOff + 10*8
	full := "uprobe:/bin/go:main.f"
	layout := &goLayout{types: map[uint64]string{0x99: "*errors.errorString"}, values: []goSlotValue{
		{name: "s", typ: "string", kind: gofunc.String, slots: []int{1, 2}},
		{name: "n", typ: "int", kind: gofunc.Int, slots: []int{3}},
		{name: "err", typ: "error", kind: gofunc.Interface, slots: []int{4, 5}},
		{name: "xs", typ: "[]int64", kind: gofunc.Slice, elemKind: gofunc.Int, slots: []int{6, 7, 8, 9}},
		{name: "f", typ: "float64", kind: gofunc.Unreadable, reason: "a float"},
	}}
	p := &Program{
		gen:       &btgen.Program{Probes: []string{full}, Events: []btgen.EventInfo{info}},
		names:     map[string]probeName{full: {name: "main.f", path: "/bin/go", goFn: true}},
		goLayouts: map[string]*goLayout{full: layout},
	}
	rec := make([]byte, info.Size)
	ne := binary.NativeEndian
	ne.PutUint32(rec, btgen.RecEvent)
	rec[btgen.EvNArgsOff] = 10
	ne.PutUint16(rec[btgen.EvBytesOff:], 0b10)
	for i, v := range []uint64{7, 0x7000, 20, 1<<64 - 3, 0x99, 0x5000, 0x6000, 3, 5, 1<<64 - 6} {
		ne.PutUint64(rec[btgen.EvArgsOff+8*i:], v)
	}
	copy(rec[info.StrOffs[1]:], "a\x00cdefghijklmnop")
	return newEventDecoder(p, fn), rec
}

// TestDecodeGo decodes a Go function's event into values by name: a
// string by its length (NULs are data, cut at StrLen-2 and marked
// truncated), a signed int, an interface with its type's name, a slice's
// elements, and a value not read with its reason.
func TestDecodeGo(t *testing.T) {
	var have *Event
	d, rec := testGoDecoder(func(ev *Event) error { have = ev; return nil })
	if err := d.record(rec); err != nil {
		t.Fatal(err)
	}
	if !have.Go || have.GoID != 7 || have.Results || len(have.Args) != 5 {
		t.Fatalf("have %+v", have)
	}
	want := []string{`s="a\x00cdefghijklmn"...`, "n=-3", "err=(*errors.errorString)0x5000", "xs=[3][5 -6]...", "f=<unread: a float>"}
	for i, w := range want {
		if s := have.Args[i].Name + "=" + have.Args[i].String(); s != w {
			t.Errorf("value %d: have %s, want %s", i, s, w)
		}
	}
	if have.Args[0].Go != "a\x00cdefghijklmn" || !have.Args[0].Truncated || have.Args[1].Go != int64(-3) {
		t.Errorf("s = %#v, n = %#v", have.Args[0], have.Args[1])
	}
	// A fault reading the string's bytes: "" and why.
	ne := binary.NativeEndian
	ne.PutUint16(rec[btgen.EvFaultsOff:], 0b10)
	if err := d.record(rec); err != nil {
		t.Fatal(err)
	}
	if v := have.Args[0]; v.Go != "" || !v.Fault || v.Unread != "could not read the contents" {
		t.Errorf("s after a fault: %#v", v)
	}
}

// FuzzDecodeGo decodes any bytes as the record of a Go function's event
// (its header kept, so that the layout applies): no panic, and every
// value by name or an error.
func FuzzDecodeGo(f *testing.F) {
	_, rec := testGoDecoder(nil)
	f.Add(rec[btgen.EvNArgsOff:])
	short := append([]byte(nil), rec[btgen.EvNArgsOff:]...)
	short[0] = 2
	f.Add(short)
	f.Fuzz(func(t *testing.T, body []byte) {
		var have *Event
		d, rec := testGoDecoder(func(ev *Event) error { have = ev; return nil })
		copy(rec[btgen.EvNArgsOff:], body)
		if err := d.record(rec); err != nil {
			return
		}
		if have == nil || !have.Go || len(have.Args) != 5 {
			t.Fatalf("decoded %+v", have)
		}
		for _, v := range have.Args {
			_ = v.String()
		}
	})
}
