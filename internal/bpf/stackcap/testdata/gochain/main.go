// gochain is the Go target of the stack tests: on each line of stdin,
// "levels" runs main → level1 → level2 → level3 → leaf, then it prints
// "done". leaf has no frame of its own (Go omits it in small leaf
// functions), so at its entry the frame pointer is level3's.
package main

import (
	"bufio"
	"fmt"
	"os"
)

var sink int

//go:noinline
func leaf(x int) int { return x*3 + 1 }

//go:noinline
func level3(x int) int { return leaf(x) + 1 }

//go:noinline
func level2(x int) int { return level3(x) + 1 }

//go:noinline
func level1(x int) int { return level2(x) + 1 }

func main() {
	sc := bufio.NewScanner(os.Stdin)
	for sc.Scan() {
		if sc.Text() == "levels" {
			sink += level1(1)
		}
		fmt.Println("done")
	}
}
