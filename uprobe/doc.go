// Package uprobe finds the functions of ELF files that user-space probes
// (uprobes) can attach to: Symbols reads an object's function symbols,
// List and Functions turn selectors into objects and sites (a function's
// entry, a place inside it, its return). It reads and decides; it attaches
// nothing, and links neither cilium/ebpf nor go-delve/delve: package trace
// traces the sites, and package gosig reads Go functions' signatures from
// DWARF. CRegisters names the C ABI's argument registers (x86-64 rdi rsi rdx
// rcx r8 r9, arm64 x0..x5) and return register (rax, x0) that tracers read
// as arg0..arg5 and retval.
//
// # Model
//
// A uprobe is named by a file and a file offset (the kernel's
// Documentation/trace/uprobetracer.rst: PATH:OFFSET), while users name
// functions. [Symbols] bridges the two for one [elfnotes.File]:
//
//	.symtab                 ─┐
//	.dynsym + .gnu.version*  ─┼─► defined STT_FUNC and STT_GNU_IFUNC ─► []Symbol
//	.gopclntab (Go, when     ─┘    st_value ─(PT_LOAD)─► file offset
//	  .symtab is stripped)
//
// Each [Symbol] has the symbol's virtual address (Value) and the file offset
// of that address (Offset), found through the PT_LOAD segment that holds it:
// p_offset + (st_value - p_vaddr). In a relocatable object (ET_REL) Value is
// section-relative and Offset is the section's offset plus Value. Offset is 0
// when no segment holds file bytes for Value (a separate debug file).
//
// Invariants of the list Symbols returns:
//   - only defined functions: STT_FUNC and STT_GNU_IFUNC entries whose
//     st_shndx is not SHN_UNDEF, including those with st_size 0 (hand-written
//     assembly often has no .size);
//   - sorted by Value, then Name;
//   - a function in both .symtab and .dynsym (same name and address) is
//     listed once, from .symtab, marked Dynamic, with the GNU version of its
//     .dynsym entry. ld writes "foo@V1" into .symtab for functions versioned
//     with .symver; such an entry takes the plain .dynsym name;
//   - one name and address is one entry: glibc 2.34 gives each function it
//     took over from libpthread two versions at one address
//     (pthread_create@GLIBC_2.2.5 and pthread_create@@GLIBC_2.34); it is
//     listed once, with the default ("@@") version;
//   - several entries may share a name at different addresses: versions
//     (memcpy@GLIBC_2.2.5 and memcpy@@GLIBC_2.14), local functions of
//     different object files.
//
// The tables are read by internal/elf/symtab, the one symbol-table reader,
// which also serves package sdt's data symbols; Symbols keeps its
// functions and adds file offsets and demangled names. SymbolSource and
// ErrNoSymbols are that package's, so errors.Is works across both.
//
// Names are as stored: C++ and Rust names mangled, with Demangled (and
// [Symbol.DisplayName]) giving the readable form; Go names as the Go linker
// writes them ("main.(*T).M"). A Go binary stripped of .symtab (go build
// -ldflags=-s) is read from its .gopclntab instead, through debug/gosym, and
// its .dynsym if any. That table names an assembly function and its ABI
// wrapper alike, where .symtab suffixes the ABI0 one with ".abi0"; both are
// listed, at their own addresses. [IsGo] tells whether a file is a Go
// binary.
//
// [List] reads an object stripped of its .symtab (Debian's libc, most
// distribution libraries) together with its separate debug file, found by
// build ID or .gnu_debuglink in /usr/lib/debug inside the root of the
// object's process: the debug file's .symtab
// takes the place of the missing one, its symbols marked [SourceDebug],
// with offsets computed in the object itself. So functions only the debug
// file names (glibc's _int_malloc) can be listed and traced. A malformed
// .gnu_debuglink leaves the object's own symbols, with a warning.
//
// An STT_GNU_IFUNC symbol's address is its resolver, which the dynamic
// linker runs once to pick an implementation; to trace calls, probe the
// implementations (for glibc's memcpy, __memcpy_avx_unaligned_erms and
// its siblings).
//
// # Go functions
//
// A Function of a Go binary has Function.Go set. Tracers never put a
// uretprobe on one: the Go runtime finds the rewritten return address when
// it copies a goroutine's stack, and crashes on it. Package trace probes
// the first instruction after the stack check instead of the entry (a
// probe at the entry fires again when morestack restarts the function) and
// every RET for a return, and reads arguments by name (package gosig shows
// what it reads and where).
//
// # Opening files
//
// [List] and [Functions] open each object once, as package sdt does (see
// its doc): a process's objects inside the process's root or through
// /proc/PID/map_files, regular files only, checked against the mapping's
// device and inode. [Object] and [Function] record the file read (Dev,
// Inode); tracers and package gosig open it again the same way, refuse a
// different file, and give the kernel and the DWARF reader
// /proc/self/fd/N of that open file. A process's object that cannot be opened or read is
// skipped and reported once to [ListOptions.Warn].
//
// # Names
//
// A listing whose selectors all name functions by name ([Selector.Literal]:
// no glob, no address), which is what tracing uprobe:libc:malloc needs,
// reads only the symbols that can match (those of the name, of a Go
// generic function's instances, and mangled names, which may demangle to
// it), in one pass over the tables, instead
// of sorting and merging every symbol of the object. What it returns is
// what the listing of every symbol gives for those selectors; damage in
// the entries it skips is not warned about.
//
// # Sites
//
// Functions returns one site per address: symbols that alias one address
// (malloc and __libc_malloc) would otherwise each get a probe and every hit
// would be reported twice; the name kept is chosen deterministically
// (global over weak over local, unversioned, fewer leading underscores,
// shorter). A site inside a function (FUNC+OFFSET, 0xADDR) must start an
// instruction: a uprobe replaces the byte at its address with a breakpoint,
// and inside an instruction that changes what the program does.
// [Function.CheckBoundary], which every tracer calls, decodes the function from its first byte (package internal/elf/insn: x86asm
// for x86-64, 4-byte alignment for arm64) and refuses any other offset with
// an error wrapping [ErrNotBoundary] that names the boundaries around it,
// as bpftrace does.
//
// # Errors
//
// Symbols returns an error wrapping [ErrNoSymbols] when the file has no
// table at all. A malformed table — wrong sh_entsize, a size that is not a
// whole number of entries, a name or version outside its string table, a
// bad sh_link, a broken version chain — gives an *[elfnotes.FormatError]
// whose Off is the byte offset in the file of the bad entry or section, so
// readelf and xxd can confirm it. There are no partial results: on error the
// slice is nil. Every length read from the file is checked against the data
// before slicing, and allocations are bounded by section sizes, which
// elfnotes checks against the file size. debug/gosym is not hardened
// against malformed input: before it runs, the function count, function
// table and name offsets of the pclntab are checked, so that what it
// allocates is bounded by the table size, and it is called in exactly one
// function, which converts a panic into a FormatError. Only the pclntab
// formats of Go 1.16 and later are read; older ones give a FormatError.
//
// # Lifetimes and concurrency
//
// Symbols reads sections through f and does not retain it; the caller
// closes f. A [Symbol] is plain data with no resources. Symbols may be
// called concurrently, also on one File, as elfnotes allows.
//
// # Sources
//
// System V gABI, "Symbol Table" (Elf32_Sym, Elf64_Sym) and "Program
// Header"; LSB Core, "Symbol Versioning" (.gnu.version, .gnu.version_d,
// .gnu.version_r; glibc elf/dl-version.c); golang.org/s/go12symtab and
// debug/gosym for .gopclntab, cmd/link/internal/ld for Go's section names.
// Tests compare the results with GNU readelf -sW --dyn-syms and -lW.
//
// # Usage
//
//	f, err := elfnotes.Open("/lib/x86_64-linux-gnu/libc.so.6")
//	if err != nil { ... }
//	defer f.Close()
//	syms, err := uprobe.Symbols(f)
//	if err != nil { ... }
//	for _, s := range syms {
//		fmt.Printf("%#x %s\n", s.Offset, s.DisplayName())
//	}
package uprobe
