// Package elfnotes reads the headers and notes of ELF files, decodes
// SystemTap SDT (USDT) probe notes, and writes notes and small ELF files.
//
// It imports only the standard library and parses ELF itself rather than
// through debug/elf, whose parser is not hardened against hostile input;
// it uses debug/elf's constant types (elf.Class, elf.SectionType, ...) and
// their String methods.
//
// # Model
//
// [Open] or [NewFile] read the ELF header, the program headers, the section
// headers and the section name table, nothing else. Section and segment
// contents are read on demand from the underlying io.ReaderAt, so listing
// the probes of a large library reads a few hundred kilobytes of a file of
// many megabytes:
//
//	ELF header → section headers → SHT_NOTE sections → Note → Stapsdt → SDTProbe
//	                                                                      ↓
//	                                      PT_LOAD program headers → AddrToOffset, OffsetToAddr
//
// [File.Notes] walks every SHT_NOTE section (or, in a file without section
// headers, every PT_NOTE segment). SHT_NOBITS sections have no bytes in the
// file, so the emptied notes of a separate debug file
// (objcopy --only-keep-debug) are skipped rather than read as garbage.
//
// # Note layout
//
// A note record is a header of three 4-byte words in the file's byte order,
// n_namesz, n_descsz and n_type, followed by the name (owner) of n_namesz
// bytes including its NUL and the descriptor of n_descsz bytes. Name and
// descriptor are each padded with zeros to 4 bytes. The gABI asks for
// 8-byte words in ELF64, but Linux and all GNU tools use 4-byte words in
// both classes, and so does this package. The exception is a note section
// or segment whose alignment (sh_addralign, p_align) is 8, as used by
// NT_GNU_PROPERTY_TYPE_0 in ELF64: its header is still three 4-byte words,
// but name and descriptor are padded to 8 bytes (the x86-64 psABI "Program
// Property"; Linux fs/binfmt_elf.c; readelf and elfutils read it the same
// way). Other alignments are read with 4-byte padding. The last record of
// an area may omit its trailing padding. [AppendNote] writes 4-byte padded
// records.
//
// An NT_STAPSDT note has owner "stapsdt" and type 3. Its descriptor holds
// three addresses, each 4 bytes in ELF32 and 8 in ELF64 in the file's byte
// order (the probe PC, the link-time address of .stapsdt.base, and the
// semaphore or 0), then three NUL-terminated strings: provider, name and
// argument specs. [ParseStapsdt] and [Stapsdt.AppendDesc] read and write it.
//
// # Base adjustment
//
// sys/sdt.h records in each note the address of the .stapsdt.base section
// as the assembler saw it. If prelink or the linker later moved the code,
// the section's final address differs from the note's Base, and both the PC
// and a non-zero semaphore move by (section address − Base). A file without
// a .stapsdt.base section is not adjusted. [File.SDTProbes] applies this;
// [SDTProbe] keeps the raw note values next to the adjusted ones.
//
// # Addresses and offsets
//
// [File.AddrToOffset] maps a virtual address through the first PT_LOAD
// segment with Vaddr <= addr < Vaddr+Filesz to Off + (addr − Vaddr);
// [File.AddrRangeToOffset] does so for a range of bytes, all in one
// segment. Addresses in no segment, or in the zero-filled Memsz tail
// (.bss), give an error wrapping [ErrNoSegment]. Separate debug files keep
// the program headers but with Filesz 0 for everything except the first
// page of headers and notes, so translating a probe address there fails
// instead of returning an offset that holds other bytes.
// [File.OffsetToAddr] is the inverse, through the first PT_LOAD segment
// with Off <= off < Off+Filesz. A [LoadMap] copies the segments out of the
// File and answers both, without errors or allocations, for callers that
// translate many offsets (symbolizers, unwinders). No other package does
// this arithmetic.
//
// # Errors
//
// Every offset, size and count read from the file is checked, without
// overflow, against what remains before it is used to slice or allocate;
// when the reader's size is known (an *os.File, or anything with a Size
// method) nothing larger than the file is ever allocated, and otherwise
// buffers grow only as data actually arrives. Malformed input gives a
// *[FormatError] carrying the file offset of the bad field or record, so
// `readelf` or `xxd` can confirm it; use errors.As to get it. I/O errors
// from the reader are wrapped with %w. No input makes the package panic.
//
// # Partial damage and limits
//
// Damage to one part does not hide the rest, as in readelf. [NewFile]
// fails only when the ELF header or a header table cannot be read; a
// section whose name cannot be read is kept without a name, with a warning
// in [File.Warnings]. [File.ReadNotes] and [File.ReadSDTProbes] return the
// sound notes and probes together with one warning (a *FormatError with
// its offset) per note, section or descriptor they skipped; [File.Notes]
// and [File.SDTProbes] are their strict variants, whose error is the first
// warning.
//
// What is read is bounded by what is needed, not by the sizes a file
// claims: NewFile reads at most 65536 program headers and 262144 section
// headers, of each entry only the bytes it decodes, and of the section
// name table only as far as the names reach; notes are read through a small buffer, record by record; a
// descriptor is read only when it is wanted (NT_STAPSDT for SDTProbes),
// and kept only as the fields decoded from it. [MaxNoteName] and
// [MaxNoteDesc] bound one note, [MaxNotes] the records of one section
// and the notes kept from a file, and [MaxNoteBytes] the bytes read from a
// file, so that a sparse file claiming gigabytes of notes costs a few
// megabytes and milliseconds and ends with a warning wrapping [ErrLimit].
//
// # Lifetime and concurrency
//
// A File from [Open] holds an open file descriptor until [File.Close]; a
// File from [NewFile] borrows the caller's io.ReaderAt and Close does
// nothing. After construction a File is not modified, so its methods may be
// called from several goroutines at once when the io.ReaderAt allows
// concurrent ReadAt (an *os.File does). Close must not race with other
// calls. Notes, probes and descriptors returned are fresh values owned by
// the caller.
//
// # Writing
//
// [AppendNote] and [Stapsdt.AppendDesc] produce note records, and
// [Builder] lays out a minimal ELF file from sections and segments; tests
// use it for fixtures.
//
// # Sources
//
//   - System V gABI, "ELF Header", "Sections", "Program Header", "Note Section"
//     (https://www.sco.com/developers/gabi/latest/contents.html), including
//     extended section numbering through section header 0.
//   - SystemTap, "UserSpaceProbeImplementation"
//     (https://sourceware.org/systemtap/wiki/UserSpaceProbeImplementation)
//     and sys/sdt.h, for the NT_STAPSDT descriptor and .stapsdt.base.
//   - x86-64 psABI "Program Property" and Linux fs/binfmt_elf.c
//     parse_elf_properties, for 8-byte aligned notes.
//
// Results are cross-checked in tests against binutils' readelf -n.
package elfnotes
