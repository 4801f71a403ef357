package features

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"

	"github.com/usdtkit/usdtkit/internal/proc/procfs"
)

// Instruction bytes of the x86-64 nop5 optimization.
var (
	nop5Insn = []byte{0x0f, 0x1f, 0x44, 0x00, 0x00} // nopl 0x0(%rax,%rax,1)
)

const (
	int3Op = 0xcc // the breakpoint a uprobe writes over an instruction
	callOp = 0xe8 // call rel32
	// trampolineName is the special mapping holding the trampoline
	// (arch/x86/kernel/uprobes.c, tramp_mapping).
	trampolineName = "[uprobes-trampoline]"
	// nop5Hits is how often the site runs: the first hit traps and
	// optimizes, the second goes through the trampoline.
	nop5Hits = 2
)

// Nop5Optimized reports whether this kernel optimizes uprobes on 5-byte
// nops (Linux 6.18+ on x86-64, commit ba2bfc97b462 "uprobes/x86: Add
// support to optimize uprobes"): after the first hit, the nop5 is
// rewritten into a call to a trampoline, and later hits enter the kernel
// by a syscall instead of an int3 trap, which is cheaper (BenchmarkUprobeHit
// measures both).
// That call pushes 32 bytes below the stack pointer, so a nop5 is only safe
// to attach to where nothing lives there: at a function entry, not inside
// a leaf function that uses the red zone.
//
// The check attaches an empty program to a nop5 function of this process
// (for this process only), calls it twice and looks at what the kernel
// made of the nop5; closing the uprobe restores it. The trampoline page
// stays mapped in this process. It returns false and a nil error on
// kernels that do not optimize, and on other architectures; the error
// wraps os.ErrPermission when this process may not load BPF programs. The
// result is cached.
func Nop5Optimized() (bool, error) {
	ok, _, err := nop5Probe.get()
	return ok, err
}

func probeNop5() (bool, string, error) {
	nop5, _, ok := sites()
	if !ok {
		return false, "not x86-64: every uprobe hit traps", nil
	}
	if err := requireBPF(); err != nil {
		return false, "", err
	}
	before, err := readSelf(nop5.addr, len(nop5Insn))
	if err != nil {
		return false, "", err
	}
	if !bytes.Equal(before, nop5Insn) {
		// Another uprobe on the site; the check would see its state.
		return false, "", fmt.Errorf("nop5 site at %#x holds % x, want % x", nop5.addr, before, nop5Insn)
	}
	p, err := attachSelf(nop5.addr)
	if err != nil {
		return false, "", err
	}
	defer p.Close()
	for range nop5Hits {
		nop5.call()
	}
	code, err := readSelf(nop5.addr, len(nop5Insn))
	if err != nil {
		return false, "", err
	}
	maps, err := procfs.ReadMaps(os.Getpid())
	if err != nil {
		return false, "", err
	}
	return classifyNop5(code, nop5.addr, maps)
}

// classifyNop5 interprets the bytes of an attached nop5 site after it ran.
func classifyNop5(code []byte, addr uint64, maps []procfs.Mapping) (bool, string, error) {
	if len(code) < len(nop5Insn) {
		return false, "", fmt.Errorf("nop5 site at %#x: read %d bytes, want %d", addr, len(code), len(nop5Insn))
	}
	switch code[0] {
	case int3Op:
		return false, fmt.Sprintf("the nop5 at %#x still traps (int3) after %d hits", addr, nop5Hits), nil
	case callOp:
		rel := int32(binary.LittleEndian.Uint32(code[1:5]))
		target := addr + 5 + uint64(int64(rel))
		for _, m := range maps {
			if m.Path == trampolineName && target >= m.Start && target < m.End {
				return true, fmt.Sprintf("after the first hit the nop5 became a call to %s at %#x, "+
					"which pushes 32 bytes below %%rsp (attach nop5s only at function entry)", trampolineName, target), nil
			}
		}
		return false, "", fmt.Errorf("nop5 site at %#x: call to %#x, outside %s", addr, target, trampolineName)
	}
	return false, "", fmt.Errorf("nop5 site at %#x holds % x after %d hits: uprobe not installed", addr, code[:5], nop5Hits)
}

// readSelf reads n bytes of this process's memory at addr.
func readSelf(addr uint64, n int) ([]byte, error) {
	f, err := os.Open("/proc/self/mem")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b := make([]byte, n)
	if _, err := f.ReadAt(b, int64(addr)); err != nil {
		return nil, fmt.Errorf("read code at %#x: %w", addr, err)
	}
	return b, nil
}
