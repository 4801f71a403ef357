// Command gostatic is the static-probe side of bench's BenchmarkStatic*: a
// Go program whose probe gostatic:bench (two int32 arguments, as
// tracee.c's "bench") is compiled in with usdtkit gen --static (the
// generated files beside this one; go generate rewrites them) and gets its
// notes from go build -toolexec 'usdtkit toolexec'.
//
// It reads commands from stdin and answers as bench/gofire does:
//
//	pid        print "pid PID"
//	loop N     fire the probe N times (arguments k and the PID) and print
//	           "loop NS", the loop's time on this process's clock
//	enabled N  check N times whether the probe is enabled, firing it when
//	           it is, and print "loop NS"
//	quit       exit
//
// Each answer ends with "done".
package main

//go:generate go run ../../cmd/usdtkit gen --static --package main -o . --provider gostatic --probe bench:int32,int32

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

func main() {
	if err := run(os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "gostatic:", err)
		os.Exit(1)
	}
}

func run(in io.Reader, out io.Writer) (err error) {
	seed := int32(os.Getpid())
	sc := bufio.NewScanner(in)
	for sc.Scan() {
		cmd, arg, _ := strings.Cut(sc.Text(), " ")
		switch cmd {
		case "pid":
			_, err = fmt.Fprintf(out, "pid %d\n", os.Getpid())
		case "loop", "enabled":
			n, perr := strconv.Atoi(arg)
			if perr != nil || n < 0 {
				return fmt.Errorf("%s %q: want a count", cmd, arg)
			}
			start := time.Now()
			if cmd == "loop" {
				fireLoop(n, seed)
			} else {
				checkLoop(n, seed)
			}
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
	return sc.Err()
}

// fireLoop fires the probe n times; a function of its own, as a hot loop
// in a program is.
//
//go:noinline
func fireLoop(n int, seed int32) {
	for k := range n {
		Bench(int32(k), seed)
	}
}

// checkLoop guards each fire with BenchEnabled, as code that computes a
// probe's arguments does.
//
//go:noinline
func checkLoop(n int, seed int32) {
	for k := range n {
		if BenchEnabled() {
			Bench(int32(k), seed)
		}
	}
}
