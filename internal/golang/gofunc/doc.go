// Package gofunc reads what a tracer needs to know of a Go function from
// its binary: where to probe its entry and each of its returns, and where
// every parameter and result is at those points.
//
// # Model
//
// A Go function compiled for the register ABI (ABIInternal, Go 1.17+) gets
// its arguments in registers (amd64: RAX RBX RCX RDI RSI R8 R9 R10 R11;
// arm64: R0..R15) and returns its results in the same registers, counted
// from the first again. Its first instructions compare the stack pointer
// with the goroutine's stack guard and, when the stack is short, call
// runtime.morestack, which copies the stack and jumps back to the entry: a
// uprobe at the entry would fire twice for one call. So the entry site is
// the first instruction after the prologue (DWARF's prologue_end, or the
// instruction after the stack check's conditional branch), where the
// argument registers still hold the arguments.
//
// Returns are never traced with a uretprobe, which replaces the return
// address on the goroutine's stack: the runtime later copies that stack
// and finds a return address it does not know ("unexpected return pc"),
// and the program dies. Instead every RET instruction of the function is a
// site. A deferred call that recovers a panic resumes the function at its
// deferreturn epilogue, which ends in one of those RETs.
//
// Parameters come from the function's DWARF (delve's pkg/proc reads it):
// names, types and the location expressions at the entry (registers, or
// DW_OP_call_frame_cfa plus an offset for values passed on the stack,
// turned into an offset from the stack pointer at the entry site through
// .debug_frame). Results have no location at the RETs, so they are placed
// by package goabi's implementation of the ABI's assignment rules, which
// tests compare with the DWARF of compiled programs. Go's DWARF lists a
// named result that a deferred closure assigns twice; a name is placed
// once, as the ABI counts it once.
//
// Each value is split into Words, the machine words a BPF program reads:
// a string is a pointer and a length, a slice a pointer, a length and a
// capacity, an interface a type word and a data word; a struct passed by
// value becomes one Param per field ("p.X"). What cannot be read from a
// uprobe's registers (floating-point registers, which pt_regs does not
// hold) is a Param with a Reason instead of Words.
//
// The current goroutine is in a register (amd64 R14, arm64 R28) in every
// ABIInternal function; GoidOffset locates runtime.g's goid in it, so
// events carry the goroutine id and entries pair with returns even when
// the goroutine moves to another thread.
//
// # Stripped binaries
//
// Without DWARF (go build -ldflags=-w or -s) the binary is read without
// delve: functions are found through the symbol table or .gopclntab
// (package symtab), the entry site by decoding the stack check, and the
// RETs by decoding the function; but parameter names, types, results and
// the goroutine id's place in runtime.g are unknown. Func.Problems says so.
//
// # Errors
//
// Open returns an error for a file that is not a Go ELF binary of a
// supported machine (amd64, arm64) or that cannot be read; a function that
// is not there is ErrNotFound.
//
// # Hostile binaries
//
// delve's loader is not hardened: it parses with debug/elf and
// debug/dwarf, allocates sizes the file claims, and parses .debug_info,
// the line tables and the frame tables on goroutines of its own, where a
// panic ends the process (a recover on the caller's goroutine cannot
// catch it) and an allocation of a claimed size ends it too ("out of
// memory"). A .debug_line whose SHF_COMPRESSED flag was cleared made it
// allocate tens of gigabytes; one flipped bit in .debug_abbrev made its
// inlined-call walk (loadDebugInfoMapsInlinedCalls) dereference the nil
// entry that ends the section.
//
// Running delve in a subprocess would contain that, but a library cannot
// rely on re-executing its host program. So Open checks the DWARF before
// delve sees it (checkDWARF), and reads a binary that fails the check as
// if it had no DWARF: Binary.DWARFError says why, and every Func's
// Problems says the DWARF was ignored. The check
//
//   - bounds what is allocated before it is read: a compressed section's
//     claimed size (at most 64 times its compressed size, and 1 GiB), a
//     NOBITS .eh_frame, the build-id note's sizes; it decompresses each
//     zlib section to its end, which checks its checksum and its size;
//   - refuses a .debug_* section that holds compressed data without
//     SHF_COMPRESSED;
//   - runs, under a recover, the delve parsers that delve runs on its
//     goroutines, on the same bytes: line.Parse of each compile unit's
//     line table, frame.Parse of .debug_frame and .eh_frame,
//     ReadUnitVersions of .debug_info; before line.Parse, it reads the
//     table's header itself, so that the directory and file counts, which
//     delve allocates and loops by, are within the table;
//   - replays delve's walk of .debug_info with the same debug/dwarf reader
//     calls, and refuses the file where delve would find the nil entry,
//     follow DW_AT_import past the last entry, or recurse deeper than a
//     bound (its stack would overflow).
//
// What it does not cover: a file changed between the check and delve's
// load (delve is given the same open file, /proc/self/fd/N, so a rename
// does not matter, but a writer of the file can still change its bytes);
// the walk follows delve v1.27.2's loader and must be revisited when
// delve is upgraded; and what delve parses later, on the caller's
// goroutine (types, location lists, line programs), is guarded by a
// recover only, its allocations bounded by the section sizes alone.
// Open only binaries whose writers you trust not to race you.
//
// Opening a binary never runs debuginfod-find, which delve would call to
// download the debug information of a binary without DWARF. delve prints
// a warning to standard error when a binary has no DWARF.
package gofunc
