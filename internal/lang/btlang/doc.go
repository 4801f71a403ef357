// Package btlang is the front end of bpftrace's language: it lexes,
// parses and type-checks the user-space subset and returns a typed tree.
//
//	source ──Parse──► *Program ──Check(ProbeInfo)──► typed *Program
//
// Entry points: Parse and ParseWith read a program; ParseExpr and
// ParseExprList read fragments (the trace command's flags); Check types
// it, asking ProbeInfo which arguments each probe has; Compile does both.
// probe.go owns the probe syntax: parsing, quoting and naming probes.
//
// A program Check accepts means what it means under bpftrace 0.17. Where
// usdtkit would differ, Check refuses.
//
// Errors are *Error{Pos, Msg}, printed "file:line:col: sentence", in an
// ErrorList. Parse stops at the first; Check reports up to 20. Source
// size and nesting depth are bounded, so hostile input gives an error.
//
// Check writes types into the tree: do not share a Program while it runs.
// docs/language.md lists the language.
package btlang
