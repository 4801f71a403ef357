package dynsdt

import (
	"debug/elf"
	"errors"
	"testing"
)

func TestStaticArgs(t *testing.T) {
	tests := []struct {
		m    elf.Machine
		want string
	}{
		{elf.EM_X86_64, "8@8(%rsp) -4@16(%rsp) 1@24(%rsp)"},
		{elf.EM_AARCH64, "8@[sp, 8] -4@[sp, 16] 1@[sp, 24]"},
	}
	for _, tt := range tests {
		have, err := StaticArgs(tt.m, []ArgType{String, Int32, Bool})
		if err != nil || have != tt.want {
			t.Errorf("%v: have %q, %v; want %q", tt.m, have, err, tt.want)
		}
	}
	if _, err := StaticArgs(elf.EM_RISCV, []ArgType{Int8}); !errors.Is(err, ErrUnsupportedMachine) {
		t.Errorf("riscv: %v", err)
	}
}
