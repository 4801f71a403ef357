// Command gofn is the Go target of trace's tests: it waits for a line on
// standard input, then makes a known set of calls of non-inlined
// functions from several goroutines, prints each call as "call PATH N
// CODE OK" (and "many SUM"), and exits 0.
package main

import (
	"bufio"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"
	"unsafe"
)

type server struct{ hits int }

type point struct{ X, Y int }

var mu sync.Mutex

// handle's parameters are a string, an int, a uint8, a bool and a
// pointer; its results an int and a string.
//
//go:noinline
func handle(path string, n int, code uint8, ok bool, s *server) (status int, msg string) {
	// Parks the goroutine: it may resume on another thread.
	time.Sleep(time.Millisecond)
	mu.Lock()
	s.hits++
	mu.Unlock()
	return n * 10, "ok:" + path
}

// many has more integer parameters than amd64 has argument registers: j,
// k and the string s are on the stack.
//
//go:noinline
func many(a, b, c, d, e, f, g, h, i, j, k int, s string) int {
	return a + b + c + d + e + f + g + h + i + j + k + len(s)
}

// unreadable takes values programs cannot read.
//
//go:noinline
func unreadable(p point, items []string, err error) string {
	return fmt.Sprint(p, items, err)
}

var calls = []struct {
	path string
	n    int
}{
	{"/a", 1}, {"/b", 5}, {"/a", 7}, {"/c", 2}, {"/b", 9}, {"/longer/path/than/the/rest", 4},
	{"/a", -4}, {"/c", 12}, {"/b", 3}, {"/a", 6},
	// Longer than a program's strings (64 bytes with the NUL).
	{"/" + strings.Repeat("0123456789", 8), 8},
}

func main() {
	if _, err := bufio.NewReader(os.Stdin).ReadString('\n'); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	srv := &server{}
	fmt.Printf("srv %d\n", uintptr(unsafe.Pointer(srv)))
	var wg sync.WaitGroup
	var out sync.Mutex
	for _, c := range calls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			code := uint8(c.n * 30)
			ok := c.n%2 == 0
			handle(c.path, c.n, code, ok, srv)
			out.Lock()
			fmt.Printf("call %s %d %d %t\n", c.path, c.n, code, ok)
			out.Unlock()
		}()
	}
	wg.Wait()
	fmt.Printf("many %d\n", many(1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, "on the stack"))
	unreadable(point{1, 2}, nil, nil)
	if srv.hits != len(calls) {
		os.Exit(2)
	}
}
