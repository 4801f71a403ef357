// Package sdt models USDT (SystemTap SDT) probes: it reads them from ELF
// files and processes, parses their argument specs and selects them with
// bpftrace-style patterns.
//
// # Model
//
// A compiler turns each DTRACE_PROBE/STAP_PROBE macro use into a nop at the
// probe site and an NT_STAPSDT note in .note.stapsdt (see package elfnotes
// for the note layout and the .stapsdt.base adjustment). The data flows:
//
//	note ──► Location (address, file offset, semaphore, arg string)
//	     ──► Probe (provider:name of one object, every Location of it)
//	     ──► Arg (one parsed spec per argument of one Location)
//	     ──► (later) BPF instructions that read each Arg at that Location
//
// A probe inlined or expanded several times has several locations, and each
// has its own argument specs: the same argument may live in %rdi at one site
// and at -20(%rbp) at another. Locations are kept in note order.
//
// A semaphore is a 2-byte counter in the object's data; code guarded by it
// computes probe arguments only while the counter is non-zero. Tracers
// increment it through the kernel (uprobe ref_ctr_offset), which needs its
// file offset: [Location.SemaphoreOffset].
//
// # Argument specs
//
// Each argument is written "[-]N[f]@OPERAND": N bytes, '-' for signed, 'f'
// for floating point, and an operand in the assembler syntax of the target
// (AT&T for x86-64, the A64 forms sys/sdt.h emits for arm64). [ParseArgs]
// chooses the syntax from the object's elf.Machine at run time, so arm64
// objects are listed on amd64 hosts too. See argspec.go for every form.
//
// # Discovery
//
// [List] reads files, library short names ("libc", "libstdc++",
// "libpython3.11", resolved like the dynamic loader does) and every object a
// process has mapped executable, deduplicated by device and inode.
//
// Each object is opened once and read through that open file. A process's
// object is resolved inside the process's root (so processes in containers
// work, and a container's symlinks cannot lead out of it), only a regular
// file whose device and inode are the mapping's is accepted, and
// /proc/PID/map_files serves memfd, deleted and replaced files; a FIFO or
// device is refused without being opened. [Probe.Dev] and [Probe.Inode]
// record the file read; package trace opens it again the same way, refuses
// a different file, and attaches through the open file (/proc/self/fd/N),
// so the kernel never resolves a name the process could have changed.
//
// Package sdt only reads: it links no BPF loader. Package trace traces
// probes (programs, or events with trace.CompileEvents).
//
// One bad object does not hide a process's others: an object of the
// process that cannot be opened or read (a malformed library, a deleted
// file without CAP_SYS_ADMIN) is skipped and reported once to
// [ListOptions.Warn]. Named files are never skipped.
//
// # Errors
//
// A note section that cannot be read fails the object with an
// *elfnotes.FormatError (for a process's object: a warning, see above). An
// argument that does not parse does not: its [Arg.Err] holds an *ArgError
// and the other arguments are still usable. A missing file, library or
// process wraps os.ErrNotExist, [ErrNotFound] or [ErrNoProcess].
//
// # Sources
//
// The note and argument formats follow sourceware's
// UserSpaceProbeImplementation page and systemtap's sys/sdt.h; the selector
// syntax follows bpftrace's usdt probe type.
package sdt
