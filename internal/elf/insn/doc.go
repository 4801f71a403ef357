// Package insn finds where machine instructions start in a function's
// code. A uprobe inside an instruction corrupts it, so a probe at an
// offset must be at a boundary.
//
// x86-64 code is decoded from the function's first byte with x86asm
// (DecodeX86, shared with gofunc); on arm64 every multiple of 4 is a
// boundary. Other machines are not supported. All functions are pure and
// safe for concurrent use.
package insn
