// Package unwind turns a captured user stack (registers and a copy of the
// stack's top, from stackcap.EmitCopy) into return addresses. It uses each
// object's CFI (.eh_frame, .debug_frame, or the .debug_frame of its
// separate debug file when it has none) where there is some, and frame
// pointers elsewhere.
//
// Entry points: New makes an Unwinder; Unwinder.Unwind walks one stack of
// a Space (a process's mappings, kept from when it was first seen).
// NewTable compiles CFI to the rows stackcap's BPF walk searches;
// BPFTables owns the BPF maps holding them.
//
// Result.Stop says why a walk ended. Memory is read only from the copy,
// and the depth is bounded, so no input loops. Unwind fails only on bad
// arguments: a malformed object falls back to frame pointers
// (Unwinder.ObjectError says why). BPFTables returns ErrTablesFull when
// its maps have no room.
//
// An Unwinder and Spaces are safe for concurrent use; a Space is
// immutable. docs/architecture.md ("Stacks") has the rules supported.
package unwind
