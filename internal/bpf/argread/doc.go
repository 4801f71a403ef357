// Package argread emits the BPF code that reads one probe argument at a
// probe site, built with cilium/ebpf's asm in Go (no clang, no kernel
// headers): the argument reads of every program usdtkit generates
// (internal/lang/btgen for programs in bpftrace's language and their events,
// usdtlink for linked probes).
//
// # Model
//
//	sdt.Arg (parsed spec at one location) ──usdtargs.Fetch──► Fetch
//	Go parameter or result (gofunc.Word) ──WordFetch──► Fetch
//	Fetch ──EmitFetch──► asm.Instructions storing the value in a slot
//
// A Fetch is plain data, compared with == so that sites reading alike
// share their code. EmitFetch's code expects the context (pt_regs) in
// FetchCtx (R6), the base of the slots in FetchBase (R7) and collects
// fault bits in FetchFaults (R9); it clobbers R0..R5.
//
// # Argument semantics
//
// A register argument is the 8-byte pt_regs slot shifted right by Reg.Shift
// (%ah: 8), truncated to min(Size, Reg.Width) bytes and sign- (Signed) or
// zero-extended: -4@%eax with rax = 0xffffffff80000000 is -2147483648, 1@%ah
// with rax = 0x1234 is 0x12. A memory argument reads Size bytes with
// bpf_probe_read_user at base + index*Scale + Offset, where base is a
// register (its alias, zero-extended), the probe's instruction pointer
// (IPRel: symbol operands, see usdtargs) or nothing (an absolute
// address), then extends them. A read that fails gives 0 and sets the
// argument's fault bit. A constant is Value. Size 0 reads 8 bytes.
//
// A memory argument with Derefs > 0 is a pointer chain (s.next.count): at
// the address above an 8-byte pointer is read, Path[0] added, and so on
// for Derefs hops; the last address holds the Size bytes. A failed read or
// a NULL pointer on the way gives 0 and the fault bit. Faults are
// collected without branches (a helper's negative result shifted right by
// 63 is 1); the one branch of a chain (a failed hop) meets the other path
// right after the argument with only R9 and the slot differing, so the
// verifier prunes there.
//
// bpf_probe_read_user cannot fault pages in: memory the target never
// touched (a string constant in a fresh .rodata page) reads as a fault.
//
// HistBucket is the log2 bucket of bpftrace's hist(), which the programs
// and the printers share.
//
// # Kernel versions
//
// bpf_probe_read_user: 5.5. BPF_ST with a 64-bit width: 5.1 or older. The
// probe_read_user helpers are GPL-only: programs that use EmitFetch
// declare license "GPL".
//
// # Errors and concurrency
//
// EmitFetch returns a *ConfigError naming the Fetch field it cannot use,
// wrapping ErrUnsupported when an argument cannot be read at all (a
// register pt_regs does not hold, a machine other than x86-64 and arm64).
// Kernel rejections come from loading the program (*ebpf.VerifierError).
// Every function keeps no state and is safe for concurrent use.
//
// # Sources
//
// Kernel: arch/x86/include/asm/ptrace.h (struct pt_regs),
// arch/arm64/include/uapi/asm/ptrace.h (struct user_pt_regs),
// kernel/events/uprobes.c handle_swbp ("change it in advance for
// ->handler() and restart": the ip is the probe address when handlers run)
// and arch/x86/kernel/uprobes.c sys_uprobe (ip = return address - 5),
// kernel/trace/bpf_trace.c (helpers for kprobe-type programs). bpftrace's
// codegen createLog2Function for the hist() buckets.
//
// # Usage
//
//	insns, err := argread.EmitFetch(elf.EM_X86_64, &fetch, slot, faultBit, "arg0")
package argread
