// Command gostack prints, on each line of stdin, "NAME PC FILE LINE" for
// a PC inside function leaf (from runtime.Caller) and the entry of
// main.level1, then for a PC in outer, where middle and inner are
// inlined, "inline PC" and the frames runtime.CallersFrames gives for it
// up to outer, "frame FUNCTION FILE LINE" each; then "done". The tests build it with
// go build.
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

// callers returns the return addresses of its caller and up.
//
//go:noinline
func callers() []uintptr {
	pcs := make([]uintptr, 8)
	return pcs[:runtime.Callers(2, pcs)]
}

func inner() []uintptr { return callers() }

func middle() []uintptr { return inner() }

//go:noinline
func outer() []uintptr { return middle() }

func main() {
	sc := bufio.NewScanner(os.Stdin)
	for sc.Scan() {
		pc, file, line := level1()
		fmt.Printf("main.leaf %#x %s %d\n", pc, file, line)
		fmt.Printf("main.level1 %#x - 0\n", reflect.ValueOf(level1).Pointer())
		pcs := outer()
		fmt.Printf("inline %#x\n", pcs[0])
		frames := runtime.CallersFrames(pcs)
		for {
			f, more := frames.Next()
			fmt.Printf("frame %s %s %d\n", f.Function, f.File, f.Line)
			if !more || f.Function == "main.outer" {
				break
			}
		}
		fmt.Println("done")
	}
}
