// Package stackcap emits the BPF instructions that capture the user stack
// of a thread at a uprobe, for btgen to splice into its programs, and
// decodes what they captured.
//
// Captures:
//   - EmitFrames, EmitStackID: the kernel's frame-pointer walk.
//   - EmitWalkID (x86-64): the same walk done by the program, stored as a
//     hash of the frames.
//   - EmitCFIWalkID (x86-64, arm64; bpf_loop): a walk with CFI tables that
//     internal/stacks/unwind compiles; same record as EmitWalkID.
//   - EmitCopy: registers and a copy of the top of the stack, unwound in
//     user space by internal/stacks/unwind.
//
// Rules for callers: ctx and dst must be R6..R9; R0..R5 are clobbered;
// dst+off needs room for FramesSize, StackIDSize or CopySize bytes. Set
// FramesOptions.Entry only for a function's first instruction: the caller
// is then read from the stack pointer (x86-64) or LR (arm64).
//
// Nothing here keeps state; all is safe for concurrent use.
// docs/architecture.md ("Stacks") describes the layouts and walks.
package stackcap
