// Package symtabtest holds test helpers for symtab and its users. It builds
// small ELF files with symbol tables, and reads what GNU readelf says of a
// file's symbols (Readelf) to cross-check a reader.
//
// Layouts are written from the System V gABI and LSB "Symbol Versioning",
// independently of the parser under test.
package symtabtest

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"fmt"
	"testing"

	"github.com/usdtkit/usdtkit/elfnotes"
)

const (
	// Base is the virtual address of file offset 0.
	Base = 0x400000
	// DataOff is the file offset of the first section, past the ELF
	// header and one program header.
	DataOff = 0x100
)

// Sizes of the records the encoders write (gABI Elf32_Sym, Elf64_Sym; LSB
// Elf_Verdef, Elf_Verdaux, Elf_Verneed, Elf_Vernaux).
const (
	Sym32Size   = 16
	Sym64Size   = 24
	VerdefSize  = 20
	VerdauxSize = 8
	VerneedSize = 16
	VernauxSize = 16

	verFlagBase = 0x1 // VER_FLG_BASE
)

// SymEntSize returns the symbol entry size of class c.
func SymEntSize(c elf.Class) int {
	if c == elf.ELFCLASS32 {
		return Sym32Size
	}
	return Sym64Size
}

// Section is one section to lay out; Link, Info and Entsize are written to
// its header as given.
type Section struct {
	Name    string
	Type    elf.SectionType
	Link    uint32
	Info    uint32
	Entsize uint64
	Data    []byte
}

// ELF describes a file to build with Bytes. Section indexes count from 1:
// index 0 is the SHT_NULL entry, and .shstrtab comes last.
type ELF struct {
	Class    elf.Class
	Order    Order
	Type     elf.Type
	NoLoad   bool // omit the PT_LOAD segment
	Sections []Section
}

// SectionOff returns the file offset the builder gives section i (counting
// from 1; 0 is the SHT_NULL entry).
func (e ELF) SectionOff(i int) uint64 {
	off := uint64(DataOff)
	for _, s := range e.Sections[:i-1] {
		off = align16(off + uint64(len(s.Data)))
	}
	return off
}

func align16(n uint64) uint64 { return (n + 15) &^ 15 }

// Bytes returns the encoded file.
func (e ELF) Bytes() []byte {
	is64 := e.Class == elf.ELFCLASS64
	bo := e.Order
	var buf bytes.Buffer
	// Section data.
	body := make([]byte, DataOff)
	offs := make([]uint64, len(e.Sections))
	for i, s := range e.Sections {
		offs[i] = uint64(len(body))
		body = append(body, s.Data...)
		body = append(body, make([]byte, align16(uint64(len(body)))-uint64(len(body)))...)
	}
	// Section name table.
	shstr := []byte{0}
	nameOff := make([]uint32, len(e.Sections)+1)
	for i, s := range e.Sections {
		nameOff[i] = uint32(len(shstr))
		shstr = append(append(shstr, s.Name...), 0)
	}
	nameOff[len(e.Sections)] = uint32(len(shstr))
	shstr = append(append(shstr, ".shstrtab"...), 0)
	shstrOff := uint64(len(body))
	body = append(body, shstr...)
	body = append(body, make([]byte, align16(uint64(len(body)))-uint64(len(body)))...)
	shoff := uint64(len(body))
	shnum := len(e.Sections) + 2

	shentsize, phentsize, ehsize := 40, 32, 52
	if is64 {
		shentsize, phentsize, ehsize = 64, 56, 64
	}
	total := shoff + uint64(shnum*shentsize)
	phnum := 1
	if e.NoLoad {
		phnum = 0
	}

	// ELF header.
	ident := [16]byte{0x7f, 'E', 'L', 'F', byte(e.Class), 1, 1}
	if bo == binary.BigEndian {
		ident[5] = 2
	}
	buf.Write(ident[:])
	w16 := func(v uint16) { buf.Write(bo.AppendUint16(nil, v)) }
	w32 := func(v uint32) { buf.Write(bo.AppendUint32(nil, v)) }
	wa := func(v uint64) { // address-sized
		if is64 {
			buf.Write(bo.AppendUint64(nil, v))
		} else {
			w32(uint32(v))
		}
	}
	w16(uint16(e.Type))
	w16(uint16(elf.EM_X86_64))
	w32(1)
	wa(Base)           // e_entry
	wa(uint64(ehsize)) // e_phoff
	wa(shoff)
	w32(0) // e_flags
	w16(uint16(ehsize))
	w16(uint16(phentsize))
	w16(uint16(phnum))
	w16(uint16(shentsize))
	w16(uint16(shnum))
	w16(uint16(shnum - 1)) // e_shstrndx
	// Program header: PT_LOAD of the whole file.
	if phnum == 1 {
		if is64 {
			w32(uint32(elf.PT_LOAD))
			w32(uint32(elf.PF_R | elf.PF_X))
			wa(0)
			wa(Base)
			wa(Base)
			wa(total)
			wa(total)
			wa(0x1000)
		} else {
			w32(uint32(elf.PT_LOAD))
			wa(0)
			wa(Base)
			wa(Base)
			wa(total)
			wa(total)
			w32(uint32(elf.PF_R | elf.PF_X))
			wa(0x1000)
		}
	}
	out := append(buf.Bytes(), body[buf.Len():]...)
	buf.Reset()
	buf.Write(out)

	// Section headers: null, the given ones, .shstrtab.
	shdr := func(name uint32, typ elf.SectionType, addr, off, size uint64, link, info uint32, entsize uint64) {
		w32(name)
		w32(uint32(typ))
		wa(0) // flags
		wa(addr)
		wa(off)
		wa(size)
		w32(link)
		w32(info)
		wa(8)
		wa(entsize)
	}
	shdr(0, elf.SHT_NULL, 0, 0, 0, 0, 0, 0)
	for i, s := range e.Sections {
		shdr(nameOff[i], s.Type, Base+offs[i], offs[i], uint64(len(s.Data)), s.Link, s.Info, s.Entsize)
	}
	shdr(nameOff[len(e.Sections)], elf.SHT_STRTAB, 0, shstrOff, uint64(len(shstr)), 0, 0, 0)
	return buf.Bytes()
}

// Strtab is a string table: Data holds the names, Offs their offsets.
type Strtab struct {
	Data []byte
	Offs map[string]uint32
}

// NewStrtab returns a string table of names, after the empty name at 0.
func NewStrtab(names ...string) *Strtab {
	t := &Strtab{Data: []byte{0}, Offs: map[string]uint32{"": 0}}
	for _, n := range names {
		t.Offs[n] = uint32(len(t.Data))
		t.Data = append(append(t.Data, n...), 0)
	}
	return t
}

// Sym is one symbol table entry to encode.
type Sym struct {
	Name  uint32 // offset in the string table
	Type  elf.SymType
	Bind  elf.SymBind
	Shndx uint16
	Value uint64
	Size  uint64
}

// EncodeSyms encodes a symbol table, including the null entry 0.
func EncodeSyms(class elf.Class, bo Order, syms ...Sym) []byte {
	var b []byte
	for _, s := range append([]Sym{{}}, syms...) {
		info := elf.ST_INFO(s.Bind, s.Type)
		b = bo.AppendUint32(b, s.Name)
		if class == elf.ELFCLASS64 {
			b = append(b, info, 0)
			b = bo.AppendUint16(b, s.Shndx)
			b = bo.AppendUint64(b, s.Value)
			b = bo.AppendUint64(b, s.Size)
		} else {
			b = bo.AppendUint32(b, uint32(s.Value))
			b = bo.AppendUint32(b, uint32(s.Size))
			b = append(b, info, 0)
			b = bo.AppendUint16(b, s.Shndx)
		}
	}
	return b
}

// EncodeVerdef encodes a .gnu.version_d with a base entry (index 1) and one
// entry per name, indexed from 2.
func EncodeVerdef(bo Order, base uint32, names ...uint32) []byte {
	var b []byte
	all := append([]uint32{base}, names...)
	for i, n := range all {
		flags := uint16(0)
		if i == 0 {
			flags = verFlagBase
		}
		next := uint32(VerdefSize + VerdauxSize)
		if i == len(all)-1 {
			next = 0
		}
		b = bo.AppendUint16(b, 1) // vd_version
		b = bo.AppendUint16(b, flags)
		b = bo.AppendUint16(b, uint16(i+1))
		b = bo.AppendUint16(b, 1) // vd_cnt
		b = bo.AppendUint32(b, 0) // vd_hash
		b = bo.AppendUint32(b, VerdefSize)
		b = bo.AppendUint32(b, next)
		b = bo.AppendUint32(b, n) // vda_name
		b = bo.AppendUint32(b, 0) // vda_next
	}
	return b
}

// EncodeVersym encodes a .gnu.version: index 0 for the null symbol, then ndx.
func EncodeVersym(bo Order, ndx ...uint16) []byte {
	b := bo.AppendUint16(nil, 0) // null symbol
	for _, n := range ndx {
		b = bo.AppendUint16(b, n)
	}
	return b
}

// Lib returns a small shared object of the given class and byte order:
// .text (section 1), .symtab+.strtab (2, 3), .dynsym+.dynstr (4, 5),
// .gnu.version (6) and .gnu.version_d (7). It defines
//
//	f1  FUNC  GLOBAL at text+0x0 size 4   (both tables; version V1)
//	f2  IFUNC GLOBAL at text+0x4 size 0   (.dynsym only; hidden version V2)
//	loc FUNC  LOCAL  at text+0x8 size 8   (.symtab only)
//	obj OBJECT at text+0x10, und FUNC UNDEF (neither listed)
func Lib(class elf.Class, bo Order) ELF {
	text := make([]byte, 0x20)
	textAddr := uint64(Base + DataOff)
	str := NewStrtab("f1", "loc", "obj", "und")
	dynstr := NewStrtab("f1", "f2", "und", "lib.so", "V1", "V2")
	e := ELF{Class: class, Order: bo, Type: elf.ET_DYN}
	size := uint64(SymEntSize(class))
	e.Sections = []Section{
		{Name: ".text", Type: elf.SHT_PROGBITS, Data: text},
		{Name: ".symtab", Type: elf.SHT_SYMTAB, Link: 3, Entsize: size, Data: EncodeSyms(class, bo,
			Sym{Name: str.Offs["f1"], Type: elf.STT_FUNC, Bind: elf.STB_GLOBAL, Shndx: 1, Value: textAddr, Size: 4},
			Sym{Name: str.Offs["loc"], Type: elf.STT_FUNC, Bind: elf.STB_LOCAL, Shndx: 1, Value: textAddr + 8, Size: 8},
			Sym{Name: str.Offs["obj"], Type: elf.STT_OBJECT, Bind: elf.STB_GLOBAL, Shndx: 1, Value: textAddr + 0x10, Size: 8},
			Sym{Name: str.Offs["und"], Type: elf.STT_FUNC, Bind: elf.STB_GLOBAL},
		)},
		{Name: ".strtab", Type: elf.SHT_STRTAB, Data: str.Data},
		{Name: ".dynsym", Type: elf.SHT_DYNSYM, Link: 5, Entsize: size, Data: EncodeSyms(class, bo,
			Sym{Name: dynstr.Offs["f1"], Type: elf.STT_FUNC, Bind: elf.STB_GLOBAL, Shndx: 1, Value: textAddr, Size: 4},
			Sym{Name: dynstr.Offs["f2"], Type: elf.STT_GNU_IFUNC, Bind: elf.STB_GLOBAL, Shndx: 1, Value: textAddr + 4},
			Sym{Name: dynstr.Offs["und"], Type: elf.STT_FUNC, Bind: elf.STB_GLOBAL},
		)},
		{Name: ".dynstr", Type: elf.SHT_STRTAB, Data: dynstr.Data},
		{Name: ".gnu.version", Type: elf.SHT_GNU_VERSYM, Link: 4, Entsize: 2, Data: EncodeVersym(bo, 2, 0x8000|3, 0)},
		{Name: ".gnu.version_d", Type: elf.SHT_GNU_VERDEF, Link: 5, Info: 3,
			Data: EncodeVerdef(bo, dynstr.Offs["lib.so"], dynstr.Offs["V1"], dynstr.Offs["V2"])},
	}
	return e
}

// Order is binary.LittleEndian or binary.BigEndian.
type Order interface {
	binary.ByteOrder
	binary.AppendByteOrder
}

// Layout is the class and byte order of a file to build.
type Layout struct {
	Class elf.Class
	Order Order
}

func (l Layout) String() string { return fmt.Sprintf("%v/%v", l.Class, l.Order) }

// Layouts returns the four layouts a reader must handle: ELF64 and ELF32,
// each little- and big-endian.
func Layouts() []Layout {
	return []Layout{
		{elf.ELFCLASS64, binary.LittleEndian},
		{elf.ELFCLASS64, binary.BigEndian},
		{elf.ELFCLASS32, binary.LittleEndian},
		{elf.ELFCLASS32, binary.BigEndian},
	}
}

// NewFile parses b with elfnotes.NewFile and fails the test if it can't.
func NewFile(tb testing.TB, b []byte) *elfnotes.File {
	tb.Helper()
	f, err := elfnotes.NewFile(bytes.NewReader(b))
	if err != nil {
		tb.Fatalf("elfnotes.NewFile: %v", err)
	}
	return f
}
