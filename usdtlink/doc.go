// Package usdtlink attaches your own BPF programs, loaded with cilium/ebpf,
// to USDT probes and gives them the probes' arguments. Programs may be C
// against libbpf's <bpf/usdt.bpf.h>, or Go with cilium/ebpf/asm.
//
// Entry points:
//   - LoadCollectionSpec and LoadCollectionSpecFromReader load a
//     usdt.bpf.h object, fixing what cilium/ebpf cannot load as is.
//   - Attach attaches one program to provider:name of a file, library or
//     process; AttachCollection attaches every SEC("usdt/…") program.
//   - EmitArg and EmitArgSwitch emit argument reads for Go programs;
//     AttachProbes attaches them with matching cookies.
//
// Rules for callers:
//   - BPF cookies (Linux 5.15) are required. uprobe_multi (6.6) is used
//     when the program was prepared for it (PrepareSpec(spec, nil)).
//   - A spec the header's layout cannot express fails the attach with an
//     *sdt.ArgError wrapping ErrUnsupported.
//   - Errors wrap sdt.ErrNotFound, ebpf.ErrNotSupported or
//     os.ErrPermission. A failed Attach leaves nothing attached.
//   - Close every Link; twice is safe. The program and maps stay yours.
//
// docs/usdtlink.md shows a whole program and the two spec layouts.
package usdtlink
