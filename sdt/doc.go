// Package sdt models USDT (SystemTap SDT) probes. It reads them from ELF
// files and processes, parses their argument specs and selects them with
// bpftrace-style patterns. It only reads; package trace traces.
//
//	note ──► Location (address, offset, semaphore, specs)
//	     ──► Probe (provider:name in one object, all its Locations)
//	     ──► Arg (one parsed spec per argument of one Location)
//
// Entry points: List reads files, library short names ("libc") and a
// process's objects; ParseArgs parses a location's specs for the object's
// machine; ParseSelector reads PROVIDER:NAME patterns.
//
// Each Location has its own specs: one argument may be in %rdi at one site
// and on the stack at another.
//
// Errors: a bad note fails the object with an *elfnotes.FormatError. A bad
// argument does not: its Arg.Err holds an *ArgError. Missing targets wrap
// os.ErrNotExist, ErrNotFound or ErrNoProcess. An unreadable object of a
// process is skipped and reported to ListOptions.Warn.
//
// docs/architecture.md ("Opening a process's files") says how objects are
// opened safely.
package sdt
