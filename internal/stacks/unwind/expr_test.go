package unwind

import (
	"encoding/binary"
	"errors"
	"testing"
)

// fakeEnv has rsp (7) = 0x1000, rip (16) = pc, and 8-byte words at
// 0x2000 (0x1122) and 0x2008 (0x3344).
type fakeEnv struct{ pc uint64 }

func (e fakeEnv) reg(r uint64) (uint64, bool) {
	switch r {
	case 7:
		return 0x1000, true
	case 16:
		return e.pc, true
	}
	return 0, false
}

func (e fakeEnv) read(addr uint64) (uint64, bool) {
	switch addr {
	case 0x2000:
		return 0x1122, true
	case 0x2008:
		return 0x3344, true
	}
	return 0, false
}

func TestEvalExpr(t *testing.T) {
	// glibc's PLT entries: CFA = rsp + 8 + ((rip & 15) >= 11) << 3.
	plt := []byte{0x77, 8, 0x80, 0, 0x3f, 0x1a, 0x3b, 0x2a, 0x33, 0x24, 0x22}
	cfa := uint64(0x2000)
	for _, tc := range []struct {
		name string
		expr []byte
		pc   uint64
		push *uint64
		want uint64
		err  error // wrapped sentinel, or nil for success
		bad  bool  // some other error
	}{
		{name: "plt before push", expr: plt, pc: 0x1006, want: 0x1008},
		{name: "plt after push", expr: plt, pc: 0x100b, want: 0x1010},
		{name: "lit", expr: []byte{0x35}, want: 5},
		{name: "const1s", expr: []byte{0x09, 0xff}, want: ^uint64(0)},
		{name: "const2u", expr: []byte{0x0a, 0x34, 0x12}, want: 0x1234},
		{name: "const4s", expr: []byte{0x0d, 0xfe, 0xff, 0xff, 0xff}, want: ^uint64(1)},
		{name: "constu", expr: []byte{0x10, 0xe5, 0x8e, 0x26}, want: 624485},
		{name: "consts", expr: []byte{0x11, 0x7f}, want: ^uint64(0)},
		{name: "pushed cfa deref", expr: []byte{0x06}, push: &cfa, want: 0x1122},
		{name: "plus_uconst deref", expr: []byte{0x23, 8, 0x06}, push: &cfa, want: 0x3344},
		{name: "swap minus", expr: []byte{0x31, 0x35, 0x16, 0x1c}, want: 4},
		{name: "over pick drop", expr: []byte{0x31, 0x32, 0x14, 0x15, 2, 0x13, 0x22}, want: 3},
		{name: "shra neg", expr: []byte{0x38, 0x1f, 0x31, 0x26}, want: ^uint64(3)},
		{name: "compare signed", expr: []byte{0x31, 0x1f, 0x30, 0x2d}, want: 1},
		{name: "bregx", expr: []byte{0x92, 7, 0x10}, want: 0x1010},
		{name: "deref outside", expr: []byte{0x30, 0x06}, err: errOutsideCopy},
		{name: "unknown register", expr: []byte{0x73, 0}, err: errNoRegister},
		{name: "branch", expr: []byte{0x2f, 0, 0}, err: errUnsupportedOp},
		{name: "underflow", expr: []byte{0x22}, bad: true},
		{name: "empty", expr: nil, bad: true},
		{name: "truncated leb", expr: []byte{0x10, 0x80}, bad: true},
		{name: "truncated const", expr: []byte{0x0e, 1, 2}, bad: true},
		{name: "overflow", expr: make([]byte, 65), bad: true}, // 65 × lit0
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.name == "overflow" {
				for i := range tc.expr {
					tc.expr[i] = 0x30
				}
			}
			have, err := evalExpr(tc.expr, fakeEnv{pc: tc.pc}, tc.push)
			switch {
			case tc.err != nil || tc.bad:
				if err == nil || (tc.err != nil && !errors.Is(err, tc.err)) {
					t.Fatalf("have %#x, %v; want error %v", have, err, tc.err)
				}
			case err != nil:
				t.Fatal(err)
			case have != tc.want:
				t.Fatalf("have %#x, want %#x", have, tc.want)
			}
		})
	}
}

func FuzzEvalExpr(f *testing.F) {
	f.Add([]byte{0x77, 8, 0x80, 0, 0x3f, 0x1a, 0x3b, 0x2a, 0x33, 0x24, 0x22}, uint64(0x100b))
	f.Add([]byte{0x23, 8, 0x06}, uint64(0))
	f.Fuzz(func(t *testing.T, expr []byte, pc uint64) {
		cfa := binary.LittleEndian.Uint64(append(expr, make([]byte, 8)...))
		v, err := evalExpr(expr, fakeEnv{pc: pc}, &cfa)
		if err != nil && v != 0 {
			t.Fatalf("error %v with value %#x", err, v)
		}
	})
}
