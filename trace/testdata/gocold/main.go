// Command gocold maps the file named by its argument privately and never
// reads it. Each line "K" on stdin calls cold with a Go string of the 13
// bytes at offset K MiB of the mapping, in a page the process has not
// touched, then prints "done". The pages are 1 MiB apart, so a fault on
// one (and the kernel's fault-around, 64 KiB) maps no other.
package main

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"syscall"
	"unsafe"
)

//go:noinline
func cold(s string) int { return len(s) }

func main() {
	f, err := os.Open(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	m, err := syscall.Mmap(int(f.Fd()), 0, 16<<20, syscall.PROT_READ, syscall.MAP_PRIVATE)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	sc := bufio.NewScanner(os.Stdin)
	for sc.Scan() {
		k, err := strconv.Atoi(sc.Text())
		if err != nil || k < 0 || k >= 16 {
			fmt.Fprintln(os.Stderr, "want a page from 0 to 15")
			os.Exit(1)
		}
		cold(unsafe.String(&m[k<<20], 13))
		fmt.Println("done")
	}
}
