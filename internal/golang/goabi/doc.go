// Package goabi computes where Go's register ABI (ABIInternal) puts a
// function's parameters and results on amd64 and arm64, so a uprobe
// program can read them from pt_regs or the stack.
//
//	DWARF type ──FromDWARF──► *Type ──Assign──► Frame{Params, Results}
//
// Each Assignment is either register Pieces or a stack slot at
// SP+StackArgsOffset+StackOffset at the first instruction. PtRegsName
// names a piece's register as pt_regs does; float registers are not in
// pt_regs, so BPF cannot read them.
//
// Errors wrap ErrUnsupported (another machine, a type the ABI has no rule
// for) or ErrInvalidType (a type that is not self-consistent). No input
// panics. Everything is pure and safe for concurrent use.
//
// The rules are Go's src/cmd/compile/abi-internal.md; docs/architecture.md
// ("Go functions") summarises them.
package goabi
