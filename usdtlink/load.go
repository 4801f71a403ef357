package usdtlink

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"fmt"
	"io"
	"os"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/btf"

	"github.com/usdtkit/usdtkit/elfnotes"
)

// maxObjectSize bounds the BPF objects LoadCollectionSpec reads into memory.
const maxObjectSize = 256 << 20

// LoadCollectionSpec reads a BPF object file like ebpf.LoadCollectionSpec,
// after StrongMaps, and prepares it with PrepareSpec for Options.Classic: its
// programs keep the generic attach type, which classic uprobe links need,
// so that Attach works with and without Options.Classic (without it,
// falling back to classic links). For one uprobe_multi link per object,
// call PrepareSpec(spec, nil) on the result before loading it.
func LoadCollectionSpec(path string) (*ebpf.CollectionSpec, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	spec, err := LoadCollectionSpecFromReader(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return spec, nil
}

// LoadCollectionSpecFromReader is LoadCollectionSpec for an object in r
// (bpf2go's generated code has it in a *bytes.Reader).
func LoadCollectionSpecFromReader(r io.ReaderAt) (*ebpf.CollectionSpec, error) {
	b, err := io.ReadAll(io.LimitReader(io.NewSectionReader(r, 0, maxObjectSize+1), maxObjectSize+1))
	if err != nil {
		return nil, err
	}
	if len(b) > maxObjectSize {
		return nil, fmt.Errorf("BPF object larger than %d bytes", maxObjectSize)
	}
	hidden, err := patchELF(b)
	if err != nil {
		return nil, err
	}
	spec, err := ebpf.LoadCollectionSpecFromReader(bytes.NewReader(b))
	if err != nil {
		return nil, err
	}
	staticHidden(spec, hidden)
	if err := PrepareSpec(spec, &Options{Classic: true}); err != nil {
		return nil, err
	}
	return spec, nil
}

// StrongMaps rewrites, in the 64-bit little-endian BPF object b, the
// binding of every weak symbol defined in the .maps section to global.
// <bpf/usdt.bpf.h> declares __bpf_usdt_specs and __bpf_usdt_ip_to_spec_id
// __weak (so that several objects linked by bpftool share them), and
// cilium/ebpf refuses references to weak maps ("unsupported binding:
// STB_WEAK"); in one object a weak definition means the same as a global
// one. Malformed input gives an *elfnotes.FormatError with the byte offset.
func StrongMaps(b []byte) error {
	_, err := patchELF(b)
	return err
}

// patchELF is StrongMaps; it also returns the names of the functions of
// hidden visibility.
func patchELF(b []byte) (hidden map[string]bool, err error) {
	bad := func(off uint64, msg string) error {
		return &elfnotes.FormatError{Off: int64(min(off, 1<<62)), Msg: msg}
	}
	if len(b) < 64 || !bytes.Equal(b[:4], []byte(elf.ELFMAG)) {
		return nil, bad(0, "not an ELF file")
	}
	if elf.Class(b[elf.EI_CLASS]) != elf.ELFCLASS64 || elf.Data(b[elf.EI_DATA]) != elf.ELFDATA2LSB {
		return nil, bad(uint64(elf.EI_CLASS), "not a 64-bit little-endian ELF file")
	}
	le := binary.LittleEndian
	shoff := le.Uint64(b[0x28:])
	shentsize := uint64(le.Uint16(b[0x3a:]))
	shnum := uint64(le.Uint16(b[0x3c:]))
	shstrndx := uint64(le.Uint16(b[0x3e:]))
	if shnum == 0 {
		return nil, nil
	}
	if shentsize < 64 || shoff > uint64(len(b)) || shnum > (uint64(len(b))-shoff)/shentsize {
		return nil, bad(0x28, "section headers outside the file")
	}
	type shdr struct {
		name, typ, off, size, link, entsize uint64
	}
	sh := func(i uint64) shdr {
		p := b[shoff+i*shentsize:]
		return shdr{uint64(le.Uint32(p)), uint64(le.Uint32(p[4:])), le.Uint64(p[0x18:]), le.Uint64(p[0x20:]), uint64(le.Uint32(p[0x28:])), le.Uint64(p[0x38:])}
	}
	contents := func(i uint64) ([]byte, error) {
		s := sh(i)
		if s.typ == uint64(elf.SHT_NOBITS) {
			return nil, nil
		}
		if s.off > uint64(len(b)) || s.size > uint64(len(b))-s.off {
			return nil, bad(shoff+i*shentsize, "section contents outside the file")
		}
		return b[s.off : s.off+s.size], nil
	}
	if shstrndx >= shnum {
		return nil, bad(0x3e, "section name table index out of range")
	}
	names, err := contents(shstrndx)
	if err != nil {
		return nil, err
	}
	maps := uint64(0)
	var symtabs []uint64
	for i := uint64(1); i < shnum; i++ {
		s := sh(i)
		if s.name < uint64(len(names)) {
			n := names[s.name:]
			if j := bytes.IndexByte(n, 0); j >= 0 && string(n[:j]) == ".maps" {
				maps = i
			}
		}
		if s.typ == uint64(elf.SHT_SYMTAB) {
			symtabs = append(symtabs, i)
		}
	}
	hidden = make(map[string]bool)
	for _, i := range symtabs {
		syms, err := contents(i)
		if err != nil {
			return nil, err
		}
		link := sh(i).link
		if link >= shnum {
			return nil, bad(shoff+i*shentsize+0x28, "symbol table's string table index out of range")
		}
		strs, err := contents(link)
		if err != nil {
			return nil, err
		}
		for k := uint64(0); k+24 <= uint64(len(syms)); k += 24 {
			name := uint64(le.Uint32(syms[k:]))
			info, other := syms[k+4], syms[k+5]
			shndx := uint64(le.Uint16(syms[k+6:]))
			if maps != 0 && shndx == maps && elf.ST_BIND(info) == elf.STB_WEAK {
				syms[k+4] = byte(elf.ST_INFO(elf.STB_GLOBAL, elf.ST_TYPE(info)))
			}
			if elf.ST_TYPE(info) == elf.STT_FUNC && elf.ST_VISIBILITY(other) == elf.STV_HIDDEN && name < uint64(len(strs)) {
				n := strs[name:]
				if j := bytes.IndexByte(n, 0); j > 0 {
					hidden[string(n[:j])] = true
				}
			}
		}
	}
	return hidden, nil
}

// staticHidden gives the functions of hidden visibility static linkage in
// BTF, as libbpf does when it loads an object: the verifier checks a
// global function on its own, assuming nothing of its arguments (a
// pointer may be NULL), and usdt.bpf.h's __weak __hidden helpers rely on
// being checked in their caller's context.
func staticHidden(spec *ebpf.CollectionSpec, hidden map[string]bool) {
	if len(hidden) == 0 {
		return
	}
	for _, p := range spec.Programs {
		for i := range p.Instructions {
			fn := btf.FuncMetadata(&p.Instructions[i])
			if fn == nil || !hidden[fn.Name] || fn.Linkage == btf.StaticFunc {
				continue
			}
			cp := *fn
			cp.Linkage = btf.StaticFunc
			p.Instructions[i] = btf.WithFuncMetadata(p.Instructions[i], &cp)
		}
	}
}
