package main

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/usdtkit/usdtkit/elfnotes"
)

var update = flag.Bool("update", false, "rewrite testdata fixtures and golden files")

// fixture is an ELF file generated with elfnotes.Builder and committed to
// testdata, so that list's output on it is stable across machines.
type fixture struct {
	file    string
	class   elf.Class
	data    elf.Data
	machine elf.Machine
	probes  []elfnotes.Stapsdt
}

const (
	textAddr  = 0x401000
	baseAddr  = 0x403000 // .stapsdt.base
	probeAddr = 0x404000 // semaphores
	noteBase  = 0x402f00 // base written in notes: every address moves by +0x100
)

var fixtures = []fixture{
	{"x86_64.elf", elf.ELFCLASS64, elf.ELFDATA2LSB, elf.EM_X86_64, []elfnotes.Stapsdt{
		{PC: textAddr + 0x10 - 0x100, Semaphore: probeAddr - 0x100, Provider: "app", Name: "request__start",
			Args: "-4@%edi 8@%rsi"},
		{PC: textAddr + 0x20 - 0x100, Provider: "app", Name: "forms",
			Args: "8@16(%rax,%rbx,8) -2@%ah 1@$255 -1@$255 -4@-20(%rbp) 8@-0x10(%r8) 2@%r9w 1@%sil"},
		{PC: textAddr + 0x30 - 0x100, Semaphore: probeAddr + 2 - 0x100, Provider: "app", Name: "request__start",
			Args: "-4@-20(%rbp) 8@$42"},
		{PC: textAddr + 0x40 - 0x100, Provider: "app", Name: "globals",
			Args: "8@counter+8(%rip) -4@8+counter(%rip) 8@counter(%rip) -4@table(,%rax,4)"},
		{PC: textAddr + 0x50 - 0x100, Provider: "app", Name: "bad", Args: "8@%foo -4@%eax"},
		{PC: 0x900000 - 0x100, Provider: "app", Name: "nosite", Args: ""},
	}},
	{"aarch64.elf", elf.ELFCLASS64, elf.ELFDATA2LSB, elf.EM_AARCH64, []elfnotes.Stapsdt{
		{PC: textAddr + 0x10 - 0x100, Semaphore: probeAddr - 0x100, Provider: "app", Name: "request__start",
			Args: "-4@x0 8@[sp, 12] -4@[sp, 36] 8@[x1, x2] -4@w3 8@[x29, -8] -4@4"},
	}},
	{"ppc64.elf", elf.ELFCLASS64, elf.ELFDATA2MSB, elf.EM_PPC64, []elfnotes.Stapsdt{
		{PC: textAddr + 0x10 - 0x100, Provider: "app", Name: "other__arch", Args: "-4@3 8@8(30)"},
	}},
}

func (fx fixture) build(t *testing.T) []byte {
	t.Helper()
	var order binary.ByteOrder = binary.LittleEndian
	if fx.data == elf.ELFDATA2MSB {
		order = binary.BigEndian
	}
	var notes []byte
	for _, p := range fx.probes {
		p.Base = noteBase
		notes = elfnotes.AppendNote(notes, order, elfnotes.OwnerStapsdt, elfnotes.NTStapsdt, p.AppendDesc(nil, fx.class, order))
	}
	b := elfnotes.Builder{
		Class: fx.class, Data: fx.data, Type: elf.ET_EXEC, Machine: fx.machine, Entry: textAddr,
		Sections: []elfnotes.BuildSection{
			{Name: ".text", Type: elf.SHT_PROGBITS, Flags: elf.SHF_ALLOC | elf.SHF_EXECINSTR, Addr: textAddr, Align: 16, Data: bytes.Repeat([]byte{0x90}, 0x60)},
			{Name: ".stapsdt.base", Type: elf.SHT_PROGBITS, Flags: elf.SHF_ALLOC, Addr: baseAddr, Align: 1, Data: []byte{0}},
			{Name: ".probes", Type: elf.SHT_PROGBITS, Flags: elf.SHF_ALLOC | elf.SHF_WRITE, Addr: probeAddr, Align: 2, Data: make([]byte, 4)},
			{Name: ".note.stapsdt", Type: elf.SHT_NOTE, Align: 4, Data: notes},
		},
		Progs: []elfnotes.BuildProg{
			{Type: elf.PT_LOAD, Flags: elf.PF_R | elf.PF_X, Align: 0x1000, Sections: []string{".text"}},
			{Type: elf.PT_LOAD, Flags: elf.PF_R, Align: 0x1000, Sections: []string{".stapsdt.base"}},
			{Type: elf.PT_LOAD, Flags: elf.PF_R | elf.PF_W, Align: 0x1000, Sections: []string{".probes"}},
		},
	}
	data, err := b.Bytes()
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// TestListGolden runs list in text, verbose and JSON form on each fixture
// and compares with testdata/*.golden. Regenerate both with -update.
func TestListGolden(t *testing.T) {
	for _, fx := range fixtures {
		path := filepath.Join("testdata", fx.file)
		want := fx.build(t)
		if *update {
			if err := os.WriteFile(path, want, 0o644); err != nil {
				t.Fatal(err)
			}
		} else if have, err := os.ReadFile(path); err != nil || !bytes.Equal(have, want) {
			t.Fatalf("%s is missing or stale (%v); regenerate with go test -update", path, err)
		}
		for _, v := range []struct {
			suffix string
			args   []string
		}{
			{"list.golden", []string{"list", path}},
			{"list-v.golden", []string{"list", "-v", path}},
			{"list-json.golden", []string{"list", "-o", "json", path}},
		} {
			t.Run(fx.file+"/"+v.suffix, func(t *testing.T) {
				have := usdtkit(t, v.args...)
				golden := filepath.Join("testdata", fx.file[:len(fx.file)-len(".elf")]+"-"+v.suffix)
				if *update {
					if err := os.WriteFile(golden, []byte(have), 0o644); err != nil {
						t.Fatal(err)
					}
					return
				}
				want, err := os.ReadFile(golden)
				if err != nil {
					t.Fatalf("%v (regenerate with go test -update)", err)
				}
				if have != string(want) {
					t.Errorf("usdtkit %v differs from %s:\nhave:\n%s\nwant:\n%s", v.args, golden, have, want)
				}
			})
		}
	}
}
