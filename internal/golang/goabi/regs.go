package goabi

import (
	"debug/elf"
	"strconv"
)

// intRegsX86 is the integer argument sequence of amd64 (abi-internal.md,
// "amd64 architecture"), by the names argread.PtRegs accepts.
var intRegsX86 = [...]string{"rax", "rbx", "rcx", "rdi", "rsi", "r8", "r9", "r10", "r11"}

const (
	numFloatX86   = 15 // X0-X14; X15 is the fixed zero register.
	numIntArm64   = 16 // R0-R15
	numFloatArm64 = 16 // F0-F15
)

// NumIntRegs returns the number of integer argument registers of m: 9 on
// x86-64, 16 on arm64, 0 for other machines.
func NumIntRegs(m elf.Machine) int {
	switch m {
	case elf.EM_X86_64:
		return len(intRegsX86)
	case elf.EM_AARCH64:
		return numIntArm64
	}
	return 0
}

// NumFloatRegs returns the number of floating-point argument registers of
// m: 15 on x86-64, 16 on arm64, 0 for other machines.
func NumFloatRegs(m elf.Machine) int {
	switch m {
	case elf.EM_X86_64:
		return numFloatX86
	case elf.EM_AARCH64:
		return numFloatArm64
	}
	return 0
}

// IntRegName returns the name of integer argument register n of m: "rax",
// "rbx", "rcx", "rdi", "rsi", "r8", "r9", "r10", "r11" on x86-64, "x0" to
// "x15" on arm64; "" when m has no such register. These are the names
// argread.PtRegs looks up: every integer argument register is in pt_regs.
func IntRegName(m elf.Machine, n int) string {
	if n < 0 || n >= NumIntRegs(m) {
		return ""
	}
	if m == elf.EM_X86_64 {
		return intRegsX86[n]
	}
	return "x" + strconv.Itoa(n)
}

// FloatRegName returns the name of floating-point argument register n of m:
// "xmm0" to "xmm14" on x86-64, "v0" to "v15" on arm64; "" when m has no
// such register. A float32 or float64 sits in the low bytes (arm64 s<n> or
// d<n>).
func FloatRegName(m elf.Machine, n int) string {
	if n < 0 || n >= NumFloatRegs(m) {
		return ""
	}
	if m == elf.EM_X86_64 {
		return "xmm" + strconv.Itoa(n)
	}
	return "v" + strconv.Itoa(n)
}

// PtRegsName returns the name of r in the uprobe context (struct pt_regs on
// x86-64, struct user_pt_regs on arm64) as argread.PtRegs spells it, and
// whether pt_regs holds it at all: integer registers yes, float registers
// never, so a float piece cannot be read by a uprobe program.
func PtRegsName(m elf.Machine, r Reg) (string, bool) {
	if r.Float {
		return "", false
	}
	name := IntRegName(m, r.N)
	return name, name != ""
}

// GRegister returns the register that holds the current goroutine (the
// runtime's g) in Go code: "r14" on x86-64, "x28" on arm64, "" for other
// machines. It is valid at function entry and return, in pt_regs terms.
func GRegister(m elf.Machine) string {
	switch m {
	case elf.EM_X86_64:
		return "r14"
	case elf.EM_AARCH64:
		return "x28"
	}
	return ""
}

// ClosureRegister returns the register that holds the closure context
// pointer at a call of a func value: "rdx" on x86-64, "x26" on arm64, ""
// for other machines. It is only meaningful at function entry.
func ClosureRegister(m elf.Machine) string {
	switch m {
	case elf.EM_X86_64:
		return "rdx"
	case elf.EM_AARCH64:
		return "x26"
	}
	return ""
}

// StackArgsOffset returns where the stack argument area starts, relative to
// the stack pointer at a function's first instruction (before its prologue
// moves SP), or -1 for machines other than x86-64 and arm64. It is 8 on
// both: on x86-64, CALL pushed the return address at 0(SP); on arm64, 0(SP)
// is the bottom word of the caller's frame, where the caller saved its own
// link register (abi-internal.md, "Stack layout" of each architecture).
func StackArgsOffset(m elf.Machine) int64 {
	switch m {
	case elf.EM_X86_64, elf.EM_AARCH64:
		return PtrSize
	}
	return -1
}
