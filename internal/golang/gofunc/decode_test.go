package gofunc

import (
	"debug/elf"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"slices"
	"testing"

	"golang.org/x/arch/arm64/arm64asm"
	"golang.org/x/arch/x86/x86asm"
)

// hexCode decodes instructions written as hex, one string per
// instruction: amd64 bytes in memory order, arm64 32-bit words as
// `go tool objdump` prints them (most significant byte first).
func hexCode(tb testing.TB, m elf.Machine, insts ...string) []byte {
	tb.Helper()
	var code []byte
	for _, s := range insts {
		b, err := hex.DecodeString(s)
		if err != nil {
			tb.Fatal(err)
		}
		if m == elf.EM_AARCH64 {
			if len(b) != 4 {
				tb.Fatalf("arm64 instruction %s is not 4 bytes", s)
			}
			b = binary.LittleEndian.AppendUint32(nil, binary.BigEndian.Uint32(b))
		}
		code = append(code, b...)
	}
	return code
}

// TestDecode checks the stack check and RET sweep on instruction
// sequences taken from `go tool objdump` of Go 1.26 programs, and on made
// up leaf functions whose own early unsigned comparison is no stack check.
func TestDecode(t *testing.T) {
	const entry = 0x401000
	x86, arm := elf.EM_X86_64, elf.EM_AARCH64
	for _, tc := range []struct {
		name       string
		m          elf.Machine
		code       []string
		afterCheck uint64 // offset from entry
		returns    []uint64
	}{
		{"amd64/leaf", x86, []string{"480fafc3", "48ffc0", "c3", "cc", "cc"}, 0, []uint64{7}},
		{"amd64/small-frame", x86, []string{"493b6610", "7620", "55", "4889e5", "5d", "c3"}, 6, []uint64{11}},
		{"amd64/medium-frame", x86, []string{"4c8da42458fcffff", "4d3b6610", "0f8694000000", "55", "c3"}, 18, []uint64{19}},
		// MOVQ SP, R12; SUBQ $N, R12; JCS; CMPQ R12, 16(R14); JLS:
		// the probe goes after JLS, not after the underflow JCS.
		{"amd64/large-frame", x86, []string{"4989e4", "4981eca8ff0000", "0f8284000000", "4d3b6610", "767e", "55", "c3"}, 22, []uint64{23}},
		// CMPQ AX, BX; JBE: a leaf's own comparison.
		{"amd64/leaf-jbe", x86, []string{"4839d8", "7601", "c3", "4889d8", "c3"}, 0, []uint64{5, 9}},
		// CMPQ AX, 0x10(BX); JBE with a CALL between: not adjacent.
		{"amd64/guard-not-adjacent", x86, []string{"483b4310", "e800000000", "7601", "c3", "c3"}, 0, []uint64{11, 12}},
		{"amd64/padding-ends", x86, []string{"c3", "cc", "cc", "0f0b"}, 0, []uint64{0}},
		{"amd64/no-ret", x86, []string{"e800000000", "90"}, 0, nil},

		{"arm64/leaf", arm, []string{"9b017c01", "91000420", "d65f03c0", "00000000"}, 0, []uint64{8}},
		{"arm64/small-frame", arm, []string{"f9400b90", "eb3063ff", "54000569", "f81b0ffe", "d65f03c0"}, 12, []uint64{16}},
		// MOVD 16(R28), R16; MOVD $N, R27; SUBS R27, RSP, R17; BLO; CMP; BLS.
		{"arm64/large-frame", arm, []string{"f9400b90", "d29ff61b", "eb3b63f1", "54000523", "eb10023f", "540004e9", "d100c3f4", "d65f03c0"}, 24, []uint64{28}},
		// CMP R1, R0; BLS: a leaf's own comparison.
		{"arm64/leaf-bls", arm, []string{"eb01001f", "54000049", "d65f03c0", "aa0103e0", "d65f03c0"}, 0, []uint64{8, 16}},
		{"arm64/undefined-words", arm, []string{"ffffffff", "d65f03c0", "00000000", "00000000"}, 0, []uint64{4}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code := hexCode(t, tc.m, tc.code...)
			d, err := decode(tc.m, code, entry)
			if err != nil {
				t.Fatal(err)
			}
			if d.afterCheck != entry+tc.afterCheck {
				t.Errorf("have afterCheck entry+%#x, want entry+%#x", d.afterCheck-entry, tc.afterCheck)
			}
			var want []uint64
			for _, r := range tc.returns {
				want = append(want, entry+r)
			}
			if !slices.Equal(d.returns, want) {
				t.Errorf("have returns %#x, want %#x", d.returns, want)
			}
		})
	}
}

func TestDecodeErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		m    elf.Machine
		code []byte
		want error // nil: any error
	}{
		{"riscv", elf.EM_RISCV, []byte{0x67, 0x80, 0x00, 0x00}, ErrUnsupportedArch},
		// 0x06 (PUSH ES) is no instruction in 64-bit mode: the sweep
		// cannot go on.
		{"amd64/undecodable", elf.EM_X86_64, []byte{0x06, 0xc3}, nil},
		{"amd64/undecodable-after-ret", elf.EM_X86_64, []byte{0xc3, 0x06}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := decode(tc.m, tc.code, 0x1000)
			if err == nil {
				t.Fatal("have no error, want one")
			}
			if tc.want != nil && !errors.Is(err, tc.want) {
				t.Fatalf("have %v, want %v", err, tc.want)
			}
		})
	}
}

// FuzzDecode sweeps arbitrary bytes as amd64 or arm64 code. Properties: no
// panic; without an error the returns are ascending addresses inside the
// code where the machine's decoder sees a RET (4-byte aligned on arm64),
// and afterCheck is the entry or inside the code, before the first byte
// of the first return. Seeds (testdata/fuzz/FuzzDecode) are the functions
// of testdata/funcs built for both machines.
func FuzzDecode(f *testing.F) {
	f.Add([]byte{0xc3}, false)
	f.Add([]byte{0x49, 0x3b, 0x66, 0x10, 0x76, 0x01, 0xc3, 0xc3}, false)
	f.Add([]byte{0xc0, 0x03, 0x5f, 0xd6}, true)
	f.Add([]byte{0x90, 0x0b, 0x40, 0xf9, 0xff, 0x63, 0x30, 0xeb, 0x69, 0x05, 0x00, 0x54, 0xc0, 0x03, 0x5f, 0xd6}, true)
	f.Fuzz(func(t *testing.T, code []byte, arm bool) {
		const entry = 0x400000
		m := elf.EM_X86_64
		if arm {
			m = elf.EM_AARCH64
		}
		d, err := decode(m, code, entry)
		if err != nil {
			return
		}
		end := entry + uint64(len(code))
		if d.afterCheck < entry || d.afterCheck > end {
			t.Fatalf("afterCheck %#x outside %#x..%#x", d.afterCheck, entry, end)
		}
		if len(d.returns) > 0 && d.afterCheck > d.returns[0] && d.afterCheck != entry {
			t.Fatalf("afterCheck %#x after the first return %#x", d.afterCheck, d.returns[0])
		}
		for i, r := range d.returns {
			if r < entry || r >= end {
				t.Fatalf("return %#x outside %#x..%#x", r, entry, end)
			}
			if i > 0 && r <= d.returns[i-1] {
				t.Fatalf("returns %#x not ascending", d.returns)
			}
			at := code[r-entry:]
			if arm {
				if (r-entry)%4 != 0 {
					t.Fatalf("return %#x not 4-byte aligned", r)
				}
				if in, err := arm64asm.Decode(at); err != nil || in.Op != arm64asm.RET {
					t.Fatalf("return %#x: %v %v", r, in, err)
				}
				continue
			}
			if in, err := x86asm.Decode(at, 64); err != nil || in.Op != x86asm.RET {
				t.Fatalf("return %#x: %v %v", r, in, err)
			}
		}
	})
}
