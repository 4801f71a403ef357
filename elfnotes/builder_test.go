package elfnotes

import (
	"bytes"
	"debug/elf"
	"errors"
	"testing"
)

// TestBuilderHeaders checks that a PT_LOAD with Headers starts at offset 0
// and covers the ELF and program headers, as a shared object's first
// segment does.
func TestBuilderHeaders(t *testing.T) {
	// ELF header (64) + 2 program headers (2*56) = 176; .a aligned to 16
	// is at 176, and at address 176 + 0x10000.
	b := Builder{
		Class: elf.ELFCLASS64, Data: elf.ELFDATA2LSB, Type: elf.ET_DYN, Machine: elf.EM_X86_64,
		Sections: []BuildSection{
			{Name: ".a", Type: elf.SHT_PROGBITS, Flags: elf.SHF_ALLOC, Addr: 0x10000 + 176, Align: 16, Data: []byte{1, 2, 3}},
			{Name: ".b", Type: elf.SHT_PROGBITS, Flags: elf.SHF_ALLOC, Addr: 0x10000 + 180, Align: 4, Data: []byte{4}},
		},
		Progs: []BuildProg{
			{Type: elf.PT_LOAD, Flags: elf.PF_R, Align: 0x1000, Sections: []string{".a", ".b"}, Headers: true},
			{Type: elf.PT_LOAD, Flags: elf.PF_R, Align: 0x1000, Sections: []string{".b"}},
		},
	}
	raw, err := b.Bytes()
	if err != nil {
		t.Fatal(err)
	}
	f, err := elf.NewFile(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	want := []elf.ProgHeader{
		{Type: elf.PT_LOAD, Flags: elf.PF_R, Off: 0, Vaddr: 0x10000, Paddr: 0x10000, Filesz: 181, Memsz: 181, Align: 0x1000},
		{Type: elf.PT_LOAD, Flags: elf.PF_R, Off: 180, Vaddr: 0x10000 + 180, Paddr: 0x10000 + 180, Filesz: 1, Memsz: 1, Align: 0x1000},
	}
	for i, p := range f.Progs {
		if p.ProgHeader != want[i] {
			t.Errorf("segment %d: have %+v, want %+v", i, p.ProgHeader, want[i])
		}
	}
	if s := f.Section(".a"); s.Offset != 176 {
		t.Errorf(".a at offset %d, want 176", s.Offset)
	}
}

func TestBuilderHeadersErrors(t *testing.T) {
	tests := []struct {
		name string
		b    Builder
	}{
		{"no sections", Builder{Class: elf.ELFCLASS64, Data: elf.ELFDATA2LSB,
			Progs: []BuildProg{{Type: elf.PT_LOAD, Headers: true}}}},
		{"address below offset", Builder{Class: elf.ELFCLASS64, Data: elf.ELFDATA2LSB,
			Sections: []BuildSection{{Name: "a", Flags: elf.SHF_ALLOC, Addr: 8, Data: []byte{1}}},
			Progs:    []BuildProg{{Type: elf.PT_LOAD, Sections: []string{"a"}, Headers: true}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := tt.b.Bytes(); !errors.Is(err, ErrBuild) {
				t.Errorf("have %v, want ErrBuild", err)
			}
		})
	}
}
