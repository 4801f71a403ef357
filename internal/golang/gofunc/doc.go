// Package gofunc reads what a tracer needs to know of a Go function: where
// to probe its entry and each return, and where every parameter and result
// is at those points.
//
// Open reads a Go ELF binary (amd64, arm64). Binary.Func finds a function
// (else ErrNotFound) with its sites and values. Each value is split into
// the machine words a BPF program reads.
//
// Rules for callers:
//   - The entry site is the first instruction after the stack check, not
//     the entry: morestack restarts the function.
//   - Returns are every RET, never a uretprobe: the runtime crashes on a
//     rewritten return address when it moves the stack.
//   - Without usable DWARF, names, types and results are unknown.
//     Func.Problems and Binary.DWARFError say why.
//   - delve's loader is not hardened. Open checks the DWARF first, but
//     open only binaries whose writers you trust not to race you.
//
// docs/architecture.md ("Go functions") describes the checks and the ABI.
package gofunc
