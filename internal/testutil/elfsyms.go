package testutil

import (
	"debug/elf"
	"testing"
)

// ELFSymbols returns the .symtab symbols of the ELF file at path, read with
// debug/elf (not our reader); it fails tb when the file has none.
func ELFSymbols(tb testing.TB, path string) []elf.Symbol {
	tb.Helper()
	f, err := elf.Open(path)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	syms, err := f.Symbols()
	if err != nil {
		tb.Fatalf("%s: %v", path, err)
	}
	return syms
}
