package elfnotes

import (
	"debug/elf"
	"encoding/binary"
	"testing"
)

// Addresses of the generated fixtures. The notes record .stapsdt.base at
// fixNoteBase; when the fixture has the section, it sits fixDelta higher,
// so adjusted addresses are raw + fixDelta.
const (
	fixText     = 0x401000
	fixBase     = 0x402000 // final address of .stapsdt.base
	fixData     = 0x403000
	fixDelta    = 0x100
	fixNoteBase = fixBase - fixDelta
)

type fixtureOpts struct {
	class            elf.Class
	data             elf.Data
	baseSection      bool // add .stapsdt.base at fixBase
	nobitsNotes      bool // .note.stapsdt is SHT_NOBITS, as in a debug file
	noSectionHeaders bool // only PT_NOTE segments describe the notes
}

// fixtureProbes are the notes every fixture carries, with link-time values.
var fixtureProbes = []Stapsdt{
	{PC: fixText + 0x10 - fixDelta, Base: fixNoteBase, Semaphore: fixData + 4 - fixDelta, Provider: "prov", Name: "with_sema", Args: "-4@%eax 8@16(%rsp)"},
	{PC: fixText + 0x20 - fixDelta, Base: fixNoteBase, Semaphore: 0, Provider: "prov", Name: "no_args", Args: ""},
	{PC: fixText + 0x21 - fixDelta, Base: fixNoteBase, Semaphore: 0, Provider: "other", Name: "x", Args: "1@$5"},
}

func byteOrder(d elf.Data) binary.ByteOrder {
	if d == elf.ELFDATA2MSB {
		return binary.BigEndian
	}
	return binary.LittleEndian
}

// buildFixture returns a small ELF file: .text, .stapsdt.base, .data, a
// build-ID note and .note.stapsdt with fixtureProbes.
func buildFixture(tb testing.TB, o fixtureOpts) []byte {
	tb.Helper()
	bo := byteOrder(o.data)
	var sdt []byte
	for _, p := range fixtureProbes {
		sdt = AppendNote(sdt, bo, OwnerStapsdt, NTStapsdt, p.AppendDesc(nil, o.class, bo))
	}
	buildID := AppendNote(nil, bo, OwnerGNU, NTGNUBuildID, []byte{0xde, 0xad, 0xbe, 0xef, 1, 2, 3, 4})
	text := make([]byte, 0x40)
	for i := range text {
		text[i] = 0x90
	}
	secs := []BuildSection{
		{Name: ".note.gnu.build-id", Type: elf.SHT_NOTE, Flags: elf.SHF_ALLOC, Addr: 0x400200, Align: 4, Data: buildID},
		{Name: ".text", Type: elf.SHT_PROGBITS, Flags: elf.SHF_ALLOC | elf.SHF_EXECINSTR, Addr: fixText, Align: 16, Data: text},
	}
	if o.baseSection {
		secs = append(secs, BuildSection{Name: StapsdtBaseSection, Type: elf.SHT_PROGBITS, Flags: elf.SHF_ALLOC, Addr: fixBase, Align: 1, Data: []byte{0}})
	}
	secs = append(secs,
		BuildSection{Name: ".data", Type: elf.SHT_PROGBITS, Flags: elf.SHF_ALLOC | elf.SHF_WRITE, Addr: fixData, Align: 8, Data: make([]byte, 16)},
		BuildSection{Name: ".bss", Type: elf.SHT_NOBITS, Flags: elf.SHF_ALLOC | elf.SHF_WRITE, Addr: fixData + 16, Align: 8, Size: 64},
	)
	sdtSec := BuildSection{Name: ".note.stapsdt", Type: elf.SHT_NOTE, Align: 4, Data: sdt}
	if o.nobitsNotes {
		sdtSec = BuildSection{Name: ".note.stapsdt", Type: elf.SHT_NOBITS, Align: 4, Size: uint64(len(sdt))}
	}
	secs = append(secs, sdtSec)

	textLoad := []string{".text"}
	if o.baseSection {
		textLoad = append(textLoad, StapsdtBaseSection)
	}
	progs := []BuildProg{
		{Type: elf.PT_LOAD, Flags: elf.PF_R, Align: 0x1000, Sections: []string{".note.gnu.build-id"}},
		{Type: elf.PT_LOAD, Flags: elf.PF_R | elf.PF_X, Align: 0x1000, Sections: textLoad},
		{Type: elf.PT_LOAD, Flags: elf.PF_R | elf.PF_W, Align: 0x1000, Sections: []string{".data", ".bss"}},
		{Type: elf.PT_NOTE, Flags: elf.PF_R, Align: 4, Sections: []string{".note.gnu.build-id"}},
	}
	if o.noSectionHeaders {
		// Without section headers a reader can find the SDT notes only
		// through a segment.
		progs = append(progs, BuildProg{Type: elf.PT_NOTE, Flags: elf.PF_R, Align: 4, Sections: []string{".note.stapsdt"}})
	}
	progs = append(progs, BuildProg{Type: elf.PT_GNU_STACK, Flags: elf.PF_R | elf.PF_W})
	b := Builder{
		Class:            o.class,
		Data:             o.data,
		Type:             elf.ET_EXEC,
		Machine:          elf.EM_X86_64,
		Entry:            fixText,
		Sections:         secs,
		Progs:            progs,
		NoSectionHeaders: o.noSectionHeaders,
	}
	out, err := b.Bytes()
	if err != nil {
		tb.Fatal(err)
	}
	return out
}

// classes lists the four ELF flavours every fixture test runs on.
var classes = []struct {
	name  string
	class elf.Class
	data  elf.Data
}{
	{"elf32le", elf.ELFCLASS32, elf.ELFDATA2LSB},
	{"elf32be", elf.ELFCLASS32, elf.ELFDATA2MSB},
	{"elf64le", elf.ELFCLASS64, elf.ELFDATA2LSB},
	{"elf64be", elf.ELFCLASS64, elf.ELFDATA2MSB},
}
