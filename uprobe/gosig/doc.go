// Package gosig reads Go functions' signatures from a Go binary's DWARF:
// each parameter's and result's name, type, and where Go's register ABI
// puts it at the entry and at each RET.
//
// It is a package of its own because reading DWARF types links delve;
// package uprobe lists functions without it.
package gosig
