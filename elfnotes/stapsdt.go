package elfnotes

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"fmt"
)

// StapsdtBaseSection is the section whose run-time address SDT notes record
// in their Base field; see [File.SDTProbes].
const StapsdtBaseSection = ".stapsdt.base"

// MaxArgs is the most arguments sys/sdt.h's macros give a probe
// (STAP_PROBE12): the most argument specs a note of theirs holds.
const MaxArgs = 12

// Stapsdt is the descriptor of one NT_STAPSDT note, exactly as written in
// the note: addresses are link-time values before the .stapsdt.base
// adjustment.
type Stapsdt struct {
	PC        uint64 // address of the probe site (the nop)
	Base      uint64 // link-time address of .stapsdt.base as the note saw it
	Semaphore uint64 // address of the is-enabled counter; 0 when there is none
	Provider  string
	Name      string
	Args      string // argument specs separated by spaces, e.g. "8@%rbx -4@%eax"
}

// ParseStapsdt decodes an NT_STAPSDT descriptor: PC, Base and Semaphore,
// each 4 bytes for ELFCLASS32 and 8 for ELFCLASS64 in byte order order,
// then the NUL-terminated provider, name and argument strings. Bytes after
// the third NUL are ignored. A descriptor that is too short or lacks a
// terminator gives a *[FormatError] whose Off counts from the start of desc.
func ParseStapsdt(desc []byte, class elf.Class, order binary.ByteOrder) (Stapsdt, error) {
	var s Stapsdt
	var n int
	switch class {
	case elf.ELFCLASS32:
		n = 4
	case elf.ELFCLASS64:
		n = 8
	default:
		return s, fmt.Errorf("stapsdt descriptor: unknown ELF class %v", class)
	}
	if len(desc) < 3*n {
		return s, formatErr(0, "stapsdt descriptor shorter than its three addresses", len(desc))
	}
	if n == 4 {
		s.PC = uint64(order.Uint32(desc))
		s.Base = uint64(order.Uint32(desc[4:]))
		s.Semaphore = uint64(order.Uint32(desc[8:]))
	} else {
		s.PC = order.Uint64(desc)
		s.Base = order.Uint64(desc[8:])
		s.Semaphore = order.Uint64(desc[16:])
	}
	// Find the three strings first, then copy them in one allocation:
	// the strings must not keep a larger buffer alive.
	var ends [3]int
	off := 3 * n
	for i, what := range [...]string{"provider", "name", "arguments"} {
		end := bytes.IndexByte(desc[off:], 0)
		if end < 0 {
			return Stapsdt{}, formatErr(int64(off), "stapsdt "+what+" not NUL-terminated", nil)
		}
		off += end + 1
		ends[i] = off - 1
	}
	str := string(desc[3*n : ends[2]])
	s.Provider = str[:ends[0]-3*n]
	s.Name = str[ends[0]+1-3*n : ends[1]-3*n]
	s.Args = str[ends[1]+1-3*n:]
	return s, nil
}

// AppendDesc appends the NT_STAPSDT descriptor of s to dst and returns the
// extended slice; [ParseStapsdt] with the same class and order gives s back.
// For ELFCLASS32 the addresses are written as 4 bytes and their high bits
// dropped; any other class writes 8 bytes. The strings must not contain NUL,
// which would end them when read back. Wrap the result with [AppendNote]
// (owner [OwnerStapsdt], type [NTStapsdt]) to get a note record.
func (s Stapsdt) AppendDesc(dst []byte, class elf.Class, order binary.ByteOrder) []byte {
	for _, v := range [...]uint64{s.PC, s.Base, s.Semaphore} {
		if class == elf.ELFCLASS32 {
			dst = appendUint32(dst, order, uint32(v))
		} else {
			dst = appendUint64(dst, order, v)
		}
	}
	for _, str := range [...]string{s.Provider, s.Name, s.Args} {
		dst = append(dst, str...)
		dst = append(dst, 0)
	}
	return dst
}

// An SDTProbe is one NT_STAPSDT note of a file with its addresses adjusted
// for where the linker finally placed .stapsdt.base.
type SDTProbe struct {
	Stapsdt              // raw values as in the note
	Addr          uint64 // PC after the .stapsdt.base adjustment
	SemaphoreAddr uint64 // Semaphore after the adjustment; 0 = no semaphore
	NoteOffset    uint64 // file offset of the note header
}

// SDTProbes returns the probes of f as [File.ReadSDTProbes] does, but fails
// on the first problem ReadSDTProbes would report as a warning: then the
// slice is nil and the error is that warning.
func (f *File) SDTProbes() ([]SDTProbe, error) {
	return strict(f.ReadSDTProbes())
}

// ReadSDTProbes returns every note with owner "stapsdt" and type
// NT_STAPSDT, in file order, as [File.ReadNotes] finds them. Other notes
// are passed over without reading their descriptors.
//
// The notes record link-time addresses that prelink or the final link may
// have moved. When the file has a section named .stapsdt.base, both the PC
// and a non-zero semaphore move by (section address − note Base), modulo
// the address size; without that section nothing moves. This is what
// systemtap, libbpf and bcc do. Addresses are virtual addresses; use
// [File.AddrToOffset] for the file offsets uprobes want.
//
// A malformed NT_STAPSDT descriptor is skipped with a warning, a
// *[FormatError] with the file offset of the bad field; damage to the
// notes themselves is skipped as ReadNotes does. The other probes are
// returned. err is reserved for I/O errors, and then probes is nil. A file
// without SDT notes gives an empty, non-nil slice.
func (f *File) ReadSDTProbes() (probes []SDTProbe, warnings []error, err error) {
	var (
		baseAddr uint64
		hasBase  bool
	)
	if s := f.Section(StapsdtBaseSection); s != nil {
		baseAddr, hasBase = s.Addr, true
	}
	mask := ^uint64(0)
	if f.Class == elf.ELFCLASS32 {
		mask = 0xffffffff
	}
	isSDT := func(owner []byte, typ uint32) bool { return string(owner) == OwnerStapsdt && typ == NTStapsdt }
	// Count first, reading only headers and names: growing a slice of
	// probes by append allocates about twice what it keeps.
	n := 0
	w := &noteWalker{f: f}
	if err := w.walk(func(owner []byte, typ uint32) bool {
		if isSDT(owner, typ) {
			n++
		}
		return false
	}, nil); err != nil {
		return nil, nil, err
	}
	probes = make([]SDTProbe, 0, n)
	w.reset()
	err = w.walk(isSDT, func(r *noteRecord) {
		s, err := ParseStapsdt(r.desc, f.Class, f.ByteOrder)
		if err != nil {
			if fe, ok := err.(*FormatError); ok {
				err = formatErr(clampOff(r.doff+uint64(fe.Off)), fe.Msg, fe.Val)
			}
			w.warnings = append(w.warnings, err)
			return
		}
		p := SDTProbe{Stapsdt: s, Addr: s.PC, SemaphoreAddr: s.Semaphore, NoteOffset: r.off}
		if hasBase {
			delta := baseAddr - s.Base
			p.Addr = (s.PC + delta) & mask
			if s.Semaphore != 0 {
				p.SemaphoreAddr = (s.Semaphore + delta) & mask
			}
		}
		probes = append(probes, p)
	})
	if err != nil {
		return nil, nil, err
	}
	return probes, w.warnings, nil
}
