package argread

import (
	"debug/elf"
	"errors"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"

	"github.com/usdtkit/usdtkit/internal/testutil"
)

// TestEmitFetch emits every kind of Fetch, and loads each in a uprobe
// program whose slots are on the stack: the verifier accepts the reads,
// pointer chains included.
func TestEmitFetch(t *testing.T) {
	rdi, _ := PtRegs(elf.EM_X86_64, "rdi")
	rsi, _ := PtRegs(elf.EM_X86_64, "rsi")
	reg := Reg{Off: rdi, Width: 8}
	tests := []struct {
		name string
		f    Fetch
	}{
		{"const", Fetch{Kind: FetchConst, Size: 8, Value: -1}},
		{"wide const", Fetch{Kind: FetchConst, Size: 8, Value: 1 << 40}},
		{"reg", Fetch{Kind: FetchReg, Size: 4, Signed: true, Reg: reg}},
		{"%ah", Fetch{Kind: FetchReg, Size: 1, Reg: Reg{Off: rdi, Width: 1, Shift: 8}}},
		{"mem", Fetch{Kind: FetchMem, Size: 2, HasBase: true, Reg: reg, Offset: -16}},
		{"index", Fetch{Kind: FetchMem, Size: 8, HasBase: true, Reg: reg, HasIndex: true, Index: Reg{Off: rsi, Width: 8}, Scale: 4, Offset: 1 << 33}},
		{"ip-relative", Fetch{Kind: FetchMem, Size: 4, IPRel: true, Offset: 0x1000}},
		{"absolute", Fetch{Kind: FetchMem, Size: 8, Offset: 0x601040}},
		{"chain", Fetch{Kind: FetchMem, Size: 4, Signed: true, HasBase: true, Reg: reg, Offset: 8, Derefs: 2, Path: [MaxDerefs]int32{8, 16}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body, err := EmitFetch(elf.EM_X86_64, &tt.f, 8, 3, "a")
			if err != nil {
				t.Fatal(err)
			}
			insns := asm.Instructions{
				asm.Mov.Reg(FetchCtx, asm.R1),
				asm.Mov.Reg(FetchBase, asm.R10),
				asm.Add.Imm(FetchBase, -16),
				asm.Mov.Imm(FetchFaults, 0),
			}
			insns = append(insns, body...)
			insns = append(insns, asm.Mov.Reg(asm.R0, FetchFaults), asm.Return())
			testutil.RequireBPF(t)
			prog, err := ebpf.NewProgram(&ebpf.ProgramSpec{Type: ebpf.Kprobe, License: "GPL", Instructions: insns})
			if err != nil {
				t.Fatalf("load: %v", err)
			}
			prog.Close()
		})
	}
}

// TestEmitFetchErrors: a Fetch EmitFetch cannot read is a *ConfigError
// naming its field.
func TestEmitFetchErrors(t *testing.T) {
	rdi, _ := PtRegs(elf.EM_X86_64, "rdi")
	tests := []struct {
		name, field string
		f           Fetch
		m           elf.Machine
	}{
		{"size", "Fetch.Size", Fetch{Kind: FetchConst, Size: 3}, elf.EM_X86_64},
		{"register slot", "Fetch.Reg.Off", Fetch{Kind: FetchReg, Reg: Reg{Off: 4, Width: 8}}, elf.EM_X86_64},
		{"too many pointers", "Fetch.Derefs", Fetch{Kind: FetchMem, HasBase: true, Reg: Reg{Off: rdi, Width: 8}, Derefs: MaxDerefs + 1}, elf.EM_X86_64},
		{"path past derefs", "Fetch.Path[1]", Fetch{Kind: FetchMem, Derefs: 1, Path: [MaxDerefs]int32{0, 8}}, elf.EM_X86_64},
		{"ip and base", "Fetch.IPRel", Fetch{Kind: FetchMem, IPRel: true, HasBase: true, Reg: Reg{Off: rdi, Width: 8}}, elf.EM_X86_64},
		{"kind", "Fetch.Kind", Fetch{}, elf.EM_X86_64},
		{"machine", "Machine", Fetch{Kind: FetchConst}, elf.EM_RISCV},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := EmitFetch(tt.m, &tt.f, 0, 0, "a")
			var ce *ConfigError
			if !errors.As(err, &ce) || ce.Field != tt.field {
				t.Errorf("have %v, want a ConfigError of %s", err, tt.field)
			}
		})
	}
	if _, err := EmitFetch(elf.EM_X86_64, &Fetch{Kind: FetchConst}, 0, 31, "a"); err == nil {
		t.Error("fault bit 31: no error")
	}
}
