// Command gostack prints, on each line of stdin, "NAME PC FILE LINE" for
// a PC inside function leaf (from runtime.Caller) and the entry of main.level1,
// then "done". The tests build it with go build.
package main

import (
	"bufio"
	"fmt"
	"os"
	"reflect"
	"runtime"
)

//go:noinline
func leaf() (uintptr, string, int) {
	pc, file, line, _ := runtime.Caller(0)
	return pc, file, line
}

//go:noinline
func level1() (uintptr, string, int) { return leaf() }

func main() {
	sc := bufio.NewScanner(os.Stdin)
	for sc.Scan() {
		pc, file, line := level1()
		fmt.Printf("main.leaf %#x %s %d\n", pc, file, line)
		fmt.Printf("main.level1 %#x - 0\n", reflect.ValueOf(level1).Pointer())
		fmt.Println("done")
	}
}
