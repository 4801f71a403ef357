package argread

import (
	"debug/elf"
	"testing"
)

// TestWordFetch checks the fetches of Go ABI words: registers, stack
// slots from the stack pointer, and the goroutine id through g.
func TestWordFetch(t *testing.T) {
	reg := func(m elf.Machine, name string) Reg {
		off, err := PtRegs(m, name)
		if err != nil {
			t.Fatal(err)
		}
		return Reg{Off: off, Width: 8}
	}
	x86, arm := elf.EM_X86_64, elf.EM_AARCH64
	tests := []struct {
		name   string
		m      elf.Machine
		reg    string
		sp     int64
		size   int64
		signed bool
		want   Fetch
		bad    bool
	}{
		{"int in rbx", x86, "rbx", 0, 8, true, Fetch{Kind: FetchReg, Size: 8, Signed: true, Reg: reg(x86, "rbx")}, false},
		{"uint8 in rcx", x86, "rcx", 0, 1, false, Fetch{Kind: FetchReg, Size: 1, Reg: reg(x86, "rcx")}, false},
		{"size 0 is 8", x86, "rax", 0, 0, false, Fetch{Kind: FetchReg, Size: 8, Reg: reg(x86, "rax")}, false},
		{"stack", x86, "", 24, 4, true, Fetch{Kind: FetchMem, Size: 4, Signed: true, HasBase: true, Reg: reg(x86, "rsp"), Offset: 24}, false},
		{"arm64 register", arm, "x3", 0, 2, false, Fetch{Kind: FetchReg, Size: 2, Reg: reg(arm, "x3")}, false},
		{"arm64 stack", arm, "", 8, 8, false, Fetch{Kind: FetchMem, Size: 8, HasBase: true, Reg: reg(arm, "sp"), Offset: 8}, false},
		{"odd size", x86, "rax", 0, 3, false, Fetch{}, true},
		{"unknown register", x86, "xmm0", 0, 8, false, Fetch{}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := WordFetch(tt.m, tt.reg, tt.sp, tt.size, tt.signed)
			if (err != nil) != tt.bad || f != tt.want {
				t.Errorf("WordFetch = %+v, %v; want %+v, error %v", f, err, tt.want, tt.bad)
			}
		})
	}
	f, err := GoIDFetch(x86, "r14", 160)
	if want := (Fetch{Kind: FetchMem, Size: 8, HasBase: true, Reg: reg(x86, "r14"), Offset: 160}); err != nil || f != want {
		t.Errorf("GoIDFetch = %+v, %v; want %+v", f, err, want)
	}
	if _, err := GoIDFetch(x86, "r14", -1); err == nil {
		t.Error("GoIDFetch of an unknown offset: no error")
	}
}
