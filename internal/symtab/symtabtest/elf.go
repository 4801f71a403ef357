package uprobe

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
)

// This file builds small ELF files for tests and fuzz seeds: a header, one
// PT_LOAD segment mapping the whole file at testBase, and the given sections
// laid out from testDataOff in order, each 16-byte aligned.

const (
	testBase    = 0x400000
	testDataOff = 0x100 // past the ELF header and one program header
)

type testSection struct {
	name    string
	typ     elf.SectionType
	link    uint32
	info    uint32
	entsize uint64
	data    []byte
}

type testELF struct {
	class    elf.Class
	order    testOrder
	typ      elf.Type
	noLoad   bool // omit the PT_LOAD segment
	sections []testSection
}

// sectionOff returns the file offset the builder gives section i (counting
// from 1; 0 is the SHT_NULL entry).
func (e testELF) sectionOff(i int) uint64 {
	off := uint64(testDataOff)
	for _, s := range e.sections[:i-1] {
		off = align16(off + uint64(len(s.data)))
	}
	return off
}

func align16(n uint64) uint64 { return (n + 15) &^ 15 }

func (e testELF) bytes() []byte {
	is64 := e.class == elf.ELFCLASS64
	bo := e.order
	var buf bytes.Buffer
	// Section data.
	body := make([]byte, testDataOff)
	offs := make([]uint64, len(e.sections))
	for i, s := range e.sections {
		offs[i] = uint64(len(body))
		body = append(body, s.data...)
		body = append(body, make([]byte, align16(uint64(len(body)))-uint64(len(body)))...)
	}
	// Section name table.
	shstr := []byte{0}
	nameOff := make([]uint32, len(e.sections)+1)
	for i, s := range e.sections {
		nameOff[i] = uint32(len(shstr))
		shstr = append(append(shstr, s.name...), 0)
	}
	nameOff[len(e.sections)] = uint32(len(shstr))
	shstr = append(append(shstr, ".shstrtab"...), 0)
	shstrOff := uint64(len(body))
	body = append(body, shstr...)
	body = append(body, make([]byte, align16(uint64(len(body)))-uint64(len(body)))...)
	shoff := uint64(len(body))
	shnum := len(e.sections) + 2

	shentsize, phentsize, ehsize := 40, 32, 52
	if is64 {
		shentsize, phentsize, ehsize = 64, 56, 64
	}
	total := shoff + uint64(shnum*shentsize)
	phnum := 1
	if e.noLoad {
		phnum = 0
	}

	// ELF header.
	ident := [16]byte{0x7f, 'E', 'L', 'F', byte(e.class), 1, 1}
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
	w16(uint16(e.typ))
	w16(uint16(elf.EM_X86_64))
	w32(1)
	wa(testBase)       // e_entry
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
			wa(testBase)
			wa(testBase)
			wa(total)
			wa(total)
			wa(0x1000)
		} else {
			w32(uint32(elf.PT_LOAD))
			wa(0)
			wa(testBase)
			wa(testBase)
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
	for i, s := range e.sections {
		shdr(nameOff[i], s.typ, testBase+offs[i], offs[i], uint64(len(s.data)), s.link, s.info, s.entsize)
	}
	shdr(nameOff[len(e.sections)], elf.SHT_STRTAB, 0, shstrOff, uint64(len(shstr)), 0, 0, 0)
	return buf.Bytes()
}

// testStrtab builds a string table; off returns a name's offset.
type testStrtab struct {
	data []byte
	offs map[string]uint32
}

func newTestStrtab(names ...string) *testStrtab {
	t := &testStrtab{data: []byte{0}, offs: map[string]uint32{"": 0}}
	for _, n := range names {
		t.offs[n] = uint32(len(t.data))
		t.data = append(append(t.data, n...), 0)
	}
	return t
}

// testSym is one symbol table entry to encode.
type testSym struct {
	name  uint32
	typ   elf.SymType
	bind  elf.SymBind
	shndx uint16
	value uint64
	size  uint64
}

// encodeSyms encodes a symbol table, including the null entry 0.
func encodeSyms(class elf.Class, bo testOrder, syms ...testSym) []byte {
	var b []byte
	for _, s := range append([]testSym{{}}, syms...) {
		info := elf.ST_INFO(s.bind, s.typ)
		b = bo.AppendUint32(b, s.name)
		if class == elf.ELFCLASS64 {
			b = append(b, info, 0)
			b = bo.AppendUint16(b, s.shndx)
			b = bo.AppendUint64(b, s.value)
			b = bo.AppendUint64(b, s.size)
		} else {
			b = bo.AppendUint32(b, uint32(s.value))
			b = bo.AppendUint32(b, uint32(s.size))
			b = append(b, info, 0)
			b = bo.AppendUint16(b, s.shndx)
		}
	}
	return b
}

// encodeVerdef encodes a .gnu.version_d with a base entry (index 1) and one
// entry per name, indexed from 2.
func encodeVerdef(bo testOrder, base uint32, names ...uint32) []byte {
	var b []byte
	all := append([]uint32{base}, names...)
	for i, n := range all {
		flags := uint16(0)
		if i == 0 {
			flags = verFlagBase
		}
		next := uint32(verdefSize + verdauxSize)
		if i == len(all)-1 {
			next = 0
		}
		b = bo.AppendUint16(b, 1) // vd_version
		b = bo.AppendUint16(b, flags)
		b = bo.AppendUint16(b, uint16(i+1))
		b = bo.AppendUint16(b, 1) // vd_cnt
		b = bo.AppendUint32(b, 0) // vd_hash
		b = bo.AppendUint32(b, verdefSize)
		b = bo.AppendUint32(b, next)
		b = bo.AppendUint32(b, n) // vda_name
		b = bo.AppendUint32(b, 0) // vda_next
	}
	return b
}

func encodeVersym(bo testOrder, ndx ...uint16) []byte {
	b := bo.AppendUint16(nil, 0) // null symbol
	for _, n := range ndx {
		b = bo.AppendUint16(b, n)
	}
	return b
}

// testLib returns a small shared object of the given class and byte order:
// .text (section 1), .symtab+.strtab (2, 3), .dynsym+.dynstr (4, 5),
// .gnu.version (6) and .gnu.version_d (7). It defines
//
//	f1  FUNC  GLOBAL at text+0x0 size 4   (both tables; version V1)
//	f2  IFUNC GLOBAL at text+0x4 size 0   (.dynsym only; hidden version V2)
//	loc FUNC  LOCAL  at text+0x8 size 8   (.symtab only)
//	obj OBJECT at text+0x10, und FUNC UNDEF (neither listed)
func testLib(class elf.Class, bo testOrder) testELF {
	text := make([]byte, 0x20)
	textAddr := uint64(testBase + testDataOff)
	str := newTestStrtab("f1", "loc", "obj", "und")
	dynstr := newTestStrtab("f1", "f2", "und", "lib.so", "V1", "V2")
	e := testELF{class: class, order: bo, typ: elf.ET_DYN}
	size := uint64(symEntSize(class))
	e.sections = []testSection{
		{name: ".text", typ: elf.SHT_PROGBITS, data: text},
		{name: ".symtab", typ: elf.SHT_SYMTAB, link: 3, entsize: size, data: encodeSyms(class, bo,
			testSym{name: str.offs["f1"], typ: elf.STT_FUNC, bind: elf.STB_GLOBAL, shndx: 1, value: textAddr, size: 4},
			testSym{name: str.offs["loc"], typ: elf.STT_FUNC, bind: elf.STB_LOCAL, shndx: 1, value: textAddr + 8, size: 8},
			testSym{name: str.offs["obj"], typ: elf.STT_OBJECT, bind: elf.STB_GLOBAL, shndx: 1, value: textAddr + 0x10, size: 8},
			testSym{name: str.offs["und"], typ: elf.STT_FUNC, bind: elf.STB_GLOBAL},
		)},
		{name: ".strtab", typ: elf.SHT_STRTAB, data: str.data},
		{name: ".dynsym", typ: elf.SHT_DYNSYM, link: 5, entsize: size, data: encodeSyms(class, bo,
			testSym{name: dynstr.offs["f1"], typ: elf.STT_FUNC, bind: elf.STB_GLOBAL, shndx: 1, value: textAddr, size: 4},
			testSym{name: dynstr.offs["f2"], typ: elf.STT_GNU_IFUNC, bind: elf.STB_GLOBAL, shndx: 1, value: textAddr + 4},
			testSym{name: dynstr.offs["und"], typ: elf.STT_FUNC, bind: elf.STB_GLOBAL},
		)},
		{name: ".dynstr", typ: elf.SHT_STRTAB, data: dynstr.data},
		{name: ".gnu.version", typ: elf.SHT_GNU_VERSYM, link: 4, entsize: 2, data: encodeVersym(bo, 2, 0x8000|3, 0)},
		{name: ".gnu.version_d", typ: elf.SHT_GNU_VERDEF, link: 5, info: 3,
			data: encodeVerdef(bo, dynstr.offs["lib.so"], dynstr.offs["V1"], dynstr.offs["V2"])},
	}
	return e
}

// testOrder is binary.LittleEndian or binary.BigEndian.
type testOrder interface {
	binary.ByteOrder
	binary.AppendByteOrder
}
