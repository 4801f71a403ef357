package dynsdt

import "strconv"

// machineX86 is x86-64: 4 KiB pages, a stub per Site (stubX86),
// arguments in the System V AMD64 ABI's registers rdi, rsi, rdx, rcx, r8,
// r9, then on the stack.
var machineX86 = machine{
	page:      0x1000,
	stub:      stubX86,
	fill:      0xcc, // int3, as linkers pad code
	appendArg: appendArgX86,
}

// Stubs by site kind.
var (
	// 90 is nop; 41 5b is "pop %r11", 41 ff e3 "jmp *%r11": the stub
	// returns without ret. After an int3 trap the kernel's return to user
	// space leaves the return stack predictor empty, so the first ret
	// is costly; an indirect jmp is predicted by its own branch target. r11 is
	// a scratch register in the System V ABI and carries no argument.
	stubX86Nop = []byte{0x90, 0x41, 0x5b, 0x41, 0xff, 0xe3}
	// 0f 1f 44 00 00 is "nopl 0x0(%rax,%rax,1)", the 5-byte nop that Linux
	// 6.18 (uprobe optimization, arch/x86/kernel/uprobes.c) rewrites into a
	// call to its uprobe trampoline instead of trapping on int3 at every
	// hit; then "pop %r11; jmp *%r11" as in stubX86Nop. After the
	// trampoline's syscall exit a ret would cost nothing more, but where
	// the nop5 is trapped instead (kernels before 6.18, a shadow stack, the
	// first hit) it would pay the ret penalty. 4 + 10 bytes fit a slot.
	stubX86Nop5 = []byte{0x0f, 0x1f, 0x44, 0x00, 0x00, 0x41, 0x5b, 0x41, 0xff, 0xe3}
	// 66 2e 0f 1f 84 00 00 00 00 00 is "nopw %cs:0x0(%rax,%rax,1)", the
	// 10-byte nop that the kernel's uprobe optimization after 6.18 turns
	// into "lea -0x80(%rsp),%rsp; call trampoline"; c3 is ret (with
	// pop/jmp, 4 + 15 bytes would not fit a stubAlign slot).
	stubX86Nop10 = []byte{0x66, 0x2e, 0x0f, 0x1f, 0x84, 0x00, 0x00, 0x00, 0x00, 0x00, 0xc3}
)

// stubX86 returns the stub for site kind s (for SiteAuto, Build's
// choice, siteAnyKernel).
func stubX86(s Site) []byte {
	if s == SiteAuto {
		s = siteAnyKernel
	}
	switch s {
	case SiteNop5:
		return stubX86Nop5
	case SiteNop10:
		return stubX86Nop10
	}
	return stubX86Nop
}

// regsX86 are the integer argument registers by size: 8, 4, 2 and 1
// bytes, the alias a tracer reads the argument's Size bytes from.
var regsX86 = [6][4]string{
	{"rdi", "edi", "di", "dil"},
	{"rsi", "esi", "si", "sil"},
	{"rdx", "edx", "dx", "dl"},
	{"rcx", "ecx", "cx", "cl"},
	{"r8", "r8d", "r8w", "r8b"},
	{"r9", "r9d", "r9w", "r9b"},
}

// appendArgX86 appends the spec of argument i at the stub's entry: "-4@%edi"
// for an int32 in the first register, "8@16(%rsp)" for the 8th argument.
// At the entry 0(%rsp) holds the return address and stack arguments follow
// in 8-byte slots, each value in its slot's low bytes.
func appendArgX86(dst []byte, i int, t ArgType) []byte {
	dst = appendSizePrefix(dst, t)
	if i < len(regsX86) {
		var alias int
		switch t.Size() {
		case 8:
			alias = 0
		case 4:
			alias = 1
		case 2:
			alias = 2
		default:
			alias = 3
		}
		return append(append(dst, '%'), regsX86[i][alias]...)
	}
	dst = strconv.AppendInt(dst, int64(8*(i-len(regsX86)+1)), 10)
	return append(dst, "(%rsp)"...)
}

// appendSizePrefix appends "[-]N@" for t.
func appendSizePrefix(dst []byte, t ArgType) []byte {
	if t.Signed() {
		dst = append(dst, '-')
	}
	return append(strconv.AppendInt(dst, int64(t.Size()), 10), '@')
}
