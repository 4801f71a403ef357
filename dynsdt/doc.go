// Package dynsdt gives programs that cannot put USDT probes into their own
// binaries — Go programs, and through FFI any language — probes that
// tracers find like those of sys/sdt.h, with no cgo.
//
// # Model
//
// A ProviderSpec declares a provider and its probes with typed arguments.
// Build turns it into a small ELF shared object (an Object): one stub
// function per probe, an NT_STAPSDT note per probe naming the stub's entry
// as the probe site, and a 2-byte semaphore per probe. The runtime maps that
// object into the process, so that /proc/PID/maps shows it as a file-backed
// mapping, and fires a probe by calling its stub with the arguments in the
// C calling convention. A tracer (usdtkit trace, bpftrace, bcc, libbpf)
// reads the notes from the file, puts a uprobe on the stub, increments the
// semaphore while attached, and reads the arguments from the registers and
// stack as the notes' argument specs say:
//
//	ProviderSpec → Build → Object (.so bytes) → mapped file → stub call
//	    → uprobe at the stub's first byte → BPF reads regs/stack per spec
//
// usdtkit gen (package dynsdt/gen, which also writes the Go code and C
// header that use it) writes the same object as a standalone .so for
// dlopen and any language's FFI.
//
// Static probes (gen.Static, usdtkit gen --static) are the other way:
// the same Go API, but the stubs are Go assembly compiled into the program
// and the semaphores live in its data, in a table (gen.StaticTable) that the
// post-link step of package dynsdt/postlink reads to add the notes to the
// linked executable. Tracers then attach by path to every process of it.
// On amd64 a static stub is StaticStubAMD64(SiteNop): the 1-byte nop stub
// below, as bytes (the assembler tracks no SP change in it, so profiling
// tracebacks taken on its last two instructions may stop there), padded
// with int3 to StaticStubLen bytes, room for every kind's stub, which the
// post-link step can write instead (see "Probe sites"). Only the site at
// entry matters to tracers: the arguments are the caller's ABI0 stack
// slots, at 8(%rsp) on.
//
// # The shared object
//
// Build writes an ELF64 little-endian ET_DYN for EM_X86_64 or EM_AARCH64,
// linked at address 0, in which every allocated byte's address equals its
// file offset. Its segments, each starting on a page boundary (4 KiB on
// x86-64, 64 KiB on arm64, the largest page size there) so that each can be
// mapped on its own:
//
//	PT_LOAD R    ELF and program headers, .hash, .dynsym, .dynstr, .stapsdt.base
//	PT_LOAD R+X  .text: one stub per probe, 16-byte aligned, in spec order
//	PT_LOAD RW   .dynamic, .probes: one 2-byte semaphore per probe
//	PT_DYNAMIC   .dynamic;  PT_GNU_STACK RW (no executable stack)
//
// and, outside any segment, .note.stapsdt (not allocated, as sys/sdt.h
// makes it) and the section headers.
//
// A stub is the probe site, a nop, then a return; it sits 4 bytes into a
// 16-byte slot whose first 4 bytes are a copy of the stub's first 4 bytes,
// which no uprobe changes (libstapsdt.h's inline check compares the two
// in one 8-byte load). On arm64 the stub is nop (d503201f) then ret
// (d65f03c0). On x86-64 it depends on the site's kind (Site, see "Probe
// sites"): "90 41 5b 41 ff e3" (nop; pop %r11; jmp *%r11), "0f 1f 44 00
// 00 41 5b 41 ff e3" (nop5; pop %r11; jmp *%r11) or "66 2e 0f 1f 84 00 00
// 00 00 00 c3" (nop10; ret, as pop/jmp would not fit the slot).
// The probe site is the nop at the stub's entry, where no red zone is
// live, so the kernel may turn it into a call that pushes below the stack
// pointer. A stub has no relocations and does not touch memory beyond its
// own stack slot: it is position independent and callable from any
// thread.
//
// # Probe sites
//
// What a traced hit costs depends on the site's kind and the kernel.
// Measured on Linux 6.18 (AMD EPYC, a VM; traced with @ = count(), per
// hit, the loop included):
//
//	1-byte nop in the caller's body (sys/sdt.h)       435 ns   int3, emulated
//	5-byte nop in the caller's body                   497 ns   6.18's trampoline
//	stub "nop; ret"                                   667 ns   int3, then ret
//	stub "nop; pop %r11; jmp *%r11"                   433 ns   int3, no ret
//	stub "nop5; ret", "nop5; pop; jmp"                497 ns   trampoline
//	stub "nop10; ret"                                 never fires: 6.18 refuses the cs prefix
//
// After an int3 trap, the first ret that returns to a call made before
// the trap costs ~230 ns more (the return through the exception exit
// leaves the return stack predictor unusable); the same ret after the
// trampoline's syscall exit costs nothing more, nor does any ret after a
// call made after the trap. So the 1-byte nop's stub leaves by an indirect
// jmp, and then costs what sys/sdt.h's nop in the caller costs; the 5-byte
// nop's stub does too, for the kernels (before 6.18) and hits (the first)
// where its nop is trapped rather than optimized. Load takes
// the kind from Options.Site, else the USDTKIT_SITE environment variable,
// else ChooseSite for the running kernel: SiteNop on every kernel so far,
// since the 6.18 trampoline costs ~14% more than the trap on the hosts
// measured (set USDTKIT_SITE=nop5 where it is cheaper), and no released
// kernel optimizes the 10-byte form. Build, whose object may run on any
// kernel (usdtkit gen writes it ahead of time), writes the kind ChooseSite
// picks for every kernel, SiteNop, unless BuildOptions.Site (usdtkit gen
// --site) says otherwise; it reads neither the running kernel nor
// USDTKIT_SITE.
//
// Each note records provider, probe name, the stub's address as the pc, the
// address of .stapsdt.base as base (so tracers' prelink adjustment is 0),
// the semaphore's address and the argument specs. The semaphore lives in
// .probes, in the writable segment, where the kernel's uprobe reference
// counter (ref_ctr_offset, Linux 4.20+) and older tracers that poke it
// expect it.
//
// The dynamic section has DT_HASH (a SysV hash table; no .gnu.hash, which
// glibc does not need), DT_STRTAB, DT_SYMTAB, DT_STRSZ, DT_SYMENT and
// DT_SONAME "<provider>.so" (SOName), the name usdtkit gen gives the file.
// .dynsym holds per probe a GLOBAL OBJECT symbol
// "<provider>_<probe>_semaphore" (SemaphoreSymbol), the name sys/sdt.h
// gives semaphores, and a GLOBAL FUNC symbol for the stub,
// "<provider>_<probe>_fire" (FireSymbol), which the generated C header
// calls and dlsym and ctypes find. Every symbol starts with the provider's
// name, and the two suffixes differ, so no name can be another's: a probe
// named write, malloc or main cannot interpose on a function of the C
// library or the program that links or opens the object.
//
// # Argument specs
//
// Specs describe where the C calling convention puts each argument at the
// stub's entry; the size is the ArgType's Size and "-" marks Signed types.
// On x86-64 (System V AMD64 ABI) arguments 1-6 are in rdi, rsi, rdx, rcx,
// r8, r9, named by the alias of the argument's size ("-4@%edi", "1@%sil",
// "-2@%dx", "8@%r8"); 0(%rsp) holds the return address and argument 7 is
// at "8(%rsp)", argument 8 at "16(%rsp)", one 8-byte slot each, the value
// in the slot's low bytes ("-4@8(%rsp)"). On arm64 (AAPCS64) arguments 1-8
// are in x0..x7 and the rest at "[sp]", "[sp, 8]", ... in 8-byte slots.
// arm64 registers are always named by their x name, also for smaller
// arguments ("-4@x0", not "-4@w0"): the size tells the tracer to truncate
// the register and sign- or zero-extend, as for x86's aliases, and libbpf
// accepts only x0..x30 and sp. Bool is "1@", Pointer, String and Bytes are
// 8-byte unsigned addresses. Every spec parses with sdt.ParseArg.
//
// # Errors
//
// Build's errors wrap ErrSpec (the spec fails ProviderSpec.Validate, has no
// probes, or a probe name clashes with a semaphore or fire symbol) or
// ErrUnsupportedMachine.
//
// # Sources
//
// sourceware.org/systemtap/wiki/UserSpaceProbeImplementation (note layout,
// .stapsdt.base, semaphores); systemtap includes/sys/sdt.h (_SDT_SEMAPHORE
// naming, .probes); the System V gABI (dynamic section, hash table);
// System V AMD64 psABI §3.2.3 and Arm AAPCS64 §6.8.2 (argument passing);
// libbpf src/usdt.c parse_usdt_arg (accepted operands); Linux 6.18
// arch/x86/kernel/uprobes.c (nop5 optimization: can_optimize; the
// prefixes a uprobe refuses), and the later patches that move the
// optimization to the 10-byte nop.
//
// # Loading
//
// Load builds the object for the host (amd64 or arm64; elsewhere it fails
// with errors.ErrUnsupported), writes it and maps it without cgo or
// dlopen. By default the file goes to a private directory,
// $XDG_RUNTIME_DIR/usdtkit or usdtkit-<euid> in os.TempDir(), created 0700
// and checked on its open descriptor (not a symbolic link, owned by us,
// mode 0700; an Options.Dir must only be unwritable by others), named
// "<provider>-<pid>-<16 random hex>.so", created with O_EXCL|O_NOFOLLOW and
// mode 0600 relative to that descriptor. Options.Memfd writes it to a
// memfd instead, sealed against writes. If the default directory fails
// these checks (anyone can create usdtkit-<euid> in a shared /tmp first, as
// their own directory, a symbolic link or with mode 0777) or cannot be
// created, Load uses a memfd rather than fail; it fails only if that fails
// too. A given Options.Dir that fails them is an error.
//
// The file must stay at its path while tracers may look: tplist-bpfcc -p
// and bpftrace -p open the path maps shows, through /proc/PID/root, and
// find nothing in an unlinked file that no descriptor holds (tested by
// hand with a dlopen'ed library unlinked after loading: both list no
// probe, bpftrace refuses the usdt target). For a "(deleted)" mapping bcc
// looks among the process's open descriptors (/proc/PID/fd) for the
// mapped file, so a Provider keeps its memfd open, as libstapsdt does, and
// bcc's tools see memfd-backed probes too. usdtkit list/trace -p read both
// through /proc/PID/map_files. So the file is removed at Close, not right
// after mapping.
//
// # Mapping
//
// As ld.so does: one PROT_NONE reservation of the object's whole span,
// then each PT_LOAD mmap'ed MAP_PRIVATE|MAP_FIXED from the file at its
// offset with its protection (the part of the last page past Filesz zeroed
// and anonymous pages for Memsz > Filesz). /proc/PID/maps then shows three
// file-backed mappings (r--p, r-xp, rw-p) with offsets equal to addresses,
// and the load base is the start of the offset-0 mapping. The descriptor,
// close-on-exec, is kept until Close: a memfd's for bcc to find, a file's
// holding a shared flock(2) that tells reapers the file is in use.
//
// # Enabled
//
// Probe.Enabled is one atomic 4-byte load of the probe site, compared with
// the bytes Build wrote there. Every uprobe on the site changes them (int3,
// or on Linux 6.18+ the call to the uprobe trampoline that a nop5 site
// becomes after its first hit; BRK on arm64) and the kernel restores them on
// detach, so Enabled sees every tracer of this process, whether or not it
// counts the semaphore (bcc with tracefs, perf, gdb breakpoints), at the
// cost of the one load a semaphore check costs. Reading the semaphore as
// well would make the untraced case two loads. The semaphores are still
// there and counted by the kernel (tests check 0 / non-zero / 0): C code
// and other languages using the standalone .so check them.
//
// # Firing
//
// Probe.Fire(args ...uint64) calls fire, a NOSPLIT Go assembly trampoline
// (fire_amd64.s, fire_arm64.s) that loads len(args) values (at most
// MaxArgs) into the C argument registers and stack slots the notes' specs
// name, and calls the stub. Registers it does not fill are zero. On amd64 it
// aligns SP to 16 at the call by choosing one of two bodies whose frame
// sizes differ by 8, and keeps 192 bytes of its own frame free below SP
// (ADJSP, recorded by the assembler, so tracebacks stay exact): the
// kernel's optimized uprobe path pushes 32 bytes plus the stub's return
// address (168 bytes in all for the nop10 form, which first moves SP past
// a red zone). It returns by an indirect JMP to the popped return address,
// not RET, for the reason the 1-byte nop's stub does (see "Probe sites").
// Fire is inlinable, allocation-free (the variadic slice stays on
// the caller's stack: fire is go:noescape) and makes no call that could
// grow the goroutine stack between BytesPtr and the stub, so a pointer to
// stack memory passed through BytesPtr stays valid. Strings go through
// CString (a NUL-terminated heap copy, made only when Enabled).
//
// # Lifetime
//
// Close replaces the mapping in place, never unmapping it: the stub pages
// by an anonymous read+execute copy of the original stubs, moved over them
// with mremap(MREMAP_FIXED) so that the stubs never disappear, and the rest
// by PROT_NONE pages. A Fire racing with Close therefore still calls a stub
// that returns, and Enabled reads original bytes (false); tracers see no
// object any more. Close then removes the file by its name in the directory
// descriptor Load opened (unlinkat, after checking that the name still is
// the file it holds open; the directory's path may lead elsewhere by now)
// and closes both descriptors.
// The range (and the stub pages' memory, 16 bytes per probe) is unmapped
// by a runtime.AddCleanup once the Provider and all its Probes are
// unreachable: Fire passes its *Probe to the trampoline and Enabled keeps
// it alive across its load, so no goroutine can be in the stubs then. Each
// closed but reachable Provider keeps three mappings; a process may have
// only vm.max_map_count (65530) of them, which Load/Close loops without the
// cleanup exhausted after ~20000 rounds. A stress test fires from 64
// goroutines while Close runs; an implementation that unmaps at Close
// crashes it. A Provider dropped without Close is cleaned up the same way,
// file included.
//
// Go has no exit hook, so a process that exits or is killed without Close
// leaves its file. Every Load that writes a file first reaps the directory:
// it removes the "<provider>-<pid>-<hex>.so" files whose lock no one holds.
// The lock, not the PID in the name, tells whether the owner lives: a flock
// is released when its process ends and seen from every PID namespace,
// while a PID names another process in another PID namespace (where PID 1
// always exists) or after reuse. A new file's lock is free for the moment
// between its creation and flock; a creator whose file is reaped in that
// moment notices (the name is gone, or its flock would block) and tries
// another name. Call Close before exiting to leave nothing (defer it in
// main); a memfd never leaves anything. Reap does the same without a Load
// (usdtkit calls it at start). The PID in the name is only for people
// reading the directory.
//
// # Concurrency
//
// Provider and Probe are safe for concurrent use; Enabled and Fire are
// lock-free and may race with Close. Methods of a nil *Probe are no-ops
// (Enabled false), so code generated for a provider that failed to load
// still runs.
//
// Sources for the runtime: mmap(2), mremap(2), memfd_create(2), flock(2),
// proc(5) (maps, map_files); Linux kernel/events/uprobes.c (breakpoint
// install and restore, ref_ctr_offset) and, for 6.18,
// arch/x86/kernel/uprobes.c (the trampoline's 32-byte push); Go's
// cmd/internal/obj/x86 and arm64 preprocess (frame layout, ADJSP) and
// runtime/stack.go (NOSPLIT limits).
package dynsdt
