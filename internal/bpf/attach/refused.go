package attach

import (
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"syscall"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/features"
	"github.com/cilium/ebpf/link"
	"golang.org/x/arch/x86/x86asm"
	"golang.org/x/sys/unix"

	"github.com/usdtkit/usdtkit/internal/elf/insn"
	"github.com/usdtkit/usdtkit/internal/proc/procfs"
)

// InsnError is a site whose first instruction the kernel refuses to
// probe, found before the kernel is asked: a process that maps the file
// only later would otherwise lose the site without a word (the kernel
// installs the probe then and ignores its refusal).
type InsnError struct {
	// Insn is the instruction as Intel syntax prints it.
	Insn string
	// Reason says what the kernel refuses in it.
	Reason string
}

func (e *InsnError) Error() string { return fmt.Sprintf("%s (%s)", e.Reason, e.Insn) }

// precheck returns the sites of obj whose instruction the kernel is
// known to refuse, in the order of obj.Offsets. Only x86-64 objects are
// checked, for the one rule that holds on every kernel since uprobes came
// (arch/x86/kernel/uprobes.c, is_prefix_bad): no lock prefix, which
// single-stepping a copy of the instruction out of line would break. A
// site whose bytes cannot be read or decoded is left to the kernel.
func precheck(obj *Object) ([]Refusal, error) {
	f, err := os.Open(obj.Path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var hdr [20]byte
	if _, err := f.ReadAt(hdr[:], 0); err != nil {
		return nil, nil
	}
	if string(hdr[:4]) != elf.ELFMAG || elf.Class(hdr[elf.EI_CLASS]) != elf.ELFCLASS64 ||
		elf.Data(hdr[elf.EI_DATA]) != elf.ELFDATA2LSB ||
		elf.Machine(binary.LittleEndian.Uint16(hdr[18:])) != elf.EM_X86_64 {
		return nil, nil
	}
	var refused []Refusal
	var code [insn.MaxX86Len]byte
	for i, off := range obj.Offsets {
		if int64(off) < 0 {
			continue
		}
		n, err := f.ReadAt(code[:], int64(off))
		if err != nil && !errors.Is(err, io.EOF) {
			continue
		}
		if e := refusedX86(code[:n]); e != nil {
			refused = append(refused, Refusal{Index: i, Offset: off, Err: e})
		}
	}
	return refused, nil
}

// refusedX86 returns why the kernel refuses to probe the x86-64
// instruction at the start of code, or nil when it may accept it.
func refusedX86(code []byte) *InsnError {
	inst, err := insn.DecodeX86(code)
	if err != nil {
		return nil
	}
	// The legacy prefixes come first, in any order.
	for _, b := range code[:inst.Len] {
		switch b {
		case 0xf0:
			return &InsnError{Insn: x86asm.IntelSyntax(inst, 0, nil), Reason: "a lock-prefixed instruction, which uprobes cannot single-step"}
		case 0xf2, 0xf3, 0x2e, 0x36, 0x3e, 0x26, 0x64, 0x65, 0x66, 0x67:
		default:
			return nil
		}
	}
	return nil
}

// mapSelf maps the file at path executable in this process, so that the
// kernel reads the instructions of the sites attached for this process
// or every process, and returns what unmaps it. When the file cannot be
// mapped (a noexec mount), it does nothing: the kernel then reads the
// sites in the processes that map the file, if any.
//
// A process that maps the file already is left as it is: with a second
// mapping of its text, the kernel would put the breakpoint in both and
// count each in the probe's semaphore (ref_ctr_offset, which it finds in
// one mapping), but take back only one when the link closes after this
// mapping is gone, leaving a dynsdt provider or sys/sdt.h semaphore of
// this process enabled for good (tracing usdtkit's own process, or every
// process).
func mapSelf(path string) (unmap func()) {
	f, err := os.Open(path)
	if err != nil {
		return func() {}
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil || st.Size() <= 0 || st.Size() != int64(int(st.Size())) {
		return func() {}
	}
	if mapsFile(st) {
		return func() {}
	}
	mem, err := unix.Mmap(int(f.Fd()), 0, int(st.Size()), unix.PROT_READ|unix.PROT_EXEC, unix.MAP_PRIVATE)
	if err != nil {
		return func() {}
	}
	return func() { unix.Munmap(mem) }
}

// mapsFile reports whether this process maps the file st describes
// executable already (or cannot tell).
func mapsFile(st os.FileInfo) bool {
	sys, ok := st.Sys().(*syscall.Stat_t)
	if !ok {
		return true
	}
	maps, err := procfs.ReadMaps(os.Getpid())
	if err != nil {
		return true
	}
	return slices.ContainsFunc(maps, func(m procfs.Mapping) bool {
		return m.Inode == sys.Ino && unix.Mkdev(m.Major, m.Minor) == sys.Dev && strings.Contains(m.Perms, "x")
	})
}

// check attaches a program that does nothing to sites (indexes in
// obj.Offsets, less the refused ones) for this process, which maps the
// file (mapSelf), in uprobe_multi links it closes at once, and returns
// the sites the kernel accepts and the refused ones with those it
// refuses added: so that a process that maps the file only after attach
// is not left without a word about them. Without uprobe_multi it checks
// nothing.
func check(obj *Object, ex *link.Executable, sites []int, refused []Refusal) ([]int, []Refusal, error) {
	if len(sites) == 0 || features.HaveBPFLinkUprobeMulti() != nil {
		return sites, refused, nil
	}
	prog, err := ebpf.NewProgram(&ebpf.ProgramSpec{
		Type:         ebpf.Kprobe,
		AttachType:   ebpf.AttachTraceUprobeMulti,
		Instructions: asm.Instructions{asm.Mov.Imm(asm.R0, 0), asm.Return()},
		License:      "GPL",
	})
	if err != nil {
		return nil, nil, fmt.Errorf("load the site check program: %w", err)
	}
	defer prog.Close()
	c := &attacher{prog: prog, obj: obj, ex: ex, pid: os.Getpid()}
	err = c.multi(sites)
	errs := closeAll(c.links)
	if err != nil {
		return nil, nil, errors.Join(append([]error{err}, errs...)...)
	}
	if len(errs) > 0 {
		return nil, nil, errors.Join(errs...)
	}
	if len(c.refused) == 0 {
		return sites, refused, nil
	}
	out := make(map[int]bool)
	for _, r := range c.refused {
		out[r.Index] = true
	}
	sites = slices.DeleteFunc(sites, func(i int) bool { return out[i] })
	refused = append(refused, c.refused...)
	sortRefusals(refused)
	return sites, refused, nil
}
