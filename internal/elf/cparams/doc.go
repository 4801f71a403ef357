// Package cparams reads the parameters of C functions from an ELF file's
// DWARF, written as bpftrace 0.17's -lv prints them ("int argc",
// "struct Foo* foo1", "char const* s"): only the types' names, no layouts.
//
// A file without DWARF has no parameters (a nil map, no error); malformed
// DWARF is an error, never a panic (debug/dwarf is called through a
// recover). Nothing is kept open after Read returns.
package cparams
