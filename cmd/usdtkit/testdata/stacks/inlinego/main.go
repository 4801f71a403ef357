// inlinego: a known Go call chain with an inlined call, for the stack
// tests. Each line on stdin runs main → outer → middle (inlined into
// outer by the default build) → leaf and prints "done".
package main

import (
	"bufio"
	"fmt"
	"os"
)

var sink int

//go:noinline
func leaf(x int) int { sink += x; return sink & 1 }

// middle is small enough for the compiler to inline into outer.
func middle(x int) int { return leaf(x+1) + 1 }

//go:noinline
func outer(x int) int { return middle(x) * 2 }

func main() {
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		sink += outer(len(in.Text()))
		fmt.Println("done")
	}
}
