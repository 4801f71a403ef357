// Package uprobe finds the functions of ELF files that uprobes can attach
// to. It reads and decides; it attaches nothing. Package trace traces the
// sites, and package uprobe/gosig reads Go functions' signatures.
//
// Entry points:
//   - Symbols reads an object's function symbols, each with its address
//     and file offset (a uprobe is named by file and offset).
//   - List and Functions turn selectors into objects and sites: a
//     function's entry, a place inside it, or its return.
//   - Function.CheckBoundary refuses an offset inside an instruction
//     (ErrNotBoundary); every tracer calls it.
//   - CRegisters names the C ABI's argument and return registers.
//
// Symbols are sorted by address, one entry per name and address. Names
// are as stored (C++ mangled, with Demangled). A stripped Go binary is read
// from .gopclntab; a stripped library with its separate debug file.
// Functions returns one site per address, however many symbols alias it.
//
// Never put a uretprobe on a Go function (Function.Go): the runtime
// crashes when it moves the stack. Package trace probes every RET instead.
//
// Errors: ErrNoSymbols when the file has no symbol table. A malformed
// table gives an *elfnotes.FormatError with the byte offset; results are
// then nil. A process's object that cannot be read is skipped and reported
// to ListOptions.Warn.
//
// Symbols does not retain the file; the caller closes it. It may be called
// concurrently. docs/architecture.md ("Symbols and sites") has the details.
package uprobe
