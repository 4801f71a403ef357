package btgen_test

import (
	"debug/elf"
	"fmt"

	"github.com/usdtkit/usdtkit/internal/bpf/argread"
	"github.com/usdtkit/usdtkit/internal/lang/btgen"
	"github.com/usdtkit/usdtkit/internal/lang/btlang"
)

func ExampleGenerate() {
	src := `usdt:./server:app:req /str(arg1) == "GET"/ { @[comm, arg0] = count(); printf("%d\n", arg0); }`
	prog, err := btlang.Compile("stdin", []byte(src), nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	// The caller resolved the probe to one site: two register arguments.
	rdi, _ := argread.PtRegs(elf.EM_X86_64, "rdi")
	rsi, _ := argread.PtRegs(elf.EM_X86_64, "rsi")
	site := btgen.Site{Path: "./server", Offset: 0x1234, Args: []argread.Fetch{
		{Kind: argread.FetchReg, Size: 8, Signed: true, Reg: argread.Reg{Off: rdi, Width: 8}},
		{Kind: argread.FetchReg, Size: 8, Reg: argread.Reg{Off: rsi, Width: 8}},
	}}
	out, err := btgen.Generate(prog, &btgen.Options{Sites: [][]btgen.Site{{site}}})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, b := range out.Blocks {
		fmt.Println(b.Prog, len(b.Sites), "site")
	}
	for _, m := range out.Maps {
		fmt.Printf("%s in %s: key %d bytes at %v, value %d bytes, per-CPU %v\n", m.Map, m.BPF, m.KeySize, m.KeyOffs, m.ValueSize, m.PerCPU)
	}
	fmt.Println("printf record:", out.Printfs[0].Size, "bytes")

	// What the slice does not compile yet is an error at its position.
	prog, err = btlang.Compile("stdin", []byte(`usdt:./server:app:req { @last = ustack; }`), nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	_, err = btgen.Generate(prog, &btgen.Options{Sites: [][]btgen.Site{{site}}})
	fmt.Println(err)
	// Output:
	// block0 1 site
	// @[string[16], uint64] count() in m0: key 24 bytes at [0 16], value 8 bytes, per-CPU true
	// printf record: 16 bytes
	// stdin:1:25: a ustack[127] value of @last is not supported yet
}
