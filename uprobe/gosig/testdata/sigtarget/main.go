// Command sigtarget has a function whose signature gosig's tests read.
package main

import (
	"errors"
	"fmt"
	"os"
)

//go:noinline
func sigTarget(n int, name string, ok bool) (hits uint32, err error) {
	if ok {
		return uint32(n + len(name)), nil
	}
	return 0, errors.New(name)
}

func main() {
	fmt.Println(sigTarget(len(os.Args), "x", true))
}
