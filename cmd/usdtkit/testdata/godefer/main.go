// Command godefer returns named results that a deferred closure assigns,
// the case where Go's DWARF lists a result twice. Like gofuncs, it prints
// "ready PID", waits for a line on stdin, then prints one JSON line per
// call with the results it returned, then "done".
//
//	go build -o godefer ./testdata/godefer
package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"os"
)

// Deferred returns x+1 and nil, unless the deferred closure replaces
// both results.
//
//go:noinline
func Deferred(x int) (n int, err error) {
	defer func() {
		if x > 2 {
			n = x * 10
			err = errors.New("big")
		}
	}()
	return x + 1, nil
}

// Tail has the duplicated result last, after a string result, so that a
// result placed twice would shift it.
//
//go:noinline
func Tail(s string) (t string, k int) {
	defer func() { k = len(t) * 3 }()
	return s + "!", 7
}

func main() {
	fmt.Printf("ready %d\n", os.Getpid())
	bufio.NewReader(os.Stdin).ReadString('\n')
	for _, x := range []int{1, 5} {
		n, err := Deferred(x)
		out := map[string]any{"n": n, "err": nil}
		if err != nil {
			out["err"] = "*errors.errorString"
		}
		line, _ := json.Marshal(map[string]any{"func": "main.Deferred", "results": out})
		fmt.Println(string(line))
	}
	t, k := Tail("abc")
	line, _ := json.Marshal(map[string]any{"func": "main.Tail", "results": map[string]any{"t": t, "k": k}})
	fmt.Println(string(line))
	fmt.Println("done")
}
