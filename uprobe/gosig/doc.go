// Package gosig reads Go functions' signatures from a binary's DWARF. For
// each parameter and result it gives the name, the type, and where Go's
// register ABI puts it at the entry and at each RET.
//
// Reading DWARF types links delve. So this is a package of its own, and
// package uprobe lists functions without it.
package gosig
