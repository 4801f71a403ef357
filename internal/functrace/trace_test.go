package functrace

import (
	"debug/elf"
	"errors"
	"os"
	"testing"

	"github.com/usdtkit/usdtkit/internal/bpfgen"
	"github.com/usdtkit/usdtkit/internal/procfs"
	"github.com/usdtkit/usdtkit/uprobe"
)

// TestTraceRefusesAnotherFile gives Trace functions whose recorded file
// identity is not the file's at the path any more: Trace must refuse them
// (before loading anything) instead of attaching to whatever the path
// names now.
func TestTraceRefusesAnotherFile(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	sel, err := uprobe.ParseSelector("uprobe:" + exe + ":main.main")
	if err != nil {
		t.Fatal(err)
	}
	fns, err := uprobe.Functions(&uprobe.ListOptions{Selectors: []uprobe.Selector{sel}})
	if err != nil || len(fns) == 0 {
		t.Fatalf("Functions: %v, %d", err, len(fns))
	}
	if fns[0].Dev == 0 && fns[0].Inode == 0 {
		t.Fatal("Functions recorded no file identity")
	}
	for _, native := range []bool{false, true} {
		fn := fns[0]
		fn.Inode++
		if native {
			fn.Delta = 1 // a native site inside the function
		}
		tr, err := Trace(&TraceOptions{Functions: []uprobe.Function{fn}})
		if tr != nil {
			tr.Close()
		}
		if !errors.Is(err, procfs.ErrChanged) {
			t.Errorf("native %v: have %v, want ErrChanged", native, err)
		}
	}
}

func TestSiteArgs(t *testing.T) {
	reg := func(m elf.Machine, name string) bpfgen.Reg {
		off, err := bpfgen.PtRegs(m, name)
		if err != nil {
			t.Fatal(err)
		}
		return bpfgen.Reg{Off: off, Width: 8}
	}
	tests := []struct {
		name string
		m    elf.Machine
		ret  bool
		want []string
	}{
		{"x86-64 entry", elf.EM_X86_64, false, []string{"rdi", "rsi", "rdx", "rcx", "r8", "r9"}},
		{"x86-64 return", elf.EM_X86_64, true, []string{"rax"}},
		{"arm64 entry", elf.EM_AARCH64, false, []string{"x0", "x1", "x2", "x3", "x4", "x5"}},
		{"arm64 return", elf.EM_AARCH64, true, []string{"x0"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			have, err := siteArgs(tt.m, tt.ret)
			if err != nil {
				t.Fatal(err)
			}
			if len(have) != len(tt.want) {
				t.Fatalf("have %d args, want %d", len(have), len(tt.want))
			}
			for i, r := range tt.want {
				want := bpfgen.Fetch{Kind: bpfgen.FetchReg, Size: 8, Reg: reg(tt.m, r)}
				if have[i] != want {
					t.Errorf("arg%d: have %+v, want %+v (%s)", i, have[i], want, r)
				}
			}
		})
	}
	if _, err := siteArgs(elf.EM_RISCV, false); !errors.Is(err, uprobe.ErrUnsupportedArch) {
		t.Errorf("riscv: have %v, want ErrUnsupportedArch", err)
	}
}

func TestTraceNoFunctions(t *testing.T) {
	if _, err := Trace(nil); !errors.Is(err, ErrNoFunctions) {
		t.Errorf("nil options: have %v, want ErrNoFunctions", err)
	}
}
