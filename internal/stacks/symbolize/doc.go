// Package symbolize turns user-space addresses of a process into frames:
// object, offset, function, and file and line where known.
//
// New(pid) reads the process's maps and opens its executable files once.
// So addresses still symbolize after the process exits. Symbolizer.Frames
// names addresses; Format and FormatPerf print them as bpftrace prints
// ustack and ustack(perf). A Cache shares object tables between
// Symbolizers.
//
// Sources of names: symbol tables (and separate debug files), DWARF for
// inlined calls and lines, .gopclntab for Go, and a JIT's perf map or
// jitdump for anonymous code. A Frame always says what is known: the
// function, else "[object+0xoffset]", else a bare address.
//
// Everything read is untrusted and bounded. A file that cannot be read
// gives frames with object and offset, not an error.
//
// A Symbolizer is safe for concurrent use and holds descriptors until
// Close, which must not race with Frames. docs/architecture.md ("Stacks")
// describes the lookups.
package symbolize
