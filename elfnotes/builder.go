package elfnotes

import (
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
)

// A Builder lays out a minimal ELF file from a list of sections and the
// segments that span them. It places bytes and writes headers; it does not
// link, relocate or create symbols. Tests use it to make fixtures, and it is
// enough to write a small object holding SDT notes.
//
// The layout is: ELF header, program headers, the sections in order (each
// at its alignment; the first section of a PT_LOAD segment also at an
// offset congruent to its address modulo the segment alignment, as the
// loader needs), .shstrtab, and the section header table. Section 0
// (SHT_NULL) and .shstrtab are added by the Builder.
//
// A Builder is plain data; Bytes does not modify it.
type Builder struct {
	Class   elf.Class // ELFCLASS32 or ELFCLASS64
	Data    elf.Data  // ELFDATA2LSB or ELFDATA2MSB
	Type    elf.Type
	Machine elf.Machine
	Entry   uint64

	Sections []BuildSection
	Progs    []BuildProg

	// NoSectionHeaders leaves out .shstrtab and the section header table
	// (e_shoff, e_shnum and e_shstrndx are 0); the section contents are
	// still written so that segments can cover them.
	NoSectionHeaders bool
}

// A BuildSection is one section for a [Builder]. Builder.Sections[i] gets
// section index i+1 in the file; Link and Info are written as given, so
// they must use those indexes.
type BuildSection struct {
	Name    string
	Type    elf.SectionType
	Flags   elf.SectionFlag
	Addr    uint64
	Align   uint64 // sh_addralign and file alignment; a power of two, 0 means 1
	Link    uint32
	Info    uint32
	Entsize uint64
	Data    []byte // contents; must be empty for SHT_NOBITS
	Size    uint64 // size of a SHT_NOBITS section; ignored for other types
}

// A BuildProg is one program header for a [Builder]. It spans the named
// sections, which must be consecutive in Builder.Sections: Off and Vaddr
// (and Paddr) are those of the first, Filesz reaches the end of the last
// section with file contents and Memsz the end of the last one. A BuildProg
// without sections (PT_GNU_STACK) has all of those zero.
type BuildProg struct {
	Type     elf.ProgType
	Flags    elf.ProgFlag
	Align    uint64
	Sections []string
	// Headers extends the segment down to the start of the file, so that
	// it also covers the ELF header and the program headers, as the first
	// PT_LOAD of a shared object does: Off is 0 and Vaddr is the first
	// section's address minus its file offset, which must not be negative.
	// It needs at least one section.
	Headers bool
}

// ErrBuild is wrapped by [Builder.Bytes] when the description is
// inconsistent.
var ErrBuild = errors.New("invalid ELF description")

// Bytes lays out and returns the file. Inconsistent input (an unknown class
// or data encoding, a value too wide for ELF32, an alignment that is not a
// power of two, a segment naming missing or non-consecutive sections) gives
// an error wrapping [ErrBuild].
func (b *Builder) Bytes() ([]byte, error) {
	var bo binary.ByteOrder
	switch b.Data {
	case elf.ELFDATA2LSB:
		bo = binary.LittleEndian
	case elf.ELFDATA2MSB:
		bo = binary.BigEndian
	default:
		return nil, fmt.Errorf("data encoding %v: %w", b.Data, ErrBuild)
	}
	var ehsize, phentsize, shentsize uint64
	switch b.Class {
	case elf.ELFCLASS32:
		ehsize, phentsize, shentsize = ehdr32, phdr32, shdr32
	case elf.ELFCLASS64:
		ehsize, phentsize, shentsize = ehdr64, phdr64, shdr64
	default:
		return nil, fmt.Errorf("class %v: %w", b.Class, ErrBuild)
	}
	is64 := b.Class == elf.ELFCLASS64
	fits := func(v uint64) bool { return is64 || v <= math.MaxUint32 }

	secs := append([]BuildSection(nil), b.Sections...)
	index := make(map[string]int, len(secs))
	for i, s := range secs {
		if _, dup := index[s.Name]; !dup {
			index[s.Name] = i
		}
		if s.Align&(s.Align-1) != 0 {
			return nil, fmt.Errorf("section %q: alignment %d not a power of two: %w", s.Name, s.Align, ErrBuild)
		}
		if s.Type == elf.SHT_NOBITS && len(s.Data) > 0 {
			return nil, fmt.Errorf("section %q: SHT_NOBITS with data: %w", s.Name, ErrBuild)
		}
		if !fits(s.Addr) || !fits(s.Size) || !fits(uint64(len(s.Data))) || !fits(s.Align) || !fits(s.Entsize) {
			return nil, fmt.Errorf("section %q: value too wide for ELF32: %w", s.Name, ErrBuild)
		}
	}

	// Segment spans and the congruence each PT_LOAD imposes on its first
	// section.
	type span struct{ first, last int }
	spans := make([]span, len(b.Progs))
	loadAlign := make([]uint64, len(secs))
	for i, p := range b.Progs {
		spans[i] = span{-1, -1}
		for j, name := range p.Sections {
			k, ok := index[name]
			if !ok {
				return nil, fmt.Errorf("segment %d: no section %q: %w", i, name, ErrBuild)
			}
			if j > 0 && k != spans[i].last+1 {
				return nil, fmt.Errorf("segment %d: section %q not after %q: %w", i, name, p.Sections[j-1], ErrBuild)
			}
			if j == 0 {
				spans[i].first = k
			}
			spans[i].last = k
		}
		if p.Align&(p.Align-1) != 0 || !fits(p.Align) {
			return nil, fmt.Errorf("segment %d: bad alignment %d: %w", i, p.Align, ErrBuild)
		}
		if p.Headers && spans[i].first < 0 {
			return nil, fmt.Errorf("segment %d: Headers without sections: %w", i, ErrBuild)
		}
		if p.Type == elf.PT_LOAD && spans[i].first >= 0 && p.Align > 1 {
			loadAlign[spans[i].first] = max(loadAlign[spans[i].first], p.Align)
		}
	}

	// Lay out the file.
	off := ehsize
	phoff := uint64(0)
	if len(b.Progs) > 0 {
		phoff = off
		off += uint64(len(b.Progs)) * phentsize
	}
	offsets := make([]uint64, len(secs))
	sizes := make([]uint64, len(secs))
	for i, s := range secs {
		off = alignUp(off, max(s.Align, 1))
		if la := loadAlign[i]; la > 1 {
			off += (s.Addr%la + la - off%la) % la
		}
		offsets[i] = off
		if s.Type == elf.SHT_NOBITS {
			sizes[i] = s.Size
		} else {
			sizes[i] = uint64(len(s.Data))
			off += sizes[i]
		}
	}
	var shstrtab []byte
	nameOff := make([]uint32, len(secs)+1)
	var shstrOff, shoff uint64
	if !b.NoSectionHeaders {
		shstrtab = []byte{0}
		for i, s := range secs {
			nameOff[i] = uint32(len(shstrtab))
			shstrtab = append(append(shstrtab, s.Name...), 0)
		}
		nameOff[len(secs)] = uint32(len(shstrtab))
		shstrtab = append(shstrtab, ".shstrtab\x00"...)
		shstrOff = off
		off += uint64(len(shstrtab))
		off = alignUp(off, 8)
		shoff = off
		off += uint64(len(secs)+2) * shentsize
	}
	if !fits(off) {
		return nil, fmt.Errorf("file size %#x too large for ELF32: %w", off, ErrBuild)
	}

	out := make([]byte, off)
	copy(out, elf.ELFMAG)
	out[elf.EI_CLASS] = byte(b.Class)
	out[elf.EI_DATA] = byte(b.Data)
	out[elf.EI_VERSION] = byte(elf.EV_CURRENT)
	w := fieldWriter{out: out, bo: bo, is64: is64}
	bo.PutUint16(out[16:], uint16(b.Type))
	bo.PutUint16(out[18:], uint16(b.Machine))
	bo.PutUint32(out[20:], uint32(elf.EV_CURRENT))
	shnum, shstrndx := uint64(0), uint64(0)
	if !b.NoSectionHeaders {
		shnum, shstrndx = uint64(len(secs)+2), uint64(len(secs)+1)
		if shnum >= uint64(elf.SHN_LORESERVE) {
			return nil, fmt.Errorf("%d sections: %w", shnum, ErrBuild)
		}
	}
	if len(b.Progs) >= pnXNum {
		return nil, fmt.Errorf("%d segments: %w", len(b.Progs), ErrBuild)
	}
	// e_entry, e_phoff, e_shoff are address-sized; the 16-bit fields that
	// follow e_flags start at 40 (ELF32) or 52 (ELF64).
	p := w.addrs(24, b.Entry, phoff, shoff)
	p += 4 // e_flags
	for _, v := range []uint64{ehsize, phentsize, uint64(len(b.Progs)), shentsize, shnum, shstrndx} {
		bo.PutUint16(out[p:], uint16(v))
		p += 2
	}

	for i, pr := range b.Progs {
		var poff, vaddr, filesz, memsz uint64
		if sp := spans[i]; sp.first >= 0 {
			poff, vaddr = offsets[sp.first], secs[sp.first].Addr
			if pr.Headers {
				if vaddr < poff {
					return nil, fmt.Errorf("segment %d: first section %q at address %#x below its offset %#x: %w",
						i, secs[sp.first].Name, vaddr, poff, ErrBuild)
				}
				poff, vaddr = 0, vaddr-poff
			}
			for k := sp.first; k <= sp.last; k++ {
				if secs[k].Type != elf.SHT_NOBITS {
					filesz = offsets[k] + sizes[k] - poff
				}
				memsz = secs[k].Addr + sizes[k] - vaddr
			}
		}
		if !fits(vaddr) || !fits(memsz) {
			return nil, fmt.Errorf("segment %d: value too wide for ELF32: %w", i, ErrBuild)
		}
		at := phoff + uint64(i)*phentsize
		bo.PutUint32(out[at:], uint32(pr.Type))
		if is64 {
			bo.PutUint32(out[at+4:], uint32(pr.Flags))
			w.addrs(int(at+8), poff, vaddr, vaddr, filesz, memsz, pr.Align)
		} else {
			w.addrs(int(at+4), poff, vaddr, vaddr, filesz, memsz)
			bo.PutUint32(out[at+24:], uint32(pr.Flags))
			bo.PutUint32(out[at+28:], uint32(pr.Align))
		}
	}

	for i, s := range secs {
		if s.Type != elf.SHT_NOBITS {
			copy(out[offsets[i]:], s.Data)
		}
	}
	if b.NoSectionHeaders {
		return out, nil
	}
	copy(out[shstrOff:], shstrtab)
	putSection := func(at uint64, name uint32, s BuildSection, soff, size uint64) {
		bo.PutUint32(out[at:], name)
		bo.PutUint32(out[at+4:], uint32(s.Type))
		p := w.addrs(int(at+8), uint64(s.Flags), s.Addr, soff, size)
		bo.PutUint32(out[p:], s.Link)
		bo.PutUint32(out[p+4:], s.Info)
		w.addrs(p+8, s.Align, s.Entsize)
	}
	// Header 0 stays all zero (SHT_NULL).
	for i, s := range secs {
		putSection(shoff+uint64(i+1)*shentsize, nameOff[i], s, offsets[i], sizes[i])
	}
	putSection(shoff+uint64(len(secs)+1)*shentsize, nameOff[len(secs)],
		BuildSection{Type: elf.SHT_STRTAB, Align: 1}, shstrOff, uint64(len(shstrtab)))
	return out, nil
}

// fieldWriter writes address-sized fields: 4 bytes in ELF32, 8 in ELF64.
type fieldWriter struct {
	out  []byte
	bo   binary.ByteOrder
	is64 bool
}

// addrs writes vs one after another at offset at and returns the offset
// after the last.
func (w fieldWriter) addrs(at int, vs ...uint64) int {
	for _, v := range vs {
		if w.is64 {
			w.bo.PutUint64(w.out[at:], v)
			at += 8
		} else {
			w.bo.PutUint32(w.out[at:], uint32(v))
			at += 4
		}
	}
	return at
}
