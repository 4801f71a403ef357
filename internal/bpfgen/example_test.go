package bpfgen_test

import (
	"debug/elf"
	"fmt"
	"slices"

	"github.com/usdtkit/usdtkit/internal/argfetch"
	"github.com/usdtkit/usdtkit/internal/bpfgen"
	"github.com/usdtkit/usdtkit/sdt"
)

// Generate a program for one probe site whose arguments are "-4@%edi" and
// "8@gs+8(%rip)", reading the second as a string.
func ExampleGenerate() {
	const site = 0x1139 // the location's address
	symbols := func(string) (uint64, error) { return 0x4010, nil }
	var args []bpfgen.Fetch
	for _, spec := range []string{"-4@%edi", "8@gs+8(%rip)"} {
		a, err := sdt.ParseArg(elf.EM_X86_64, spec)
		if err != nil {
			panic(err)
		}
		f, err := argfetch.Fetch(a, site, symbols)
		if err != nil {
			panic(err)
		}
		fmt.Printf("%s: %v size %d signed %v ip-relative %v offset %#x\n", spec, f.Kind, f.Size, f.Signed, f.IPRel, f.Offset)
		args = append(args, f)
	}
	cfg := &bpfgen.Config{
		Machine: elf.EM_X86_64,
		Sites:   []bpfgen.Site{{Probe: 0, Args: args, Strings: 1 << 1}},
		Multi:   true,
	}
	spec, err := bpfgen.Generate(cfg)
	if err != nil {
		panic(err)
	}
	var maps []string
	for name := range spec.Maps {
		maps = append(maps, name)
	}
	slices.Sort(maps)
	fmt.Println("maps:", maps)
	fmt.Println("record bytes:", cfg.RecordSize())
	// Output:
	// -4@%edi: reg size 4 signed true ip-relative false offset 0x0
	// 8@gs+8(%rip): mem size 8 signed false ip-relative true offset 0x2edf
	// maps: [events lost]
	// record bytes: 136
}

func ExampleHistBucket() {
	for _, v := range []int64{-5, 0, 1, 3, 4, 1000} {
		fmt.Println(v, bpfgen.HistBucket(uint64(v), true))
	}
	// Output:
	// -5 0
	// 0 1
	// 1 2
	// 3 3
	// 4 4
	// 1000 11
}
