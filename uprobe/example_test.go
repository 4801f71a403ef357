package uprobe_test

import (
	"fmt"

	"github.com/usdtkit/usdtkit/elfnotes"
	"github.com/usdtkit/usdtkit/uprobe"
)

// List the functions of glibc and pick malloc, whose file offset is where a
// uprobe on it attaches.
func ExampleSymbols() {
	f, err := elfnotes.Open("/lib/x86_64-linux-gnu/libc.so.6")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer f.Close()

	syms, err := uprobe.Symbols(f)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, s := range syms {
		if s.Name == "malloc" {
			fmt.Printf("%s %s %s@%s offset known: %v\n", s.DisplayName(), s.Kind, s.Source, s.Version, s.Offset != 0)
		}
	}
	// Output: malloc func dynsym@GLIBC_2.2.5 offset known: true
}
