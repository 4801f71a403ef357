package unwind

import (
	"bytes"
	"testing"

	"github.com/go-delve/delve/pkg/dwarf/frame"
)

// TestFixARM64Program: negate_ra_state goes, a restore of a register the
// CIE gives no rule becomes same_value, the rest stays.
func TestFixARM64Program(t *testing.T) {
	rules := map[uint64]frame.DWRule{31: {}}
	for _, tc := range []struct{ name, in, want string }{
		{"negate", "\x2d\x44\x0e\x10\x9e\x02", "\x44\x0e\x10\x9e\x02"},
		{"restore x30", "\x44\xde\x0e\x00", "\x44\x08\x1e\x0e\x00"},
		{"restore_extended x30", "\x06\x1e\x41", "\x08\x1e\x41"},
		{"restore of a ruled register", "\xdf\x06\x1f", "\xdf\x06\x1f"},
		{"expression operand 0x2d", "\x10\x1d\x01\x2d\x2d", "\x10\x1d\x01\x2d"},
		{"unknown operation", "\x2d\x3f\x2d", "\x3f\x2d"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if have := fixARM64Program([]byte(tc.in), rules); !bytes.Equal(have, []byte(tc.want)) {
				t.Fatalf("have % x, want % x", have, tc.want)
			}
		})
	}
}

// FuzzFixARM64Program: hostile programs never panic, and a rewritten
// program rewrites to itself.
func FuzzFixARM64Program(f *testing.F) {
	f.Add([]byte("\x2d\x44\x0e\x10\x9e\x02\xde\x06\x1e\x10\x1d\x01\x2d"))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, code []byte) {
		rules := map[uint64]frame.DWRule{31: {}, 29: {}}
		once := fixARM64Program(code, rules)
		if twice := fixARM64Program(once, rules); !bytes.Equal(once, twice) {
			t.Fatalf("% x: % x, then % x", code, once, twice)
		}
	})
}
