// Command gotarget is the traced side of bench's BenchmarkGoFuncTraced: a
// Go program that calls one function, Hit, in a loop, so that the benchmark
// traces Hit from outside by PID, with usdtkit and with an empty program at
// the same sites, and reads the cost of a traced call on this process's own
// clock, with no tracer goroutines sharing the loop's run queue.
//
// Hit takes a string, an int and a pointer to a struct, so that a tracer
// reads registers (rax, rbx, rcx, rdi on amd64) and string bytes through a
// pointer, and returns an int. It is not inlined, so every call enters it
// and leaves by its RET.
//
// It reads commands from stdin, one per line, and answers each with the
// lines below and then "done", as internal/bpf/argread/testdata/tracee.c does:
//
//	pid     print "pid PID"
//	loop N  call Hit N times, with arguments ("gotarget", k for k in
//	        0..N-1, a *T), and print "loop NS", the time the loop took on
//	        this process's monotonic clock
//	quit    exit
//
// Build it with DWARF (no -ldflags=-s -w): tracing reads Hit's parameters
// from it.
package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"
)

// T is what Hit's pointer argument points to.
type T struct {
	hits int64
	name string
}

// Hit is the traced function.
//
//go:noinline
func Hit(s string, n int, p *T) int {
	p.hits += int64(n)
	return len(s) + n
}

func main() {
	if err := run(os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "gotarget:", err)
		os.Exit(1)
	}
}

func run(in io.Reader, out io.Writer) error {
	t := &T{name: "bench"}
	var sink int
	sc := bufio.NewScanner(in)
	for sc.Scan() {
		cmd, arg, _ := strings.Cut(sc.Text(), " ")
		var err error
		switch cmd {
		case "pid":
			_, err = fmt.Fprintf(out, "pid %d\n", os.Getpid())
		case "loop":
			n, perr := strconv.Atoi(arg)
			if perr != nil || n < 0 {
				return fmt.Errorf("loop %q: want a count", arg)
			}
			start := time.Now()
			sink += loop(t, n)
			_, err = fmt.Fprintf(out, "loop %d\n", time.Since(start).Nanoseconds())
		case "quit":
			return nil
		default:
			return errors.New("unknown command " + strconv.Quote(sc.Text()))
		}
		if err != nil {
			return err
		}
		if _, err := io.WriteString(out, "done\n"); err != nil {
			return err
		}
	}
	if sink == -1 {
		// Never true; keeps the results of Hit live.
		fmt.Fprintln(out, t.hits)
	}
	return sc.Err()
}

// loop calls Hit n times and returns the sum of its results.
//
//go:noinline
func loop(t *T, n int) int {
	sum := 0
	for k := range n {
		sum += Hit("gotarget", k, t)
	}
	return sum
}
