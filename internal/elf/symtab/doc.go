// Package symtab reads the symbol tables of ELF files and finds symbols by
// name. It is usdtkit's one symbol-table reader: uprobe lists its
// functions, sdt resolves the data symbols argument specs name.
//
// Entry points:
//   - Read (strict) and ReadPartial (keeps what is sound, with warnings)
//     read .symtab, .dynsym with GNU versions, or a Go binary's .gopclntab.
//   - ReadPartialWith reads only the names ReadOptions.Keep accepts.
//   - OpenDebugFile and ReadPartialDebug use a separate debug file.
//   - NewTable indexes symbols; Table.Lookup finds one by name or
//     "name@VERSION".
//
// Errors wrap ErrNoSymbols (no table), ErrNotFound or ErrAmbiguous. A
// damaged entry is an *elfnotes.FormatError with its byte offset.
//
// Read does not retain the file and may run concurrently. A Table is
// immutable and safe for concurrent use. docs/architecture.md ("Symbols
// and sites") has the rules the list follows.
package symtab
