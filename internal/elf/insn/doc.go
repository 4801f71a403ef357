// Package insn finds where machine instructions start in a function's
// code. A uprobe replaces the first byte of the instruction at its address
// with a breakpoint; placed inside an instruction it corrupts that
// instruction's bytes and silently changes what the program does, so a
// probe at an offset into a function must be at an instruction boundary.
//
// # Model
//
// x86-64 instructions are 1 to 15 bytes long: boundaries are found by
// decoding linearly from the function's first byte with
// golang.org/x/arch/x86/x86asm (compilers put no data between a
// function's instructions on x86-64; jump tables live in .rodata).
// AArch64 instructions are 4 bytes, aligned: every multiple of 4 from the
// function's start is a boundary. Other machines are not supported.
//
// DecodeX86 is the one x86-64 decoding step, shared with package gofunc.
// Everything here is pure computation on bytes the caller read; nothing
// is retained and all functions are safe for concurrent use.
package insn
