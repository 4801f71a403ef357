package goabi_test

import (
	"debug/elf"
	"fmt"

	"github.com/usdtkit/usdtkit/internal/golang/goabi"
)

// The example of abi-internal.md on amd64: func f(a1 uint8, a2 [2]uintptr,
// a3 uint8) (r1 struct{ x uintptr; y [2]uintptr }, r2 string).
func ExampleAssign() {
	u8 := &goabi.Type{Kind: goabi.Int, Size: 1, Align: 1}
	uptr := &goabi.Type{Kind: goabi.Int, Size: 8, Align: 8}
	arr := &goabi.Type{Kind: goabi.Array, Size: 16, Align: 8, Elem: uptr, Len: 2}
	r1 := &goabi.Type{Kind: goabi.Struct, Size: 24, Align: 8, Fields: []goabi.Field{
		{Name: "x", Offset: 0, Type: uptr},
		{Name: "y", Offset: 8, Type: arr},
	}}
	str := &goabi.Type{Kind: goabi.String, Size: 16, Align: 8}

	f, err := goabi.Assign(elf.EM_X86_64, []*goabi.Type{u8, arr, u8}, []*goabi.Type{r1, str})
	if err != nil {
		fmt.Println(err)
		return
	}
	show := func(name string, a goabi.Assignment) {
		if a.Stack {
			fmt.Printf("%s: stack+%d\n", name, a.StackOffset)
			return
		}
		for _, p := range a.Pieces {
			reg, _ := goabi.PtRegsName(elf.EM_X86_64, p.Reg)
			fmt.Printf("%s%s: %d bytes of %s\n", name, p.Path, p.Size, reg)
		}
	}
	for i, a := range f.Params {
		show(fmt.Sprintf("a%d", i+1), a)
	}
	for i, a := range f.Results {
		show(fmt.Sprintf("r%d", i+1), a)
	}
	fmt.Println("results area at", f.ResultsOffset, "size", f.StackSize)
	// Output:
	// a1: 1 bytes of rax
	// a2: stack+0
	// a3: 1 bytes of rbx
	// r1: stack+16
	// r2.ptr: 8 bytes of rax
	// r2.len: 8 bytes of rbx
	// results area at 16 size 40
}
