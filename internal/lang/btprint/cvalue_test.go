package btprint

import (
	"testing"

	"github.com/usdtkit/usdtkit/internal/lang/layout"
)

// TestAppendC prints C values in bpftrace 0.17's three styles; the
// strings are what bpftrace printed for the same bytes
// (cmd/usdtkit's TestProgramCTypes runs them against it).
func TestAppendC(t *testing.T) {
	i16 := &layout.CValue{Kind: layout.CInt, Size: 2, Signed: true}
	u8 := &layout.CValue{Kind: layout.CInt, Size: 1}
	inner := &layout.CValue{Kind: layout.CRecord, Size: 6, Fields: []layout.CField{
		{Name: "a", Off: 0, Value: i16},
		{Name: "b", Off: 2, Value: &layout.CValue{Kind: layout.CArray, Size: 3, Len: 3, Elem: u8}},
	}}
	innerBytes := []byte{0xd4, 0xfe, 1, 2, 250, 0} // -300, [1,2,250]
	bits := &layout.CValue{Kind: layout.CRecord, Size: 4, Fields: []layout.CField{
		{Name: "lo", Off: 0, BitOff: 0, Bits: 4, Value: &layout.CValue{Kind: layout.CInt, Size: 4}},
		{Name: "neg", Off: 0, BitOff: 4, Bits: 3, Value: &layout.CValue{Kind: layout.CInt, Size: 4, Signed: true}},
	}}
	tests := []struct {
		name  string
		v     *layout.CValue
		b     []byte
		style cStyle
		want  string
	}{
		{"record", inner, innerBytes, cText, "{ .a = -300, .b = [1,2,250] }"},
		{"record key", inner, innerBytes, cKey, "{.a=-300,.b=[1,2,250]}"},
		{"record json", inner, innerBytes, cJSON, `{ "a": -300, "b": [1,2,250] }`},
		{"bit-fields", bits, []byte{0xd9, 0, 0, 0}, cText, "{ .lo = 9, .neg = -3 }"},
		{"short bytes read as zeros", inner, innerBytes[:2], cText, "{ .a = -300, .b = [0,0,0] }"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if have := string(appendC(nil, tt.v, tt.b, tt.style)); have != tt.want {
				t.Errorf("have %s, want %s", have, tt.want)
			}
		})
	}
}

// TestAppendValueTupleC prints a tuple holding a struct and an array as
// bpftrace 0.17's print() does, text and JSON.
func TestAppendValueTupleC(t *testing.T) {
	u8 := &layout.CValue{Kind: layout.CInt, Size: 1}
	arr := &layout.CValue{Kind: layout.CArray, Size: 2, Len: 2, Elem: u8}
	rec := &layout.CValue{Kind: layout.CRecord, Size: 2, Fields: []layout.CField{{Name: "a", Value: arr}}}
	v := Value{Kind: ValueTuple, Elems: []Value{
		{Kind: ValueInt, Int: -1, Signed: true},
		{Kind: ValueC, C: rec, Raw: []byte{7, 8}},
		{Kind: ValueString, Str: `a"b`},
		{Kind: ValueC, C: arr, Raw: []byte{9}},
	}}
	if have, want := string(AppendValue(nil, v, OutputText)), "(-1, { .a = [7,8] }, a\"b, [9,0])\n"; have != want {
		t.Errorf("text: have %q, want %q", have, want)
	}
	if have, want := string(AppendValue(nil, v, OutputJSON)), `{"type": "value", "data": [-1,{ "a": [7,8] },"a\"b",[9,0]]}`+"\n"; have != want {
		t.Errorf("json: have %q, want %q", have, want)
	}
}
