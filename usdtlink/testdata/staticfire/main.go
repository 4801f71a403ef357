// Command staticfire fires static probe byo:twelve, whose 12 arguments
// are dynsdt's types as in testdata/dynfire, once for each "fire" line on
// stdin with the values TestLibbpfAgrees wants, then prints "done". The
// probe's Go files (Twelve) are generated beside it at test time
// (package dynsdt/gen's Static), and the executable gets its notes from the
// post-link step (postlink.File).
package main

import (
	"bufio"
	"fmt"
	"os"
)

func main() {
	sc := bufio.NewScanner(os.Stdin)
	for sc.Scan() {
		if sc.Text() != "fire" {
			continue
		}
		Twelve(-3, 250, -1000, 65000, -100000, 4000000000, -1<<40, 1<<63+5, true, 0x1234, "hello", -128)
		fmt.Println("done")
	}
}
