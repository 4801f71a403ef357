// Package btlang is the front end of usdtkit's bpftrace language: lexer,
// parser, syntax tree and type checker for the user-space subset.
package btlang
