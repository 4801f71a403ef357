package usdtargs

import (
	"debug/elf"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/usdtkit/usdtkit/internal/bpf/argread"
	"github.com/usdtkit/usdtkit/sdt"
)

// testSymbols resolves "gs" and "garr" like a symbol table would.
func testSymbols(name string) (uint64, error) {
	switch name {
	case "gs":
		return 0x4010, nil
	case "garr":
		return 0x4100, nil
	}
	return 0, fmt.Errorf("no symbol %q", name)
}

func TestArgFetch(t *testing.T) {
	const site = 0x1200
	x := func(name string, width, shift uint8) argread.Reg {
		off, err := argread.PtRegs(elf.EM_X86_64, name)
		if err != nil {
			t.Fatal(err)
		}
		return argread.Reg{Off: off, Width: width, Shift: shift}
	}
	a := func(name string, width uint8) argread.Reg {
		off, err := argread.PtRegs(elf.EM_AARCH64, name)
		if err != nil {
			t.Fatal(err)
		}
		return argread.Reg{Off: off, Width: width}
	}
	tests := []struct {
		m    elf.Machine
		spec string
		want argread.Fetch
	}{
		{elf.EM_X86_64, "-4@%eax", argread.Fetch{Kind: argread.FetchReg, Size: 4, Signed: true, Reg: x("rax", 4, 0)}},
		{elf.EM_X86_64, "1@%ah", argread.Fetch{Kind: argread.FetchReg, Size: 1, Reg: x("rax", 1, 8)}},
		{elf.EM_X86_64, "8@%r9", argread.Fetch{Kind: argread.FetchReg, Size: 8, Reg: x("r9", 8, 0)}},
		{elf.EM_X86_64, "-2@%r10w", argread.Fetch{Kind: argread.FetchReg, Size: 2, Signed: true, Reg: x("r10", 2, 0)}},
		{elf.EM_X86_64, "%rdi", argread.Fetch{Kind: argread.FetchReg, Reg: x("rdi", 8, 0)}},
		{elf.EM_X86_64, "1@$-56", argread.Fetch{Kind: argread.FetchConst, Size: 1, Value: 200}},
		{elf.EM_X86_64, "-8@$-1", argread.Fetch{Kind: argread.FetchConst, Size: 8, Signed: true, Value: -1}},
		{elf.EM_X86_64, "-4@-20(%rbp)", argread.Fetch{Kind: argread.FetchMem, Size: 4, Signed: true, HasBase: true, Reg: x("rbp", 8, 0), Offset: -20}},
		{elf.EM_X86_64, "8@32(%rsp,%r13,8)", argread.Fetch{Kind: argread.FetchMem, Size: 8, HasBase: true, Reg: x("rsp", 8, 0), HasIndex: true, Index: x("r13", 8, 0), Scale: 8, Offset: 32}},
		{elf.EM_X86_64, "4@(%eax)", argread.Fetch{Kind: argread.FetchMem, Size: 4, HasBase: true, Reg: x("rax", 4, 0)}},
		{elf.EM_X86_64, "-4@gs(%rip)", argread.Fetch{Kind: argread.FetchMem, Size: 4, Signed: true, IPRel: true, Offset: 0x4010 - site}},
		{elf.EM_X86_64, "8@gs+24(%rip)", argread.Fetch{Kind: argread.FetchMem, Size: 8, IPRel: true, Offset: 0x4010 + 24 - site}},
		{elf.EM_X86_64, "-4@garr(,%r13,4)", argread.Fetch{Kind: argread.FetchMem, Size: 4, Signed: true, IPRel: true, HasIndex: true, Index: x("r13", 8, 0), Scale: 4, Offset: 0x4100 - site}},
		{elf.EM_X86_64, "8@4096", argread.Fetch{Kind: argread.FetchMem, Size: 8, Offset: 4096}},
		{elf.EM_AARCH64, "-4@w1", argread.Fetch{Kind: argread.FetchReg, Size: 4, Signed: true, Reg: a("x1", 4)}},
		{elf.EM_AARCH64, "8@[sp, 96]", argread.Fetch{Kind: argread.FetchMem, Size: 8, HasBase: true, Reg: a("sp", 8), Offset: 96}},
		{elf.EM_AARCH64, "8@[x0, x1, lsl 3]", argread.Fetch{Kind: argread.FetchMem, Size: 8, HasBase: true, Reg: a("x0", 8), HasIndex: true, Index: a("x1", 8), Scale: 8}},
		{elf.EM_AARCH64, "8@xzr", argread.Fetch{Kind: argread.FetchConst, Size: 8}},
	}
	for _, tc := range tests {
		t.Run(tc.m.String()+"/"+tc.spec, func(t *testing.T) {
			arg, err := sdt.ParseArg(tc.m, tc.spec)
			if err != nil {
				t.Fatal(err)
			}
			have, err := Fetch(arg, site, testSymbols)
			if err != nil || have != tc.want {
				t.Errorf("have %+v, %v\nwant %+v", have, err, tc.want)
			}
		})
	}
}

func TestArgFetchErrors(t *testing.T) {
	tests := []struct {
		m           elf.Machine
		spec        string
		symbols     func(string) (uint64, error)
		unsupported bool
	}{
		{elf.EM_X86_64, "4f@%xmm0", testSymbols, true},
		{elf.EM_X86_64, "16@-32(%rbp)", testSymbols, true},
		{elf.EM_X86_64, "-4@gs(%rip)", nil, true},
		{elf.EM_X86_64, "-4@nosuch(%rip)", testSymbols, false},
		{elf.EM_X86_64, "8@16(%rip)", testSymbols, true},
		{elf.EM_X86_64, "-4@%fs:8", testSymbols, false}, // parse error: TLS
		{elf.EM_AARCH64, "-8@v0", testSymbols, true},
	}
	for _, tc := range tests {
		t.Run(tc.spec, func(t *testing.T) {
			arg, _ := sdt.ParseArg(tc.m, tc.spec)
			have, err := Fetch(arg, 0x1000, tc.symbols)
			var ae *sdt.ArgError
			if !errors.As(err, &ae) || have != (argread.Fetch{}) {
				t.Fatalf("have %+v, %v; want an *ArgError", have, err)
			}
			if errors.Is(err, argread.ErrUnsupported) != tc.unsupported {
				t.Errorf("%v: errors.Is ErrUnsupported = %v, want %v", err, !tc.unsupported, tc.unsupported)
			}
		})
	}
}

// FuzzArgFetch checks that Fetch never panics, fails exactly with an
// *ArgError and a zero Fetch, and that every Fetch it returns is one
// argread.EmitFetch accepts.
func FuzzArgFetch(f *testing.F) {
	// The seeds are package sdt's corpora of argument strings.
	for path, m := range map[string]elf.Machine{
		"../../../sdt/testdata/argspec-x86_64.txt":  elf.EM_X86_64,
		"../../../sdt/testdata/argspec-aarch64.txt": elf.EM_AARCH64,
	} {
		data, err := os.ReadFile(path)
		if err != nil {
			f.Fatal(err)
		}
		n := 0
		for _, l := range strings.Split(string(data), "\n") {
			if l = strings.TrimSpace(l); l == "" || strings.HasPrefix(l, "#") {
				continue
			}
			for _, spec := range sdt.SplitArgs(l) {
				f.Add(uint16(m), spec, uint64(0x1200))
				n++
			}
		}
		if n == 0 {
			f.Fatalf("%s holds no argument strings", path)
		}
	}
	f.Fuzz(func(t *testing.T, machine uint16, spec string, site uint64) {
		m := elf.Machine(machine)
		a, _ := sdt.ParseArg(m, spec)
		fe, err := Fetch(a, site, testSymbols)
		if err != nil {
			var ae *sdt.ArgError
			if !errors.As(err, &ae) || fe != (argread.Fetch{}) {
				t.Fatalf("Fetch(%v %q) = %+v, %v", m, spec, fe, err)
			}
			return
		}
		if _, err := argread.EmitFetch(m, &fe, 0, 0, "arg"); err != nil {
			t.Fatalf("Fetch(%v %q) = %+v, which EmitFetch refuses: %v", m, spec, fe, err)
		}
	})
}
