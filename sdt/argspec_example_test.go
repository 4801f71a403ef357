package sdt_test

import (
	"debug/elf"
	"errors"
	"fmt"

	"github.com/usdtkit/usdtkit/sdt"
)

func ExampleParseArg() {
	a, err := sdt.ParseArg(elf.EM_X86_64, "-4@-20(%rbp)")
	if err != nil {
		fmt.Println(err)
		return
	}
	base, _ := a.BaseRegister()
	fmt.Printf("%s: %d bytes, signed %v, at %s%+d\n", a.Kind, a.Size, a.Signed, base.Name, a.Offset)

	// Constants are reported truncated to their size: GCC writes
	// (unsigned char)200 as $-56.
	c, _ := sdt.ParseArg(elf.EM_X86_64, "1@$-56")
	fmt.Println(c.Kind, c.Value, c.String())

	r, _ := sdt.ParseArg(elf.EM_X86_64, "1@%ah")
	ah, _ := r.BaseRegister()
	fmt.Printf("%%ah is bits %d..%d of %s\n", ah.Shift, ah.Shift+8*ah.Width-1, ah.Name)
	// Output:
	// mem: 4 bytes, signed true, at rbp-20
	// const 200 1@$200
	// %ah is bits 8..15 of rax
}

func ExampleParseArgs() {
	args, err := sdt.ParseArgs(elf.EM_AARCH64, "8@x22 -4@[sp, 36] 4@5 8@%rax")
	for _, a := range args {
		if a.Err != nil {
			fmt.Printf("%-12q %v\n", a.Spec, a.Kind)
			continue
		}
		fmt.Printf("%-12q %v %s\n", a.Spec, a.Kind, a)
	}
	var ae *sdt.ArgError
	if errors.As(err, &ae) {
		fmt.Println(ae)
	}
	// Output:
	// "8@x22"      reg 8@x22
	// "-4@[sp, 36]" mem -4@[sp, 36]
	// "4@5"        const 4@5
	// "8@%rax"     invalid
	// argument 3 "8@%rax": unknown register "%rax"
}
