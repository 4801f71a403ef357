// Package symbolize turns user-space addresses of a process into frames:
// object, offset, function, and for Go code file and line.
//
// # Model
//
//	New(pid) ─► /proc/PID/maps (executable mappings) ─► objects opened once (procfs.Open), root fd kept
//	Frames(addrs) ─► mapping ─► file offset ─► PT_LOAD ─► virtual address ─► object table (Cache)
//	                     │                                                   ├─ .gopclntab: Go function, file:line
//	                     │                                                   ├─ DWARF: inlined calls, file:line
//	                     │                                                   └─ .symtab/.dynsym, or the .symtab of the
//	                     │                                                      separate debug file; C++/Rust demangled
//	                     └─ anonymous executable memory ─► /tmp/perf-PID.map, then the jitdump (JIT code)
//
// [New] reads the process's maps once and opens every file it maps
// executable, inside the process's root or through map_files (package
// procfs), and keeps an O_PATH descriptor of the process's root. Tables
// are read on first use, but from those open files, so addresses of a
// process that has exited since New still symbolize; debug files and the
// perf map are found in the kept root. An address in no known mapping
// makes [Symbolizer.Frames] read the maps again once (a library loaded
// since), while the process lives.
//
// Object tables are kept in a [Cache] keyed by the file's device, inode,
// size and modification time, shared by every Symbolizer given the same
// Cache: a library is read once, however many processes and stacks use it.
// A table is a sorted slice of functions (one name per address: global
// before weak before local); a lookup is a binary search.
//
// Separate debug files (an object stripped of its .symtab) are found as
// GDB finds them, by build ID and .gnu_debuglink (see
// symtab.OpenDebugFile), in [Options.DebugDirs] inside the process's
// root. Memfd objects and deleted files are read through map_files; their
// own symbols name their functions (dynsdt writes one .dynsym symbol per
// probe stub, named as the probe).
//
// JIT code is named by the process's perf map, "/tmp/perf-NSPID.map" in
// its root (NSPID the PID in its own namespace), written by OpenJDK
// (jcmd PID Compiler.perfmap), Node (--perf-basic-prof) and Python 3.12
// (-X perf). It is read when an anonymous executable address is first
// looked up, at most [Options.MaxPerfMap] bytes, and read again when it has
// changed and an address is not found; later lines win over earlier ones.
//
// JIT code the perf map does not name is looked for in the process's
// jitdump file ([ParseJitdump]; OpenJDK's and V8's perf agents, Python
// 3.13's -X perf_jit): the jit-PID.dump the process maps (JIT runtimes map
// it so that perf finds it), else /tmp/jit-NSPID.dump, in its root. Its
// JIT_CODE_LOAD records name functions, JIT_CODE_MOVE records their new
// places and JIT_CODE_DEBUG_INFO records give their frames a file and
// line; the native code in it is passed over, not read. It is opened
// by New and held open (a runtime that removes it as it exits leaves it
// readable), read up to [Options.MaxJitdump] bytes when an anonymous
// executable address is first not found, and read on from where it
// stopped when it has grown since and an address is not found; a file
// replaced or shortened is read anew. Frames it names have the dump's
// path as their Object.
//
// # Frames
//
// A [Frame] always says what is known: the function and its offset; or,
// when the function is unknown, the object and the file offset
// ("[libfoo.so+0x1234]"); a bare address only for an address in no
// mapping or in anonymous memory no perf map names. [Format] and
// [FormatPerf] print frames as bpftrace prints ustack and ustack(perf).
//
// Where the object or its separate debug file has DWARF (Go binaries by
// default, C and C++ built with -g), an address in inlined code gives one
// frame per inlined call, innermost first and marked Inlined, each with
// the file and line of its position (for a caller, its call site), as
// addr2line -i and runtime.CallersFrames give them; the last frame is the
// function the code is in, with the symbol table's name and offset.
//
// An object's DWARF is read when a Symbolizer that uses it (not
// Options.NoDWARF) first looks up one of its addresses, and then only the
// sections lookups need (.debug_info, _abbrev, _line, _str, the ranges
// and DWARF 5's index sections; not location lists, type units or frame
// tables). It is decoded once per compilation unit and subprogram, when
// an address in it is first looked up, never per address: an index of
// every unit's ranges; per unit, its subprograms' ranges and its line
// table (one row per change of file or line); per subprogram, its
// inlined calls as a tree and a sorted index of address segments, each
// naming the innermost call that contains it. A lookup is a few binary
// searches and a walk up that tree.
//
// Without DWARF, a Go frame names the function the address is in (the
// outermost of an inlined chain) with the file and line of the innermost
// body, from .gopclntab; other frames have no file and line.
//
// # Errors and limits
//
// Everything read is untrusted: ELF files through elfnotes and symtab
// (bounded, damage kept local), the perf map through [ParsePerfMap]
// (lines of at most 64 KiB, malformed lines skipped with a *FormatError
// warning), the jitdump through [ParseJitdump] (a bad header leaves it
// unused, a malformed record is skipped with a *FormatError warning with
// its byte offset, names are at most 64 KiB), debug/gosym only through symtab's panic-safe wrapper, and
// debug/elf and debug/dwarf (not hardened either) only in dwarf.go, after
// checking that the .debug_* sections total at most 256 MiB, with any
// panic turned into an error that leaves the object without DWARF. A file
// that cannot be read gives frames with object and offset, not an error.
//
// # Concurrency and lifetimes
//
// A Symbolizer is safe for concurrent use and holds file descriptors until
// Close, which must not race with Frames. A Cache is safe for concurrent
// use and holds no descriptors.
//
// # Sources
//
// proc(5) for maps and map_files; GDB's "Debugging Information in Separate
// Files" for build-id and debuglink lookup; Linux perf's
// tools/perf/Documentation/jit-interface.txt for the perf map format and
// jitdump-specification.txt for the jitdump;
// golang.org/s/go12symtab and debug/gosym for .gopclntab; bpftrace's
// ustack output for the printed form.
package symbolize
