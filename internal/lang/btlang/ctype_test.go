package btlang

import "testing"

// TestRecordLayout lays records out as gcc does on x86-64: the sizes and
// offsets are gcc's sizeof and offsetof of the same declarations (with
// <stdint.h>'s names); TestProgramCTypes in cmd/usdtkit checks a compiled
// target's against bpftrace.
func TestRecordLayout(t *testing.T) {
	tests := []struct {
		name, src string
		size      int
		offs      map[string][3]int // field: offset, bit offset, bits
	}{
		{"padding", `struct R { char c; int64 x; int16 s; }`, 24,
			map[string][3]int{"c": {0, 0, 0}, "x": {8, 0, 0}, "s": {16, 0, 0}}},
		{"bit-fields", `struct R { unsigned int a:4, b:8, c:3, d:1, e:16; }`, 4,
			map[string][3]int{"a": {0, 0, 4}, "b": {0, 4, 8}, "e": {0, 16, 16}}},
		{"bit-field crossing its unit", `struct R { uint32_t a:30; uint32_t b:4; }`, 8,
			map[string][3]int{"a": {0, 0, 30}, "b": {4, 0, 4}}},
		{"union", `union R { int8 a; int64 b; char c[12]; }`, 16,
			map[string][3]int{"a": {0, 0, 0}, "b": {0, 0, 0}, "c": {0, 0, 0}}},
		{"nested and arrays", `struct R { int16 a; struct { int8 x; int32 y[2][3]; } in; char s[5]; int32 *p[2]; }`, 56,
			map[string][3]int{"a": {0, 0, 0}, "in": {4, 0, 0}, "s": {32, 0, 0}, "p": {40, 0, 0}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			prog, err := Parse("stdin", []byte(tt.src+" BEGIN { }"))
			if err != nil {
				t.Fatal(err)
			}
			var r *Record
			// The definition's canonical text must give the same record.
			for _, d := range prog.Types {
				again, err := Parse("stdin", []byte(d.Text+"; BEGIN { @ = sizeof("+recordName(d.Text)+"); }"))
				if err != nil {
					t.Fatalf("canonical text %q does not parse: %v", d.Text, err)
				}
				if err := Check(again, nil); err != nil {
					t.Fatal(err)
				}
				s := again.Blocks[0].Body[0].(*Assign).Value.(*Sizeof)
				r = s.Of.Record
				if s.Val != tt.size {
					t.Errorf("sizeof = %d, want %d", s.Val, tt.size)
				}
			}
			for name, want := range tt.offs {
				f := r.Field(name)
				if f == nil {
					t.Fatalf("no field %s", name)
				}
				if have := [3]int{f.Offset, f.BitOff, f.Bits}; have != want {
					t.Errorf("field %s at %v, want %v", name, have, want)
				}
			}
		})
	}
}

// recordName returns "struct R" from a definition's text.
func recordName(text string) string {
	for i := 0; i < len(text); i++ {
		if text[i] == ' ' {
			for j := i + 1; j < len(text); j++ {
				if text[j] == ' ' {
					return text[:j]
				}
			}
		}
	}
	return text
}
