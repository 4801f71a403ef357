// Package goabi computes where Go's register-based calling convention
// (ABIInternal) puts the parameters and results of a Go function, for amd64
// and arm64, so that a uprobe program can read them from the saved user
// registers (pt_regs) or the stack.
//
// # Model
//
// A parameter or result is described by a [Type]: its [Kind] (every integer,
// bool and pointer-shaped type is [Int]; then [Float], [Complex], [String],
// [Slice], [Interface], [Struct] and [Array]), its size and alignment, and for
// structs and arrays their parts. [FromDWARF] builds a Type from a DWARF type
// as delve's godwarf package reads it, so the types of a subprogram's formal
// parameters can be passed straight in.
//
// [Assign] runs the algorithm of the ABI specification over the receiver and
// parameters (one list; a receiver is simply the first parameter) and over the
// results, and returns a [Frame]: one [Assignment] per value. An Assignment is
// either a list of [Piece]s, one per register-assigned base value (which
// register, how many bytes of it, at which offset of the value and under which
// selector path such as ".len" or ".X[0].real"), or a stack slot in the stack
// argument area. The data flow is:
//
//	DWARF formal parameter -> FromDWARF -> *Type -> Assign -> Piece.Reg
//	  -> IntRegName (a pt_regs name) -> a BPF load at entry or at RET
//
// # The algorithm
//
// Registers come in two sequences: integer (amd64: RAX RBX RCX RDI RSI R8 R9
// R10 R11; arm64: R0-R15) and floating point (amd64: X0-X14; arm64: F0-F15).
// Parameters are assigned first, from register 0 of each sequence; results
// are assigned independently, again from register 0. For each value:
//
//   - a zero-sized value goes to the stack (it uses no space there, but may
//     add alignment padding);
//   - otherwise the value is broken into base values: integers and pointers
//     take one integer register, floats one float register, complex numbers
//     two float registers (real, imaginary), strings two integer registers
//     (pointer, length), slices three (pointer, length, capacity), interfaces
//     two (type or itab word, data word), structs their fields in order,
//     arrays of length 0 nothing and arrays of length 1 their element;
//   - a value that contains an array of length 2 or more, or whose base values
//     do not all fit in the registers left, goes to the stack as a whole, and
//     the register counters stay as they were before it: a later, smaller
//     value may still get registers.
//
// An integer narrower than 8 bytes occupies the low bytes of its register
// ([Piece.Size] says how many); so does a float32 in a float register.
//
// The stack argument area holds the stack-assigned parameters, each at the
// next offset aligned to its type's alignment, then padding to the pointer
// size (8), then the stack-assigned results in the same way, then padding to
// 8. Offsets ([Assignment.StackOffset]) count from the start of that area,
// which at a function's first instruction is at SP+[StackArgsOffset]. The
// spill area that follows (where a callee may save its register parameters)
// is not described: nothing lives there on entry or at return.
//
// # Registers and pt_regs
//
// [IntRegName] names integer ABI register n the way argread.PtRegs and
// sdt.Register name registers ("rax", "x3"), so every integer piece can be
// read from a uprobe's context; [PtRegsName] says so for any [Reg]. Float
// registers (xmm, v) are not in pt_regs: a BPF program cannot read float
// pieces. [GRegister] names the register that holds the current goroutine.
//
// # Errors
//
// A machine other than EM_X86_64 and EM_AARCH64 gives an error wrapping
// [ErrUnsupported]; so does a DWARF type Go's ABI has no rule for (unions,
// bit fields, C void). A Type that is not self-consistent (nil, a size that
// does not fit its kind or its parts, an alignment that is not a power of
// two, a struct that contains itself) gives an error wrapping
// [ErrInvalidType] that names the path of the offending part. Nothing here
// panics on any input, including cyclic types.
//
// # Sources
//
// The ABI specification is src/cmd/compile/abi-internal.md in the Go source
// tree ("Function call argument and result passing", "amd64 architecture",
// "arm64 architecture"), as of Go 1.26; the compiler's implementation is
// cmd/compile/internal/abi/abiutils.go (assignParam, tryAllocRegs). The ABI
// is documented as unstable; Go 1.17 introduced it on amd64 and Go 1.18 on
// arm64. Go's experimental SIMD vector types are not modelled.
//
// Everything here is pure data: no function keeps state, and all are safe for
// concurrent use. A *Type is read, never modified, by Assign.
//
// # Usage
//
// For a function found in DWARF, convert the types of its formal parameters
// (DW_AT_variable_parameter false, receiver first) and results, then assign:
//
//	params := []*goabi.Type{...}  // goabi.FromDWARF(image.Type(off)) each
//	f, err := goabi.Assign(elf.EM_X86_64, params, results)
//	for _, p := range f.Results[0].Pieces {
//		reg, ok := goabi.PtRegsName(elf.EM_X86_64, p.Reg) // "rax"; !ok for floats
//		// read p.Size low bytes of reg at each RET
//	}
//
// A stack-assigned value is at SP + StackArgsOffset + StackOffset at the first
// instruction; at a RET, SP has moved back to where it was at entry.
package goabi
