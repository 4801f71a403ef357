package btlang_test

import (
	"fmt"

	"github.com/usdtkit/usdtkit/internal/lang/btlang"
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
	// @last string[17]
}

func ExampleError() {
	_, err := btlang.Compile("stdin", []byte(`BEGIN { @x = "a" + 1; }`), nil)
	fmt.Println(err)
	// Output:
	// stdin:1:18: strings cannot be concatenated; + needs integers, not string[2] and int64
}

// goFuncs stands for the back end: it knows the arguments of the Go
// function main.handle from its DWARF.
type goFuncs struct{}

func (goFuncs) Args(p *btlang.Probe) (btlang.ProbeArgs, error) {
	if p.Name == "main.handle" {
		return btlang.ProbeArgs{Count: 2, Named: []btlang.NamedArg{
			{Name: "id", Type: btlang.Type{Kind: btlang.KindInt, Signed: true, Size: 8}},
			{Name: "path", Type: btlang.StringType(64)},
		}}, nil
	}
	return btlang.ProbeArgs{Count: -1}, nil
}

func ExampleCheck() {
	src := `uprobe:./server:main.handle /args.id > 0/ { @[args.path] = count(); }`
	prog, err := btlang.Parse("stdin", []byte(src))
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := btlang.Check(prog, &btlang.CheckOptions{Probes: goFuncs{}}); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(prog.Maps[0])
	fmt.Print(prog)
	// Output:
	// @[string[64]] count()
	// uprobe:./server:main.handle /args.id > 0/ {
	// 	@[args.path] = count()
	// }
}
