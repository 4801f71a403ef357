package symtab_test

import (
	"debug/elf"
	"errors"
	"fmt"

	"github.com/usdtkit/usdtkit/elfnotes"
	"github.com/usdtkit/usdtkit/internal/elf/symtab"
)

// Resolve names of glibc to addresses, as a USDT argument such as
// "8@stdout(%rip)" needs: a plain name finds the versioned symbol, and a
// name with several versions at different addresses needs its version.
func ExampleTable_Lookup() {
	f, err := elfnotes.Open("/lib/x86_64-linux-gnu/libc.so.6")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer f.Close()
	syms, err := symtab.Read(f)
	if err != nil {
		fmt.Println(err)
		return
	}
	tab := symtab.NewTable(syms)
	for _, name := range []string{"stdout", "malloc", "memcpy", "memcpy@@GLIBC_2.14"} {
		s, err := tab.Lookup(name)
		if err != nil {
			fmt.Printf("%s: ambiguous: %v\n", name, errors.Is(err, symtab.ErrAmbiguous))
			continue
		}
		fmt.Printf("%s: data %v, version %s\n", name, s.Type == elf.STT_OBJECT, s.Version)
	}
	// Output:
	// stdout: data true, version GLIBC_2.2.5
	// malloc: data false, version GLIBC_2.2.5
	// memcpy: ambiguous: true
	// memcpy@@GLIBC_2.14: data false, version GLIBC_2.14
}
