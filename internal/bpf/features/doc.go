// Package features finds out, once, what the kernel and this process's
// privileges let a tracer do, and what each missing piece costs.
//
// One function per feature: HaveBPF, HaveBTF, UprobePMUType, HaveRefCtr,
// HaveUprobeMulti, HaveCookies, Nop5Optimized, SleepableCopyStr,
// HaveBPFLoop. Check runs them all for usdtkit doctor; CanTrace is the
// verdict.
//
// Errors follow cilium/ebpf's features package: nil means available; an
// error wrapping ebpf.ErrNotSupported means the kernel cannot; one
// wrapping os.ErrPermission means missing privileges; anything else is
// inconclusive. Nop5Optimized returns (false, nil) when not optimized.
//
// Each probe runs at most once per process; its outcome is kept. All
// functions are safe for concurrent use. docs/architecture.md ("Kernel
// features") describes the nop5 probe.
package features
