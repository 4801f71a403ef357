package dynsdt

// What a static probe's stub is (usdtkit gen --static, package
// dynsdt/gen): its bytes on amd64 and its arguments' specs. They belong
// to Build's stubs and specs; the generator writes them into the
// program's assembly and the post-link step (package dynsdt/postlink)
// into its notes and text.

import (
	"debug/elf"
	"fmt"
	"strconv"
)

// StaticArgs returns the argument specs of a static probe's stub at its
// first instruction for machine m: Go's assembly calling convention (ABI0)
// passes the stub's arguments, one 8-byte word each, on the stack, the
// first at 8(%rsp) on x86-64 (0(%rsp) is the return address) and at
// [sp, 8] on arm64 (the return address is in x30; 0(sp) is the slot the
// caller keeps for the callee's frame record).
func StaticArgs(m elf.Machine, args []ArgType) (string, error) {
	var b []byte
	for i, a := range args {
		if i > 0 {
			b = append(b, ' ')
		}
		b = appendSizePrefix(b, a)
		off := strconv.Itoa(8 * (i + 1))
		switch m {
		case elf.EM_X86_64:
			b = append(b, off+"(%rsp)"...)
		case elf.EM_AARCH64:
			b = append(b, "[sp, "+off+"]"...)
		default:
			return "", fmt.Errorf("machine %v: %w", m, ErrUnsupportedMachine)
		}
	}
	return string(b), nil
}

// StaticStubLen is the length of a static probe's stub on amd64, its
// site's kind's stub (dynsdt's, as Build writes) padded with int3 (cc):
// room for every kind's.
const StaticStubLen = 16

// StaticStubAMD64 returns the StaticStubLen bytes of a static probe's stub
// with a site of kind s on amd64 (SiteAuto: SiteNop, as Build). usdtkit
// gen --static writes SiteNop's; postlink may write another kind's over
// it.
func StaticStubAMD64(s Site) []byte {
	b := make([]byte, StaticStubLen)
	for i := copy(b, stubX86(s)); i < len(b); i++ {
		b[i] = 0xcc
	}
	return b
}
