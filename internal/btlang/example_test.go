package btlang_test

import (
	"fmt"

	"github.com/usdtkit/usdtkit/internal/btlang"
)

func ExampleCompile() {
	src := `uprobe:libc:malloc /pid != 1/ { @bytes[comm, pid] = hist(arg0); @last = str(arg1, 16); }`
	prog, err := btlang.Compile("stdin", []byte(src), nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	b := prog.Blocks[0]
	fmt.Println(b.Probes[0].Kind, b.Probes[0].Path, b.Probes[0].Name)
	fmt.Println("predicate:", btlang.ExprString(b.Pred), b.Pred.Type())
	for _, m := range prog.Maps {
		fmt.Println(m)
	}
	// Output:
	// uprobe libc malloc
	// predicate: pid != 1 uint64
	// @bytes[string[16], uint64] hist(uint64)
	// @last string[16]
}

func ExampleError() {
	_, err := btlang.Compile("stdin", []byte(`BEGIN { @x = "a" + 1; }`), nil)
	fmt.Println(err)
	// Output:
	// stdin:1:18: strings cannot be concatenated; + needs integers, not string[2] and int64
}
