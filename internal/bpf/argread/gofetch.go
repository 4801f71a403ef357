package argread

import (
	"debug/elf"
	"fmt"
)

// WordFetch returns the fetch of a value of size bytes (1, 2, 4 or 8; 0
// means 8) where Go's register ABI puts one word of an argument or result:
// in the register reg (a name PtRegs knows: "rax", "x0"), or, when reg is
// "", in memory at the stack pointer plus spOff. It is how a
// gofunc.Word is read; signed sign-extends the value.
func WordFetch(m elf.Machine, reg string, spOff, size int64, signed bool) (Fetch, error) {
	if size == 0 {
		size = 8
	}
	switch size {
	case 1, 2, 4, 8:
	default:
		return Fetch{}, fmt.Errorf("a word of %d bytes", size)
	}
	if reg != "" {
		off, err := PtRegs(m, reg)
		if err != nil {
			return Fetch{}, err
		}
		return Fetch{Kind: FetchReg, Size: uint8(size), Signed: signed, Reg: Reg{Off: off, Width: 8}}, nil
	}
	sp := "rsp"
	if m == elf.EM_AARCH64 {
		sp = "sp"
	}
	off, err := PtRegs(m, sp)
	if err != nil {
		return Fetch{}, err
	}
	return Fetch{Kind: FetchMem, Size: uint8(size), Signed: signed, HasBase: true,
		Reg: Reg{Off: off, Width: 8}, Offset: spOff}, nil
}

// GoIDFetch returns the fetch of the current goroutine's id in a Go
// function compiled for the register ABI: the 8-byte goid at goidOffset
// in runtime.g, whose address is in register gReg (gofunc.Binary's
// GoidOffset and GReg: amd64 r14, arm64 x28).
func GoIDFetch(m elf.Machine, gReg string, goidOffset int64) (Fetch, error) {
	if goidOffset < 0 {
		return Fetch{}, fmt.Errorf("the goroutine id's offset in runtime.g is unknown")
	}
	g, err := WordFetch(m, gReg, 0, 8, false)
	if err != nil {
		return Fetch{}, err
	}
	return Fetch{Kind: FetchMem, Size: 8, HasBase: true, Reg: g.Reg, Offset: goidOffset}, nil
}
