// Package symtab reads the symbol tables of ELF files, every symbol type
// alike, and finds symbols by name. It is the one symbol-table reader of
// usdtkit: package uprobe lists the functions it returns, and package sdt
// resolves the data symbols that USDT argument specs name
// ("8@counter+8(%rip)", "-4@g_arr(,%rax,4)") to addresses.
//
// # Model
//
//	.symtab                 ─┐
//	.dynsym + .gnu.version*  ─┼─► defined, named symbols ─► []Symbol ─► NewTable ─► Lookup(name)
//	.gopclntab (Go, when     ─┘    (sorted, deduplicated)
//	  .symtab is stripped)
//
// [Read] decodes Elf32_Sym and Elf64_Sym entries in the file's byte order,
// resolves their names in the linked string table and, for .dynsym, their
// GNU versions (.gnu.version indexes the definitions of .gnu.version_d and
// the requirements of .gnu.version_r). A [Symbol] keeps st_value, st_size,
// the type, binding and st_shndx as stored; mapping Value to a file offset
// is the caller's business (uprobe does it through the PT_LOAD segments).
//
// Invariants of the list Read returns:
//   - only defined symbols: the null entry, entries whose st_shndx is
//     SHN_UNDEF and entries without a name (STT_SECTION symbols) are
//     skipped; every other type is kept, including STT_FILE, STT_TLS (whose
//     Value is an offset in the TLS block) and SHN_ABS symbols;
//   - sorted by Value, then Name, then Version, and symbols equal in all
//     three in the order they were read;
//   - a symbol in both .symtab and .dynsym (same name and value) is listed
//     once, from .symtab, marked Dynamic, with the GNU version of its
//     .dynsym entry. ld writes "foo@V1" into .symtab for symbols versioned
//     with .symver; such an entry takes the plain .dynsym name;
//   - one name and address is one entry: where .dynsym gives a name several
//     versions at one address (glibc 2.34's pthread_create@GLIBC_2.2.5 and
//     pthread_create@@GLIBC_2.34), the default ("@@") one is kept, or, with
//     none, the first; a .dynsym entry kept this way brings its own size
//     (glibc's sys_errlist has a size per version);
//   - several entries may share a name at different addresses: versions
//     (memcpy@GLIBC_2.2.5 and memcpy@@GLIBC_2.14), static variables or
//     functions of different object files.
//
// Names are as stored (C++ mangled, Go's "main.(*T).M"). A Go binary
// stripped of .symtab (go build -ldflags=-s) is read from its .gopclntab
// instead, through debug/gosym, and its .dynsym if any: that gives its
// functions only, no data symbols. [IsGo] tells whether a file is a Go
// binary.
//
// # Separate debug files
//
// A stripped object's .symtab may live in a separate debug file.
// [OpenDebugFile] finds it as GDB does: by build ID
// (DIR/.build-id/xx/rest.debug, whose own build ID must match), then by
// the .gnu_debuglink name ([ParseDebuglink]) beside the object, in its
// .debug directory and under DIR followed by the object's directory, whose
// CRC-32 must match; DIR is each of [DebugOptions.Dirs] (default
// /usr/lib/debug). Names are resolved inside a root (a process's, see
// procfs.OpenInRoot). [ReadPartialDebug] then reads the debug file's
// .symtab in place of the object's (marked [SourceDebug]) and merges the
// object's own .dynsym as ReadPartial does. [ReadGoLines] gives a Go
// binary's function and line table for symbolization.
//
// # Reading some names
//
// [ReadPartialWith] with [ReadOptions.Keep] reads only the symbols whose
// plain name (without "@VERSION") Keep accepts: one pass over the tables
// that skips every other entry before its version is read, and sorts and
// merges only what it keeps. The entries merged into one symbol (a
// .symtab and a .dynsym entry, the versions of one name at one address)
// share a plain name, so the result is exactly the part of the whole list
// with those names. Tracing a function of libc by name needs nothing
// more.
//
// A [Table] indexes symbols by their plain name (without "@VERSION"). Its
// Lookup matches a plain name against every version, and "foo@V" or
// "foo@@V" against that version only; symbols of one name at one address
// are one answer, at several addresses an ambiguity. STT_FILE and
// STT_SECTION symbols are not indexed.
//
// # Errors
//
// [ReadPartial] keeps what is sound, as readelf does: a table that cannot
// be read (bad sh_link, string table or entry size, contents past the end
// of the file), a symbol whose name lies outside its string table, or one
// whose version index names no version is skipped; a damaged version
// section leaves the symbols that need it without a version. Each of these
// is one warning, an *[elfnotes.FormatError] (wrapped with the section's
// name) whose Off is the byte offset in the file of the bad entry or
// section, so readelf and xxd can confirm it; the warnings are returned
// beside the symbols. [Read] is the strict variant: its error is the first
// warning, and then the slice is nil. Both return an error wrapping
// [ErrNoSymbols] when the file has no table at all.
//
// Every length read from the file is checked before slicing. What is read
// is bounded by what is needed, not by the sizes sections claim: symbol
// entries are read a chunk at a time (at most 8 Mi entries per table, with
// a warning beyond), a string table only as far as the names looked up
// reach (at most 256 MiB), .gnu.version only for the entries read, and a
// version definition or requirement section only up to 1 MiB, and a
// .gopclntab only up to 128 MiB; what is kept grows with the defined
// symbols. debug/gosym is not hardened against
// malformed input: before it runs, the function count, function table and
// name offsets of the pclntab are checked, so that what it allocates is
// bounded by the table size, and it is called in exactly one function,
// which converts a panic into a FormatError. Only the pclntab formats of Go
// 1.16 and later are read.
//
// [Table.Lookup] returns errors wrapping [ErrNotFound] or [ErrAmbiguous];
// the latter suggests a versioned name where versions differ.
//
// # Lifetimes and concurrency
//
// Read reads sections through f and does not retain it; the caller closes
// f. It may be called concurrently, also on one File, as elfnotes allows.
// A Symbol is plain data; a Table is immutable after NewTable, which copies
// its input, and is safe for concurrent use.
//
// # Sources
//
// System V gABI, "Symbol Table" (Elf32_Sym, Elf64_Sym); LSB Core, "Symbol
// Versioning" (.gnu.version, .gnu.version_d, .gnu.version_r; glibc
// elf/dl-version.c); golang.org/s/go12symtab and debug/gosym for
// .gopclntab, cmd/link/internal/ld for Go's section names. Tests compare
// the results with GNU readelf -sW --dyn-syms.
//
// # Usage
//
//	f, err := elfnotes.Open(path)
//	if err != nil { ... }
//	defer f.Close()
//	syms, err := symtab.Read(f)
//	if err != nil { ... }
//	sym, err := symtab.NewTable(syms).Lookup("counter")
//	if errors.Is(err, symtab.ErrAmbiguous) { ... }
package symtab
