package uprobe_test

import (
	"fmt"

	"github.com/usdtkit/usdtkit/uprobe"
)

// Find the C library's malloc by the library's short name.
func ExampleList() {
	sel, err := uprobe.ParseSelector("uprobe:libc:malloc")
	if err != nil {
		panic(err)
	}
	objs, err := uprobe.List(&uprobe.ListOptions{Selectors: []uprobe.Selector{sel}})
	if err != nil {
		panic(err)
	}
	for _, obj := range objs {
		for _, s := range obj.Symbols {
			fmt.Println(s.Name, s.Kind, s.Offset != 0)
		}
	}
	// Output:
	// malloc func true
}
