package gofunc_test

import (
	"errors"
	"fmt"
	"os"

	"github.com/usdtkit/usdtkit/internal/golang/gofunc"
)

// Open a Go binary, here the test binary itself, and find where a tracer
// probes a function's entry and returns. `go test` links its binaries
// without DWARF, so there the function's parameters are unknown and
// Problems says so; with DWARF, Params and Results give each value's
// registers or stack slots.
func ExampleBinary_Func() {
	exe, err := os.Executable()
	if err != nil {
		fmt.Println(err)
		return
	}
	b, err := gofunc.Open(exe)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer b.Close()
	fn, err := b.Func("github.com/usdtkit/usdtkit/internal/golang/gofunc.Open")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("entry site after the stack check:", fn.Site > fn.Entry && fn.Site < fn.End)
	fmt.Println("returns:", len(fn.Returns) > 0)

	_, err = b.Func("main.NoSuchFunction")
	fmt.Println(errors.Is(err, gofunc.ErrNotFound))
	// Output:
	// entry site after the stack check: true
	// returns: true
	// true
}
