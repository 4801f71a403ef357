package argread

import (
	"debug/elf"
	"fmt"
	"strconv"
)

// Reg is a register as the probe's context (struct pt_regs for uprobes)
// holds it: an 8-byte slot at Off, of which the alias the argument names
// covers Width bytes starting at bit Shift.
type Reg struct {
	// Off is the byte offset of the register's 8-byte slot in the context.
	Off int16
	// Width is the number of bytes of the alias: 8 for %rax, 4 for %eax,
	// 1 for %al and %ah.
	Width uint8
	// Shift is the bit position of the alias in the slot: 8 for %ah, %bh,
	// %ch and %dh, otherwise 0.
	Shift uint8
}

// ptRegsX86 is the layout of struct pt_regs on x86-64 as a BPF program of
// type BPF_PROG_TYPE_KPROBE sees it (bpf_user_pt_regs_t is struct pt_regs):
// arch/x86/include/asm/ptrace.h, "struct pt_regs" (x86_64 branch), the same
// order as arch/x86/include/uapi/asm/ptrace.h. One 8-byte slot per entry.
var ptRegsX86 = [...]string{
	"r15", "r14", "r13", "r12", "rbp", "rbx", "r11", "r10",
	"r9", "r8", "rax", "rcx", "rdx", "rsi", "rdi", "orig_rax",
	"rip", "cs", "eflags", "rsp", "ss",
}

// PtRegsSize returns the size in bytes of the context a uprobe program reads
// for machine m, 0 for machines PtRegs does not know.
func PtRegsSize(m elf.Machine) int {
	switch m {
	case elf.EM_X86_64:
		return 8 * len(ptRegsX86)
	case elf.EM_AARCH64:
		// regs[31], sp, pc, pstate.
		return 8 * 34
	}
	return 0
}

// PtRegs returns the context offset of a canonical register name (as
// sdt.Register.Name gives it: "rax", "r8", "rip"; arm64 "x0".."x30", "sp",
// "pc") for machine m.
//
// x86-64 uses struct pt_regs (arch/x86/include/asm/ptrace.h: r15 r14 r13 r12
// rbp rbx r11 r10 r9 r8 rax rcx rdx rsi rdi orig_rax rip cs eflags rsp ss).
// arm64 BPF programs see struct user_pt_regs (bpf_user_pt_regs_t in
// arch/arm64/include/uapi/asm/bpf_perf_event.h; the layout is in
// arch/arm64/include/uapi/asm/ptrace.h: regs[31], sp, pc, pstate).
//
// Registers that pt_regs does not hold (x86 %xmm, arm64 v0..v31 and xzr) and
// unknown machines give an error wrapping ErrUnsupported.
func PtRegs(m elf.Machine, name string) (int16, error) {
	switch m {
	case elf.EM_X86_64:
		for i, r := range ptRegsX86 {
			if r == name {
				return int16(8 * i), nil
			}
		}
	case elf.EM_AARCH64:
		switch name {
		case "sp":
			return 8 * 31, nil
		case "pc":
			return 8 * 32, nil
		case "pstate":
			return 8 * 33, nil
		}
		if len(name) >= 2 && name[0] == 'x' && (len(name) == 2 || name[1] != '0') {
			if n, err := strconv.Atoi(name[1:]); err == nil && n >= 0 && n <= 30 {
				return int16(8 * n), nil
			}
		}
	default:
		return 0, fmt.Errorf("machine %v: %w", m, ErrUnsupported)
	}
	return 0, fmt.Errorf("register %q of %v is not in pt_regs: %w", name, m, ErrUnsupported)
}

// ipReg returns the context slot of the instruction pointer of machine m.
func ipReg(m elf.Machine) (int16, error) {
	switch m {
	case elf.EM_X86_64:
		return PtRegs(m, "rip")
	case elf.EM_AARCH64:
		return PtRegs(m, "pc")
	}
	return 0, fmt.Errorf("machine %v: %w", m, ErrUnsupported)
}
