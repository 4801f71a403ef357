package dynsdt

import "debug/elf"

// HostMachine is the ELF machine Load builds objects for, and the one
// usdtkit gen writes for by default.
const HostMachine = elf.EM_X86_64

// fire calls pr's stub (Probe.stub) with the first n of the values at
// args as its integer arguments, in the C calling convention; n > MaxArgs
// counts as MaxArgs. Implemented in fire_amd64.s.
//
//go:noescape
func fire(pr *Probe, args *uint64, n int)

// fire0 and fire8 are fire's bodies for SP ≡ 0 and ≡ 8 mod 16 at entry;
// only fire calls them.
//
//go:noescape
func fire0(pr *Probe, args *uint64, n int)

//go:noescape
func fire8(pr *Probe, args *uint64, n int)

// Stubs in the C calling convention for tests and benchmarks; see
// fire_amd64.s.
func nopStub()
func spStub()
func argsStub()
func spStubAddr() uintptr
func argsStubAddr() uintptr

// fireFrame24 and fireFrame32 call fire from frames of different
// alignment, for tests.
//
//go:noescape
func fireFrame24(pr *Probe, args *uint64, n int)

//go:noescape
func fireFrame32(pr *Probe, args *uint64, n int)
