package argread

import (
	"debug/elf"
	"errors"
	"testing"
)

func TestPtRegs(t *testing.T) {
	tests := []struct {
		m    elf.Machine
		name string
		want int16
	}{
		{elf.EM_X86_64, "r15", 0},
		{elf.EM_X86_64, "r12", 24},
		{elf.EM_X86_64, "rbp", 32},
		{elf.EM_X86_64, "rbx", 40},
		{elf.EM_X86_64, "r11", 48},
		{elf.EM_X86_64, "r8", 72},
		{elf.EM_X86_64, "rax", 80},
		{elf.EM_X86_64, "rcx", 88},
		{elf.EM_X86_64, "rdx", 96},
		{elf.EM_X86_64, "rsi", 104},
		{elf.EM_X86_64, "rdi", 112},
		{elf.EM_X86_64, "rip", 128},
		{elf.EM_X86_64, "rsp", 152},
		{elf.EM_AARCH64, "x0", 0},
		{elf.EM_AARCH64, "x1", 8},
		{elf.EM_AARCH64, "x29", 232},
		{elf.EM_AARCH64, "x30", 240},
		{elf.EM_AARCH64, "sp", 248},
		{elf.EM_AARCH64, "pc", 256},
	}
	for _, tc := range tests {
		t.Run(tc.m.String()+"/"+tc.name, func(t *testing.T) {
			have, err := PtRegs(tc.m, tc.name)
			if err != nil || have != tc.want {
				t.Errorf("have %d, %v; want %d", have, err, tc.want)
			}
		})
	}
	if n := PtRegsSize(elf.EM_X86_64); n != 168 {
		t.Errorf("x86-64 pt_regs size %d, want 168", n)
	}
	if n := PtRegsSize(elf.EM_AARCH64); n != 272 {
		t.Errorf("arm64 user_pt_regs size %d, want 272", n)
	}
}

func TestPtRegsUnsupported(t *testing.T) {
	for _, tc := range []struct {
		m    elf.Machine
		name string
	}{
		{elf.EM_X86_64, "xmm0"},
		{elf.EM_X86_64, "eax"}, // aliases are resolved by sdt first
		{elf.EM_AARCH64, "v0"},
		{elf.EM_AARCH64, "xzr"},
		{elf.EM_AARCH64, "x31"},
		{elf.EM_AARCH64, "x01"},
		{elf.EM_RISCV, "a0"},
	} {
		t.Run(tc.m.String()+"/"+tc.name, func(t *testing.T) {
			if _, err := PtRegs(tc.m, tc.name); !errors.Is(err, ErrUnsupported) {
				t.Errorf("have %v, want ErrUnsupported", err)
			}
		})
	}
}
