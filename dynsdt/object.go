package dynsdt

import (
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"

	"golang.org/x/sys/unix"

	"github.com/usdtkit/usdtkit/elfnotes"
)

// Object is a built shared object (ET_DYN, linked at address 0) holding one
// provider's probes; docs/probes.md
// describes its layout. It is plain data: Build returns a new one each time, and
// nothing else refers to its slices.
type Object struct {
	Machine elf.Machine
	// Bytes is the whole file.
	Bytes []byte
	// Site is the kind of probe site the stubs have (never SiteAuto); on
	// arm64 always SiteNop.
	Site Site
	// Stubs holds, per probe in spec order, the address of its stub. In
	// this object an address equals its file offset. The probe site is the
	// stub's first byte, which is also the function's entry. The 4 bytes
	// before each stub hold a copy of its first 4 bytes, which no uprobe
	// changes: one 8-byte load from Stubs[i]-4 tells whether the site is
	// traced (libstapsdt.h's inline check).
	Stubs []uint64
	// Semaphores holds, per probe in spec order, the address of its 2-byte
	// semaphore, inside the writable segment.
	Semaphores []uint64
	// Segments are the PT_LOAD segments in file order: read-only (headers,
	// dynamic symbols, .stapsdt.base), read+execute (.text) and read+write
	// (.dynamic, .probes).
	Segments []Segment
}

// Segment is one PT_LOAD segment of an Object, as the loader maps it: Filesz
// bytes of the file from Off at Vaddr (relative to the load base), Memsz
// bytes in all, with protection Prot.
type Segment struct {
	Off, Vaddr, Filesz, Memsz, Align uint64
	// Prot holds the unix.PROT_READ, PROT_WRITE and PROT_EXEC bits that
	// the segment's p_flags ask for.
	Prot int
}

// ErrUnsupportedMachine is wrapped by Build's error for an ELF machine it
// cannot write stubs and argument specs for (only EM_X86_64 and EM_AARCH64).
var ErrUnsupportedMachine = errors.New("unsupported machine")

// SemaphoreSymbol returns the name of the dynamic symbol of a probe's
// semaphore, "<provider>_<probe>_semaphore", the name sys/sdt.h gives it.
func SemaphoreSymbol(provider, probe string) string {
	return provider + "_" + probe + "_semaphore"
}

// FireSymbol returns the name of a second dynamic symbol of a probe's stub,
// "<provider>_<probe>_fire", by which the generated C header calls it: the
// probe's own name may be a C keyword, or name something the program or
// the C library defines (main, stdin), which would take precedence.
func FireSymbol(provider, probe string) string {
	return provider + "_" + probe + "_fire"
}

// SOName returns the DT_SONAME of the object Build writes for provider:
// "<provider>.so", the file name usdtkit gen writes it to.
func SOName(provider string) string { return provider + ".so" }

// machine holds what differs between target architectures.
type machine struct {
	// page is the PT_LOAD alignment and the boundary each PT_LOAD starts
	// on, so that each can be mapped on its own.
	page uint64
	// stub returns the code of one stub with a site of kind s (not
	// SiteAuto): the probe site, then a return. At most stubAlign-4 bytes.
	stub func(s Site) []byte
	// fill pads the stub to stubAlign.
	fill byte
	// appendArg appends the spec of argument i (from 0) of type t.
	appendArg func(dst []byte, i int, t ArgType) []byte
}

func lookupMachine(m elf.Machine) (*machine, bool) {
	switch m {
	case elf.EM_X86_64:
		return &machineX86, true
	case elf.EM_AARCH64:
		return &machineAArch64, true
	}
	return nil, false
}

// stubAlign is the distance between stubs' slots, the usual function
// alignment. A slot is the 4-byte copy of the stub's first word, then the
// stub at slot+4.
const stubAlign = 16

// BuildOptions are Build's choices; the zero value (or nil) is the
// default of each field.
type BuildOptions struct {
	// Site is the kind of probe site on x86-64. SiteAuto, the default,
	// means the kind ChooseSite picks for every kernel (SiteNop): the
	// object may run on another machine than the one that builds it, so
	// neither the running kernel nor USDTKIT_SITE is consulted (Load
	// resolves its SiteAuto with ResolveSite before it builds). Ignored
	// on arm64, which has one kind.
	Site Site
}

// Section indexes in the file: elfnotes.Builder gives Sections[i] index
// i+1. The order is that of the sections slice in Build.
const (
	secHash = 1 + iota
	secDynsym
	secDynstr
	secBase
	secText
	secDynamic
	secProbes
	secNote
)

// sizes of ELF64 structures.
const (
	ehdrSize = 64
	phdrSize = 56
	symSize  = 24 // Elf64_Sym
	dynSize  = 16 // Elf64_Dyn
	numProgs = 5  // PT_LOAD ×3, PT_DYNAMIC, PT_GNU_STACK
)

// Build validates p and writes its shared object for machine m (EM_X86_64
// or EM_AARCH64), in time linear in the number of probes and the length of
// their names. Its x86-64 stubs have the site kind opts.Site (SiteAuto,
// the default, stands for SiteNop), whatever kernel Build runs on.
//
// Errors wrap ErrSpec for an invalid spec (see ProviderSpec.Validate), a
// provider without probes, or a probe named like another probe's semaphore
// or fire symbol; ErrUnsupportedMachine for another m; and ErrSite for
// an unknown opts.Site. opts may be nil: the defaults of BuildOptions.
func Build(p *ProviderSpec, m elf.Machine, opts *BuildOptions) (*Object, error) {
	site := siteAnyKernel
	if opts != nil && opts.Site != SiteAuto {
		site = opts.Site
	}
	if site > SiteNop10 {
		return nil, fmt.Errorf("%v: %w", site, ErrSite)
	}
	if m == elf.EM_AARCH64 {
		site = SiteNop
	}
	if p == nil {
		return nil, fmt.Errorf("nil provider spec: %w", ErrSpec)
	}
	mach, ok := lookupMachine(m)
	if !ok {
		return nil, fmt.Errorf("build provider %s for %v: %w", p.Name, m, ErrUnsupportedMachine)
	}
	if err := p.Validate(); err != nil {
		return nil, err
	}
	n := len(p.Probes)
	if n == 0 {
		return nil, fmt.Errorf("provider %s has no probes: %w", p.Name, ErrSpec)
	}
	bo := binary.LittleEndian

	// .dynstr: the soname, then per probe the names of its symbols (symsPerProbe:
	// semaphore, stub). nameOff[symsPerProbe*i+k] is the offset of probe
	// i's k-th name.
	// The names are appended in place (SemaphoreSymbol and FireSymbol
	// spelled out) and hashed as they are written: the semaphore and fire
	// names share the hash of their "<provider>_<probe>" prefix.
	soname := SOName(p.Name)
	const semSuffix, fireSuffix = "_semaphore", "_fire"
	strsz := 1 + len(soname) + 1
	for _, pr := range p.Probes {
		strsz += 2*len(pr.Name) + 2*(len(p.Name)+1) + len(semSuffix) + len(fireSuffix) + 2
	}
	dynstr := make([]byte, 1, strsz)
	dynstr = append(append(dynstr, soname...), 0)
	nameOff := make([]uint32, symsPerProbe*n)
	nameHash := make([]uint32, symsPerProbe*n)
	provHash := sysvHashString(0, p.Name)
	provHash = sysvHashString(provHash, "_")
	for i, pr := range p.Probes {
		k := symsPerProbe * i
		prefix := sysvHashString(provHash, pr.Name)
		nameOff[k] = uint32(len(dynstr))
		nameHash[k] = sysvHashString(prefix, semSuffix)
		dynstr = append(append(append(append(append(dynstr, p.Name...), '_'), pr.Name...), semSuffix...), 0)
		nameOff[k+1] = uint32(len(dynstr))
		nameHash[k+1] = sysvHashString(prefix, fireSuffix)
		dynstr = append(append(append(append(append(dynstr, p.Name...), '_'), pr.Name...), fireSuffix...), 0)
	}

	// Layout: every allocated section's address is its file offset, and
	// each PT_LOAD starts on a page boundary. These are the rules by which
	// elfnotes.Builder places sections (each at its alignment, the first
	// of a PT_LOAD at an offset congruent to its address), so the Builder
	// puts every section exactly where we say.
	nsym := 1 + symsPerProbe*n
	nbucket := nsym/2 + 1
	hashSize := uint64(4 * (2 + nbucket + nsym))
	off := uint64(ehdrSize + numProgs*phdrSize)
	hashAddr := alignUp(off, 8)
	dynsymAddr := alignUp(hashAddr+hashSize, 8)
	dynstrAddr := dynsymAddr + uint64(nsym*symSize)
	baseAddr := dynstrAddr + uint64(len(dynstr))
	rEnd := baseAddr + 1
	textAddr := alignUp(rEnd, mach.page)
	textSize := uint64(n * stubAlign)
	dynamicAddr := alignUp(textAddr+textSize, mach.page)
	const numDyn = 7
	probesAddr := dynamicAddr + numDyn*dynSize
	probesSize := uint64(2 * n)

	obj := &Object{
		Machine:    m,
		Site:       site,
		Stubs:      make([]uint64, n),
		Semaphores: make([]uint64, n),
		Segments: []Segment{
			{Off: 0, Vaddr: 0, Filesz: rEnd, Memsz: rEnd, Align: mach.page, Prot: unix.PROT_READ},
			{Off: textAddr, Vaddr: textAddr, Filesz: textSize, Memsz: textSize, Align: mach.page, Prot: unix.PROT_READ | unix.PROT_EXEC},
			{Off: dynamicAddr, Vaddr: dynamicAddr, Filesz: probesAddr + probesSize - dynamicAddr,
				Memsz: probesAddr + probesSize - dynamicAddr, Align: mach.page, Prot: unix.PROT_READ | unix.PROT_WRITE},
		},
	}

	text := make([]byte, textSize)
	stub := mach.stub(site)
	for i := range p.Probes {
		s := text[i*stubAlign : (i+1)*stubAlign]
		copy(s, stub[:4])
		for j := 4 + copy(s[4:], stub); j < len(s); j++ {
			s[j] = mach.fill
		}
		obj.Stubs[i] = textAddr + uint64(i*stubAlign) + 4
		obj.Semaphores[i] = probesAddr + uint64(2*i)
	}

	// .dynsym: the null symbol, then per probe the semaphore (OBJECT)
	// and the stub (FUNC), all GLOBAL with default visibility. Every name
	// starts with the provider's: a probe named write or malloc must not
	// interpose on the C library's function in a program linked with the
	// object.
	dynsym := make([]byte, nsym*symSize)
	for i := range p.Probes {
		k := symsPerProbe * i
		putSym(dynsym[(1+k)*symSize:], nameOff[k], elf.STT_OBJECT, secProbes, obj.Semaphores[i], 2)
		putSym(dynsym[(2+k)*symSize:], nameOff[k+1], elf.STT_FUNC, secText, obj.Stubs[i], uint64(len(stub)))
	}

	hash := make([]byte, hashSize)
	bo.PutUint32(hash, uint32(nbucket))
	bo.PutUint32(hash[4:], uint32(nsym))
	buckets, chains := hash[8:8+4*nbucket], hash[8+4*nbucket:]
	// Insert from the last symbol down so that each chain lists symbols
	// in index order; any order is valid, this one is stable.
	for sym := nsym - 1; sym >= 1; sym-- {
		b := int(nameHash[sym-1]%uint32(nbucket)) * 4
		copy(chains[4*sym:], buckets[b:b+4])
		bo.PutUint32(buckets[b:], uint32(sym))
	}

	dynamic := make([]byte, 0, numDyn*dynSize)
	for _, d := range [numDyn][2]uint64{
		{uint64(elf.DT_HASH), hashAddr},
		{uint64(elf.DT_STRTAB), dynstrAddr},
		{uint64(elf.DT_SYMTAB), dynsymAddr},
		{uint64(elf.DT_STRSZ), uint64(len(dynstr))},
		{uint64(elf.DT_SYMENT), symSize},
		{uint64(elf.DT_SONAME), 1},
		{uint64(elf.DT_NULL), 0},
	} {
		dynamic = bo.AppendUint64(bo.AppendUint64(dynamic, d[0]), d[1])
	}

	// .note.stapsdt: one NT_STAPSDT note per probe, in spec order, as
	// elfnotes.AppendNote writes an elfnotes.Stapsdt's AppendDesc, written
	// in place. A probe's argument specs are those of the previous probe
	// when its types are (a provider's probes often share a signature).
	var notes, args []byte
	var prevArgs []ArgType
	for i, pr := range p.Probes {
		if i == 0 || !slices.Equal(pr.Args, prevArgs) {
			args = args[:0]
			for j, t := range pr.Args {
				if j > 0 {
					args = append(args, ' ')
				}
				args = mach.appendArg(args, j, t)
			}
			prevArgs = pr.Args
		}
		descsz := 3*8 + len(p.Name) + 1 + len(pr.Name) + 1 + len(args) + 1
		if i == 0 {
			// All notes are about the same size; one allocation.
			notes = make([]byte, 0, n*(noteHdrSize+len(ownerStapsdt)+descsz+8))
		}
		notes = bo.AppendUint32(notes, uint32(len(ownerStapsdt)))
		notes = bo.AppendUint32(notes, uint32(descsz))
		notes = bo.AppendUint32(notes, elfnotes.NTStapsdt)
		notes = append(notes, ownerStapsdt...)
		notes = bo.AppendUint64(notes, obj.Stubs[i])
		notes = bo.AppendUint64(notes, baseAddr)
		notes = bo.AppendUint64(notes, obj.Semaphores[i])
		notes = append(append(notes, p.Name...), 0)
		notes = append(append(notes, pr.Name...), 0)
		notes = append(append(notes, args...), 0)
		for ; descsz%4 != 0; descsz++ {
			notes = append(notes, 0)
		}
	}

	b := elfnotes.Builder{
		Class:   elf.ELFCLASS64,
		Data:    elf.ELFDATA2LSB,
		Type:    elf.ET_DYN,
		Machine: m,
		Sections: []elfnotes.BuildSection{
			secHash - 1: {Name: ".hash", Type: elf.SHT_HASH, Flags: elf.SHF_ALLOC, Addr: hashAddr, Align: 8, Link: secDynsym, Entsize: 4, Data: hash},
			secDynsym - 1: {Name: ".dynsym", Type: elf.SHT_DYNSYM, Flags: elf.SHF_ALLOC, Addr: dynsymAddr, Align: 8, Link: secDynstr,
				Info: 1 /* index of the first non-local symbol */, Entsize: symSize, Data: dynsym},
			secDynstr - 1:  {Name: ".dynstr", Type: elf.SHT_STRTAB, Flags: elf.SHF_ALLOC, Addr: dynstrAddr, Align: 1, Data: dynstr},
			secBase - 1:    {Name: elfnotes.StapsdtBaseSection, Type: elf.SHT_PROGBITS, Flags: elf.SHF_ALLOC, Addr: baseAddr, Align: 1, Data: []byte{0}},
			secText - 1:    {Name: ".text", Type: elf.SHT_PROGBITS, Flags: elf.SHF_ALLOC | elf.SHF_EXECINSTR, Addr: textAddr, Align: stubAlign, Data: text},
			secDynamic - 1: {Name: ".dynamic", Type: elf.SHT_DYNAMIC, Flags: elf.SHF_ALLOC | elf.SHF_WRITE, Addr: dynamicAddr, Align: 8, Link: secDynstr, Entsize: dynSize, Data: dynamic},
			secProbes - 1:  {Name: ".probes", Type: elf.SHT_PROGBITS, Flags: elf.SHF_ALLOC | elf.SHF_WRITE, Addr: probesAddr, Align: 2, Data: make([]byte, probesSize)},
			// Not allocated, as sys/sdt.h makes it: tracers read it from
			// the file.
			secNote - 1: {Name: ".note.stapsdt", Type: elf.SHT_NOTE, Align: 4, Data: notes},
		},
		Progs: []elfnotes.BuildProg{
			{Type: elf.PT_LOAD, Flags: elf.PF_R, Align: mach.page, Sections: []string{".hash", ".dynsym", ".dynstr", elfnotes.StapsdtBaseSection}, Headers: true},
			{Type: elf.PT_LOAD, Flags: elf.PF_R | elf.PF_X, Align: mach.page, Sections: []string{".text"}},
			{Type: elf.PT_LOAD, Flags: elf.PF_R | elf.PF_W, Align: mach.page, Sections: []string{".dynamic", ".probes"}},
			{Type: elf.PT_DYNAMIC, Flags: elf.PF_R | elf.PF_W, Align: 8, Sections: []string{".dynamic"}},
			// Without it glibc assumes the object needs an executable
			// stack, which glibc 2.41+ refuses to dlopen.
			{Type: elf.PT_GNU_STACK, Flags: elf.PF_R | elf.PF_W, Align: 16},
		},
	}
	out, err := b.Bytes()
	if err != nil {
		// Our description is consistent by construction.
		return nil, fmt.Errorf("build provider %s: %w", p.Name, err)
	}
	obj.Bytes = out
	return obj, nil
}

// ownerStapsdt is the owner field of an NT_STAPSDT note: "stapsdt", NUL
// terminated and padded to 4 bytes (8 already).
const ownerStapsdt = elfnotes.OwnerStapsdt + "\x00"

// noteHdrSize is the size of a note header: namesz, descsz, type.
const noteHdrSize = 12

// symsPerProbe is the number of dynamic symbols per probe: the semaphore
// and the stub (FireSymbol).
const symsPerProbe = 2

// putSym writes one Elf64_Sym of a GLOBAL symbol with default visibility.
func putSym(b []byte, name uint32, typ elf.SymType, shndx uint16, value, size uint64) {
	bo := binary.LittleEndian
	bo.PutUint32(b, name)
	b[4] = byte(elf.STB_GLOBAL)<<4 | byte(typ)
	b[5] = byte(elf.STV_DEFAULT)
	bo.PutUint16(b[6:], shndx)
	bo.PutUint64(b[8:], value)
	bo.PutUint64(b[16:], size)
}

// sysvHashString continues the System V ABI's ELF hash function (gABI
// "Hash Table") from state h over the bytes of s: sysvHashString(0, name)
// is the hash of name, and the hash of a+b is
// sysvHashString(sysvHashString(0, a), b).
func sysvHashString(h uint32, s string) uint32 {
	for i := 0; i < len(s); i++ {
		h = h<<4 + uint32(s[i])
		g := h & 0xf0000000
		h ^= g >> 24
		h &^= g
	}
	return h
}

func alignUp(v, a uint64) uint64 { return (v + a - 1) &^ (a - 1) }
