// Package features finds out what the running kernel and this process's
// privileges allow a tracer to do, once, and says what each missing piece
// costs.
//
// # Model
//
// Each feature the tracer branches on has one exported function:
//
//	HaveBPF          may this process load kprobe-type programs (root, or CAP_BPF+CAP_PERFMON)
//	HaveBTF          /sys/kernel/btf/vmlinux with a valid header (5.4+)
//	UprobePMUType    perf event type of the uprobe PMU (4.17+)
//	HaveRefCtr       the PMU's ref_ctr_offset format, for semaphores (4.20+)
//	HaveUprobeMulti  uprobe_multi links (6.6+), attached for real and closed
//	HaveCookies      bpf_get_attach_cookie in kprobe-type programs (5.15+)
//	Nop5Optimized    uprobes on 5-byte nops become calls (6.18+, x86-64)
//	SleepableCopyStr sleepable uprobe_multi programs may call the kfunc
//	                 bpf_copy_from_user_str, which faults pages in (6.12+)
//	HaveBPFLoop      kprobe-type programs may call bpf_loop (5.17+), which the
//	                 walk of stack keys with CFI in the program needs
//
// [Check] runs them all and returns one [Result] per feature in a fixed
// order, with what was found, why a feature is missing and, in one
// sentence, what usdtkit does without it; `usdtkit doctor` prints exactly
// that. [CanTrace] is the verdict: tracing works at all when BPF programs
// load and the uprobe PMU exists.
//
// Where cilium/ebpf already has a probe, it is used, not repeated:
// features.HaveProgramHelper for cookies, features.HaveBPFLinkUprobeMulti
// before the real uprobe_multi attach. The others read sysfs, load an
// empty program, or attach one to code of this very process.
//
// # Nop5 optimization
//
// Linux 6.18 (Jiri Olsa's series "uprobes/x86: Add support to optimize
// uprobes", commit ba2bfc97b462 and those before it) optimizes a uprobe
// whose original instruction is exactly the 5-byte nop 0f 1f 44 00 00
// (x86_nops[5]) and does not cross a page, on x86-64, unless the process
// has a shadow stack:
//
//   - On attach the nop5's first byte becomes int3, as for any uprobe.
//   - On the first hit, after the BPF programs ran, the kernel maps a
//     one-page "[uprobes-trampoline]" special mapping within ±2 GiB of the
//     site (one per 4 GiB region, kept for the life of the process) and
//     rewrites the 5 bytes, staged through int3, into "call trampoline".
//   - Later hits call the trampoline, which pushes %rcx, %r11 and %rax and
//     makes the uprobe syscall; the kernel runs the programs with the
//     registers of the site and returns to the instruction after the nop5.
//     The call and the pushes write 32 bytes below the site's %rsp: in a
//     leaf function that keeps data in the red zone, that data is
//     clobbered. A nop5 at a function entry (dynsdt's stubs) is safe; one
//     in the middle of a function is not, so the tracer must not move an
//     attach point onto such a nop5 on these kernels.
//   - Detaching writes the nop5 back, again staged through int3.
//
// [Nop5Optimized] observes this instead of trusting the kernel version: it
// attaches an empty program (for this process only) to an assembly
// function of this package that starts with that nop5, calls it twice,
// reads the 5 bytes back from /proc/self/mem and checks that they are a
// call into [uprobes-trampoline] in /proc/self/maps. Closing the uprobe
// restores the nop5; the trampoline page stays mapped. No helper process,
// no cgo: a Go assembly function is an ordinary function to call.
//
// # Errors
//
// As in cilium/ebpf's features package: nil means available; an error
// wrapping [ebpf.ErrNotSupported] means this kernel cannot; an error
// wrapping [os.ErrPermission] means this process lacks the privileges to
// use the feature or to find out; any other error is inconclusive.
// Nop5Optimized is the exception: "the kernel does not optimize" is
// (false, nil), and in Check's result it becomes an error wrapping
// ErrNotSupported.
//
// # Caching and concurrency
//
// Every probe runs at most once per process, the first time any function
// needs it, and its outcome, errors included, is kept: a result persists
// across later changes to privileges, as cilium/ebpf's do. All functions
// are safe for concurrent use; concurrent first callers wait for the one
// probe. Probes close every program and link they create before returning.
//
// # Usage
//
//	if err := features.HaveUprobeMulti(); errors.Is(err, ebpf.ErrNotSupported) {
//		// one classic link per site
//	}
package features
