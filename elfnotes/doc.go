// Package elfnotes reads ELF headers and notes, decodes SystemTap SDT
// (USDT) probe notes, and writes notes and small ELF files. It imports
// only the standard library and parses ELF itself: debug/elf is not
// hardened against hostile input.
//
// Entry points:
//   - Open and NewFile read the headers only; sections are read on demand.
//   - File.SDTProbes lists the USDT probes, adjusted for .stapsdt.base.
//   - File.AddrToOffset and OffsetToAddr translate through PT_LOAD; a
//     LoadMap does it for many addresses.
//   - AppendNote, Stapsdt.AppendDesc and Builder write notes and files.
//
// Errors: malformed input gives a *FormatError with the byte offset of the
// bad field, for readelf or xxd to confirm. No input makes it panic.
// ReadNotes and ReadSDTProbes return what is sound plus one warning per
// skipped part; Notes and SDTProbes fail on the first. Limits (MaxNotes,
// MaxNoteBytes, …) bound what a file can make it read; going past them
// warns with ErrLimit.
//
// A File from Open owns a descriptor until Close; one from NewFile borrows
// the caller's reader. Methods may run concurrently, but not with Close.
//
// docs/architecture.md ("ELF notes") describes the formats.
package elfnotes
