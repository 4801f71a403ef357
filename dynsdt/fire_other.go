//go:build !amd64 && !arm64

package dynsdt

import "debug/elf"

// HostMachine is EM_NONE where Load has no trampoline: Load fails with an
// error wrapping errors.ErrUnsupported.
const HostMachine = elf.EM_NONE

// fire is never called: no Probe exists on this architecture.
func fire(pr *Probe, args *uint64, n int) {}
