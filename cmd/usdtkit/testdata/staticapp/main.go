// Command staticapp fires static probes (usdtkit gen --static) on command:
// "fire TEXT N" fires myapp:req__start(TEXT, N, N is even) and
// myapp:req__done(len(TEXT)); "enabled" prints whether req__start is.
package main

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
)

func main() {
	if err := Load(nil); err != nil {
		fmt.Println("load:", err)
		os.Exit(1)
	}
	defer Close()
	in := bufio.NewScanner(os.Stdin)
	fmt.Println("ready")
	for in.Scan() {
		f := strings.Fields(in.Text())
		switch {
		case len(f) == 3 && f[0] == "fire":
			n, _ := strconv.Atoi(f[2])
			ReqStart(f[1], int32(n), n%2 == 0)
			ReqDone(int64(len(f[1])))
			fmt.Println("fired")
		case len(f) == 1 && f[0] == "enabled":
			fmt.Println(ReqStartEnabled(), ReqDoneEnabled())
		default:
			fmt.Println("?")
		}
	}
}
