// Package usdtlink attaches your own BPF programs, loaded with
// cilium/ebpf, to USDT probes, and gives them the probes' arguments: either
// programs written in C against libbpf's <bpf/usdt.bpf.h> (BPF_USDT,
// bpf_usdt_arg, bpf_usdt_arg_cnt, bpf_usdt_cookie), or programs written in
// Go with cilium/ebpf/asm.
//
// # libbpf's usdt.bpf.h
//
// A program compiled against usdt.bpf.h reads its arguments from two maps
// the header declares: __bpf_usdt_specs, an array of struct
// __bpf_usdt_spec (one per distinct location spec: up to 12 argument specs,
// the user's cookie, the argument count), and __bpf_usdt_ip_to_spec_id
// (for kernels without BPF cookies; not used here). At run time the
// program takes the spec id from its BPF cookie. The data flows:
//
//	note ──► sdt.Probe ──► Location.Args ──► EncodeSpec ──► Spec
//	     ──► MarshalLayout ──► __bpf_usdt_specs[id]
//	     ──► uprobe(_multi) link per location, BPF cookie = id, ref_ctr = semaphore
//
// [Attach] does all of it for one provider:name of a file, a library or a
// process; [AttachCollection] does it for every program in a libbpf-style
// SEC("usdt/PATH:PROVIDER:NAME") section. Spec ids are allocated per map
// and freed by [Link.Close]; equal specs share an id, as in libbpf.
//
// Two layouts of struct __bpf_usdt_spec exist ([Layout]): libbpf up to 1.6
// (208 bytes, no index register) and libbpf 1.7+ (304 bytes, with
// BPF_USDT_ARG_SIB). The header the object was compiled with decides;
// Attach tells them apart by the map's value size. Operands map to the
// layout as [EncodeArg] documents: registers, high-byte registers (%ah, by
// reading from one byte into the register's slot), base+offset, SIB (1.7+
// only), %rip+symbol (as an offset from the instruction pointer, which
// holds the site's address when a uprobe program runs), constants. What
// the layout cannot express is refused with an *sdt.ArgError wrapping
// [ErrUnsupported] that names the spec: the whole attach fails rather than
// read a wrong value.
//
// cilium/ebpf cannot load usdt.bpf.h objects as they come (v0.22): it
// refuses the header's __weak maps, it does not know the __kconfig extern
// LINUX_HAS_BPF_COOKIE, and it verifies the header's __hidden helper
// functions as global functions, which the verifier rejects. Load them
// with [LoadCollectionSpec] or [LoadCollectionSpecFromReader] (bpf2go's
// embedded bytes), which fix all three ([StrongMaps], [PrepareSpec]); or
// define __weak empty before including the header (bpf2go itself parses
// the object and needs that), load it with cilium/ebpf and call
// PrepareSpec, which fixes the other two.
//
// # Programs in Go
//
// [EmitArg] returns the cilium/ebpf/asm instructions that load one argument
// of one location into a register, with the code usdtkit's own tracer
// uses; [EmitArgSwitch] reads the BPF cookie and dispatches to the right
// location's code. [AttachProbes] attaches with the cookies EmitArgSwitch
// expects (each location's index over the probes given).
//
// # Attaching
//
// Probes are found with package sdt's rules ([Find]): a path, a library
// short name, or the objects a process maps ([Options.PID]). Each object is
// opened once, checked to be the file the probes were read from (device and
// inode), and attached through /proc/self/fd/N, as usdtkit's own tracer
// does. Semaphores are raised by the kernel (uprobe ref_ctr_offset). One
// uprobe_multi link per object carries every location where the kernel has
// it (6.6+) and the program was loaded with the uprobe_multi attach type
// (PrepareSpec(spec, false) sets it; LoadCollectionSpec leaves the generic
// one, so that Options.Classic works too); otherwise one classic uprobe
// link per location. Classic links on a program loaded for uprobe_multi
// are refused with ErrAttachType.
// BPF cookies (5.15+) are required.
//
// # Errors and lifetime
//
// A failed Attach releases what it acquired: no link stays attached, no
// spec id stays allocated. Errors wrap sdt.ErrNotFound when no probe
// matches, ebpf.ErrNotSupported when the kernel lacks BPF cookies, and
// os.ErrPermission without privileges. A Link must be closed; closing it
// twice is safe. The program and maps stay the caller's.
//
// # Sources
//
// libbpf's src/usdt.c and src/usdt.bpf.h (struct layouts, spec ids in the
// cookie, arg_bitshift, the SIB layout of libbpf 1.7), the kernel's
// uprobe_multi link (Linux 6.6), cilium/ebpf's elf_reader.go (weak
// bindings, .kconfig) and the C bit-field rules of the x86-64 and BPF ABIs
// (which make libbpf 1.7's argument spec 24 bytes).
package usdtlink
