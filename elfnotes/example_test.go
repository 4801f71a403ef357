package elfnotes_test

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"fmt"
	"log"
	"os"

	"github.com/usdtkit/usdtkit/elfnotes"
)

// List the SDT probes of a file with their file offsets, as a uprobe needs
// them. The fixture's .stapsdt.base moved by 0x100 after the notes were
// written, so the adjusted addresses differ from the raw PCs.
func ExampleFile_SDTProbes() {
	f, err := elfnotes.Open("testdata/sdt-elf64le.elf")
	if err != nil {
		log.Fatal(err)
	}
	defer f.Close()

	probes, err := f.SDTProbes()
	if err != nil {
		log.Fatal(err)
	}
	for _, p := range probes {
		off, err := f.AddrToOffset(p.Addr)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("%s:%s pc=%#x addr=%#x offset=%#x semaphore=%#x args=%q\n",
			p.Provider, p.Name, p.PC, p.Addr, off, p.SemaphoreAddr, p.Args)
	}
	// Output:
	// prov:with_sema pc=0x400f10 addr=0x401010 offset=0x1010 semaphore=0x403004 args="-4@%eax 8@16(%rsp)"
	// prov:no_args pc=0x400f20 addr=0x401020 offset=0x1020 semaphore=0x0 args=""
	// other:x pc=0x400f21 addr=0x401021 offset=0x1021 semaphore=0x0 args="1@$5"
}

// Build a note record holding one SDT probe descriptor and read it back.
func ExampleAppendNote() {
	s := elfnotes.Stapsdt{PC: 0x1000, Provider: "app", Name: "start", Args: "8@%rdi"}
	desc := s.AppendDesc(nil, elf.ELFCLASS64, binary.LittleEndian)
	note := elfnotes.AppendNote(nil, binary.LittleEndian, elfnotes.OwnerStapsdt, elfnotes.NTStapsdt, desc)
	fmt.Println(len(note), "bytes")

	back, err := elfnotes.ParseStapsdt(desc, elf.ELFCLASS64, binary.LittleEndian)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%s:%s at %#x\n", back.Provider, back.Name, back.PC)
	// Output:
	// 64 bytes
	// app:start at 0x1000
}

// Damage stays local: a broken NT_STAPSDT note is skipped with a warning
// that gives its file offset, and the other probes are listed.
func ExampleFile_ReadSDTProbes() {
	raw, err := os.ReadFile("testdata/sdt-elf64le.elf")
	if err != nil {
		log.Fatal(err)
	}
	f, err := elfnotes.NewFile(bytes.NewReader(raw))
	if err != nil {
		log.Fatal(err)
	}
	good, err := f.SDTProbes()
	if err != nil {
		log.Fatal(err)
	}
	// Overwrite the NUL that ends the second note's argument string: the
	// header (12 bytes) and the owner ("stapsdt\x00") precede the
	// descriptor.
	n := good[1].NoteOffset
	end := n + 12 + 8 + uint64(binary.LittleEndian.Uint32(raw[n+4:]))
	raw[end-1] = 'x'

	probes, warnings, err := f.ReadSDTProbes()
	if err != nil {
		log.Fatal(err)
	}
	for _, p := range probes {
		fmt.Printf("%s:%s\n", p.Provider, p.Name)
	}
	for _, w := range warnings {
		fmt.Println("warning:", w)
	}
	// Output:
	// prov:with_sema
	// other:x
	// warning: stapsdt arguments not NUL-terminated at byte 0x2099
}
