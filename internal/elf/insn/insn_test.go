package insn

import (
	"debug/elf"
	"errors"
	"testing"
)

func TestBoundary(t *testing.T) {
	// push rbp (1); mov rbp,rsp (3); sub rsp,0x10 (4); mov eax,0x1 (5); ret (1)
	x86 := []byte{0x55, 0x48, 0x89, 0xe5, 0x48, 0x83, 0xec, 0x10, 0xb8, 0x01, 0x00, 0x00, 0x00, 0xc3}
	tests := []struct {
		name       string
		m          elf.Machine
		code       []byte
		off        uint64
		ok         bool
		prev, next uint64
		wantErr    bool
	}{
		{"x86 entry", elf.EM_X86_64, x86, 0, true, 0, 0, false},
		{"x86 second", elf.EM_X86_64, x86, 1, true, 0, 0, false},
		{"x86 inside mov", elf.EM_X86_64, x86, 2, false, 1, 4, false},
		{"x86 inside sub", elf.EM_X86_64, x86, 5, false, 4, 8, false},
		{"x86 ret", elf.EM_X86_64, x86, 13, true, 0, 0, false},
		{"x86 end", elf.EM_X86_64, x86, 14, true, 0, 0, false},
		{"x86 past code", elf.EM_X86_64, x86, 20, false, 0, 0, true},
		{"x86 truncated", elf.EM_X86_64, x86[:6], 7, false, 0, 0, true},
		{"arm64 aligned", elf.EM_AARCH64, nil, 8, true, 0, 0, false},
		{"arm64 inside", elf.EM_AARCH64, nil, 5, false, 4, 8, false},
		{"ppc64", elf.EM_PPC64, nil, 4, false, 0, 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ok, prev, next, err := Boundary(tt.m, tt.code, tt.off)
			if ok != tt.ok || prev != tt.prev || next != tt.next || (err != nil) != tt.wantErr {
				t.Errorf("Boundary(%d) = %v, %d, %d, %v; want %v, %d, %d, error %v", tt.off, ok, prev, next, err, tt.ok, tt.prev, tt.next, tt.wantErr)
			}
		})
	}
	if _, _, _, err := Boundary(elf.EM_PPC64, nil, 0); !errors.Is(err, ErrUnsupportedMachine) {
		t.Errorf("ppc64: %v, want ErrUnsupportedMachine", err)
	}
}

// FuzzBoundary: any bytes and offset give an answer or an error, never a
// panic, and a boundary answer is consistent. Seeds: testdata/fuzz and
// these.
func FuzzBoundary(f *testing.F) {
	f.Add([]byte{0x55, 0x48, 0x89, 0xe5, 0xc3}, uint64(2))
	f.Add([]byte{0x62, 0xf1, 0x7c, 0x48}, uint64(3)) // truncated EVEX
	f.Add([]byte{0xc5}, uint64(1))                   // truncated VEX
	f.Fuzz(func(t *testing.T, code []byte, off uint64) {
		ok, prev, next, err := Boundary(elf.EM_X86_64, code, off%64)
		if err == nil && !ok && !(prev < off%64 && off%64 < next) {
			t.Errorf("off %d: not a boundary, but prev %d, next %d", off%64, prev, next)
		}
	})
}
