package dynsdt

import "debug/elf"

// HostMachine is the ELF machine Load builds objects for, and the one
// usdtkit gen writes for by default.
const HostMachine = elf.EM_AARCH64

// fire calls pr's stub (Probe.stub) with the first n of the values at
// args as its integer arguments, in the C calling convention; n > MaxArgs
// counts as MaxArgs. Implemented in fire_arm64.s.
//
//go:noescape
func fire(pr *Probe, args *uint64, n int)

// Stubs in the C calling convention for tests and benchmarks; see
// fire_arm64.s.
func nopStub()
func spStub()
func argsStub()
func spStubAddr() uintptr
func argsStubAddr() uintptr
