// Command gotarget is the traced side of BenchmarkGoFuncTraced: a Go
// program that calls Hit in a loop, traced from outside by PID.
//
// Hit takes a string, an int and a pointer to a struct, and returns an
// int. It is not inlined. Build with DWARF: tracing reads Hit's
// parameters from it.
//
// It reads commands from stdin and ends each answer with "done":
//
//	pid     print "pid PID"
//	loop N  call Hit N times and print "loop NS", the loop's time
//	quit    exit
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
