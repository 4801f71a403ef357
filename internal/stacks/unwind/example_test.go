package unwind_test

import (
	"debug/elf"
	"encoding/binary"
	"fmt"

	"github.com/usdtkit/usdtkit/internal/proc/procfs"
	"github.com/usdtkit/usdtkit/internal/stacks/unwind"
)

// A JIT's code in an anonymous mapping has no CFI: it unwinds with frame
// pointers, from a stack copy of two frame records.
func ExampleUnwinder_Unwind() {
	sp := unwind.NewSpace(1, []procfs.Mapping{{Start: 0x400000, End: 0x500000, Perms: "r-xp"}})
	data := make([]byte, 64)
	le := binary.LittleEndian
	le.PutUint64(data[0x10:], 0x7020)   // frame 0's record: caller's rbp
	le.PutUint64(data[0x18:], 0x400123) // and return address
	le.PutUint64(data[0x20:], 0)        // outermost record
	le.PutUint64(data[0x28:], 0)
	u, err := unwind.New(nil)
	if err != nil {
		panic(err)
	}
	res, err := u.Unwind(sp, elf.EM_X86_64, unwind.Regs{PC: 0x400010, SP: 0x7000, FP: 0x7010}, unwind.Stack{Base: 0x7000, Data: data})
	if err != nil {
		panic(err)
	}
	for _, f := range res.Frames {
		fmt.Printf("%#x %v\n", f.PC, f.Method)
	}
	fmt.Println("stop:", res.Stop)
	// Output:
	// 0x400010 regs
	// 0x400123 fp
	// stop: end
}
