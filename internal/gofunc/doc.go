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
// tests compare with the DWARF of compiled programs.
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
// is not there is ErrNotFound. delve parses the file with debug/elf, which
// is not hardened against hostile input; Open and Func turn a panic on the
// caller's goroutine into an error, but delve's loader also parses DWARF
// on goroutines of its own, where a panic ends the process: an
// uncompressed .debug_info with a few bytes changed does that (delve
// v1.27.2, bininfo.go loadDebugInfoMapsInlinedCalls). Open only binaries
// you would run.
//
// Opening a binary never runs debuginfod-find, which delve would call to
// download the debug information of a binary without DWARF. delve prints
// a warning to standard error when a binary has no DWARF.
package gofunc
