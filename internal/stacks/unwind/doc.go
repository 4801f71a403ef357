// Package unwind turns a user stack captured at a uprobe (registers and a
// copy of the top of the stack, internal/bpf/stackcap's EmitCopy) into the
// return addresses of the calls that led there, using each object's call
// frame information (CFI) where it has some and the frame-pointer chain
// where it has none.
//
// # Model
//
//	Space (a process's mappings, remembered when first seen)
//	Regs{PC, SP, FP, LR} + Stack{Base, Data} ──Unwinder.Unwind──► Result{Frames, Stop}
//
// Frame 0 is the captured PC (MethodRegs). Each further frame is the
// return address found by unwinding the frame before it, with the method
// that found it:
//
//   - MethodCFI: the object mapped at the frame's PC has an FDE covering
//     it in .eh_frame or .debug_frame (read with delve's pkg/dwarf/frame).
//     The row for the PC (for return addresses, PC-1: the call, which may
//     be a function's last instruction) gives the canonical frame address
//     (CFA) and where the return address and the frame pointer were saved.
//     The caller's SP is the CFA.
//   - MethodFP: otherwise (no CFI in the object, no FDE for the PC, or code
//     in an anonymous executable mapping such as a JIT's) the frame
//     pointer: x86-64 return address at [rbp+8], caller's rbp at [rbp],
//     SP = rbp+16; arm64 the frame record {x29, x30} at x29. At a
//     function's first instruction (Regs.Entry) frame 0 has no record
//     yet: its return address is at SP (x86-64) or in LR (arm64).
//
// Memory is read only from the stack copy: a word outside it ends the
// walk. Registers the rules need and the capture does not hold (CFA based
// on rbx, a saved register other than the frame pointer) are unknown and
// end the walk when needed.
//
// # CFA rules supported
//
// CFA = register + offset (DW_CFA_def_cfa*, on SP or the frame pointer);
// CFA = DWARF expression (DW_CFA_def_cfa_expression, e.g. glibc's PLT
// entries); registers: undefined (the return address: outermost frame),
// same value, offset(N) and val_offset(N) from the CFA, register(R),
// expression and val_expression. Expressions support the literal,
// constant, stack (dup, drop, over, swap, pick), arithmetic and logic,
// comparison, breg/bregx and deref operations; DW_OP_skip and DW_OP_bra
// (branches), DW_OP_regN locations, TLS and entry-value operations are not
// supported and end the walk (StopCFI). DW_CFA_GNU_window_save and other
// vendor operations are ignored by the parser.
//
// # Ending
//
// The walk ends, with Result.Stop saying why: the return address is
// undefined or 0 (StopEnd), the PC is in no known executable mapping
// (StopNoMapping), a word or register it needs is not in the capture
// (StopOutsideCopy, StopNoRegister), the CFI cannot be evaluated (StopCFI),
// the caller's SP is below the callee's, or equal but for frame 0 (an
// arm64 leaf) (StopNoProgress), or MaxDepth frames (StopMaxDepth). SP
// grows strictly after frame 0 and the depth is bounded, so no input
// loops.
//
// # Caches
//
// An Unwinder parses an object's CFI once and keeps it, keyed by device
// and inode (an object shared by processes is parsed once), with a cache
// of evaluated rows per object. It opens objects with procfs.Open (through
// the process's root or map_files) only while parsing; it keeps no file
// open. Spaces remembers each process's mappings when first asked, and
// Unwinder.Load parses all of a Space's objects at once: called when a
// process is first seen, stacks of it still unwind with CFI after it
// exits (its files can then no longer be opened through it).
//
// # Tables
//
// NewTable (or Unwinder.Table) compiles an object's CFI into a Table:
// 16-byte Rows sorted by address of the ELF image (a PC minus its
// mapping's load bias, Table.Bias), each a CFA on SP or the frame pointer
// (or the x86-64 PLT rule) plus offset, the return address at CFA+offset
// or in LR, and the frame pointer unchanged or at CFA+offset; KindNone,
// KindEnd and KindUnsupported rows say "frame pointers", "outermost" and
// "cannot express". It is what the BPF unwinder
// (stackcap.EmitCFIWalkID) binary-searches; Unwinder.UnwindTables walks
// with Tables alone, as that unwinder does. BPFTables owns its maps: each
// object's Table once (by device and inode) in one array of rows, and
// each process's executable mappings with their bias and table; Tables
// no process uses are dropped, least recently used first, when rows are
// needed, and ErrTablesFull says when even that leaves no room.
//
// # Errors and concurrency
//
// Unwind returns an error only for bad arguments; damage in objects (a
// malformed .eh_frame) makes that object use frame pointers, and
// Unwinder.ObjectError reports it. The CFI parser is called through a
// wrapper that bounds section sizes and turns its panics into errors. An
// Unwinder and a Spaces are safe for concurrent use; Space is immutable.
//
// # Sources
//
// DWARF 5 section 6.4 (call frame information) and 2.5 (expressions);
// System V AMD64 psABI 3.6 (DWARF register numbers: rbp 6, rsp 7, return
// address 16); AAPCS64 and its DWARF supplement (x29 frame pointer, x30
// link register, sp 31); LSB 5.0 .eh_frame format; delve's pkg/dwarf/frame.
package unwind
