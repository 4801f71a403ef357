package unwind

import (
	"errors"
	"testing"
)

// TestLEB128 reads the LEB128 numbers of DWARF 5's examples (section
// 7.6) and the edges: the largest, the smallest, and a number cut short.
func TestLEB128(t *testing.T) {
	for _, tt := range []struct {
		name string
		b    []byte
		u    uint64
		s    int64
		err  error
	}{
		{"2", []byte{2}, 2, 2, nil},
		{"127 / -1", []byte{0x7f}, 127, -1, nil},
		{"128", []byte{0x80, 1}, 128, 128, nil},
		{"129 / -127", []byte{0x81, 0x7f}, 16257, -127, nil},
		{"-128", []byte{0x80, 0x7f}, 16256, -128, nil},
		{"12857 / -3527", []byte{0xb9, 0x64}, 12857, -3527, nil},
		{"-123456", []byte{0xc0, 0xbb, 0x78}, 1973696, -123456, nil},
		{"max uint64 / -1", []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}, 1<<64 - 1, -1, nil},
		{"min int64", []byte{0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x7f}, 1 << 63, -1 << 63, nil},
		{"truncated", []byte{0x80}, 0, 0, errTruncated},
		{"empty", nil, 0, 0, errTruncated},
	} {
		t.Run(tt.name, func(t *testing.T) {
			u := &operands{b: tt.b}
			if have, err := u.uleb(); have != tt.u || !errors.Is(err, tt.err) {
				t.Errorf("uleb: have %d, %v; want %d, %v", have, err, tt.u, tt.err)
			}
			s := &operands{b: tt.b}
			if have, err := s.sleb(); have != tt.s || !errors.Is(err, tt.err) {
				t.Errorf("sleb: have %d, %v; want %d, %v", have, err, tt.s, tt.err)
			}
			if tt.err == nil && (!u.done() || !s.done()) {
				t.Errorf("read %d and %d of %d bytes", u.pos, s.pos, len(tt.b))
			}
		})
	}
}
