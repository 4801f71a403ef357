// Command gostatic is the static-probe side of BenchmarkStatic*. Its probe
// gostatic:bench (two int32 arguments) is compiled in with usdtkit gen
// --static and gets its notes from go build -toolexec 'usdtkit toolexec'.
//
// It answers commands on stdin as bench/gofire does, each ending "done":
//
//	pid          print "pid PID"
//	loop N       fire the probe N times; print "loop NS"
//	enabled N    check N times, firing when enabled; print "loop NS"
//	enabled@V N  the same with checkLoopV (V 0 to 3)
//	enabled16 N  16 checks per iteration (N a multiple of 16)
//	quit         exit
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
		case "loop", "enabled", "enabled@0", "enabled@1", "enabled@2", "enabled@3", "enabled16":
			n, perr := strconv.Atoi(arg)
			if perr != nil || n < 0 || (cmd == "enabled16" && n%16 != 0) {
				return fmt.Errorf("%s %q: want a count", cmd, arg)
			}
			start := time.Now()
			switch cmd {
			case "loop":
				fireLoop(n, seed)
			case "enabled16":
				checkRounds(n/16, seed)
			default:
				_, v, _ := strings.Cut(cmd, "@")
				k, _ := strconv.Atoi(v) // "" (enabled) is 0
				checkLoops[k](n, seed)
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

// checkLoops are four copies of one loop that guards each fire with
// BenchEnabled, as code that computes a probe's arguments does. Their
// prologues differ in length (stores to loopPad), so that their loops lie
// at different offsets from a 64-byte line: BenchmarkStaticEnabled times
// one whose loop lies within one line, as C's does, so that it times the
// check and not the fetch of a loop split across two lines.
var checkLoops = [...]func(n int, seed int32){checkLoop0, checkLoop1, checkLoop2, checkLoop3}

var loopPad [3]int

//go:noinline
func checkLoop0(n int, seed int32) {
	for k := range n {
		if BenchEnabled() {
			Bench(int32(k), seed)
		}
	}
}

//go:noinline
func checkLoop1(n int, seed int32) {
	loopPad[0] = n
	for k := range n {
		if BenchEnabled() {
			Bench(int32(k), seed)
		}
	}
}

//go:noinline
func checkLoop2(n int, seed int32) {
	loopPad[0] = n
	loopPad[1] = n
	for k := range n {
		if BenchEnabled() {
			Bench(int32(k), seed)
		}
	}
}

//go:noinline
func checkLoop3(n int, seed int32) {
	loopPad[0] = n
	loopPad[1] = n
	loopPad[2] = n
	for k := range n {
		if BenchEnabled() {
			Bench(int32(k), seed)
		}
	}
}

// checkRounds checks 16 times per loop iteration, for rounds iterations,
// whether the probe is enabled, firing it when it is: the loop's own
// instructions and branch are shared by 16 checks. BenchmarkStaticEnabled's
// C side has the same shape.
//
//go:noinline
func checkRounds(rounds int, seed int32) {
	for k := range int32(rounds) {
		if BenchEnabled() {
			Bench(k, seed)
		}
		if BenchEnabled() {
			Bench(k, seed)
		}
		if BenchEnabled() {
			Bench(k, seed)
		}
		if BenchEnabled() {
			Bench(k, seed)
		}
		if BenchEnabled() {
			Bench(k, seed)
		}
		if BenchEnabled() {
			Bench(k, seed)
		}
		if BenchEnabled() {
			Bench(k, seed)
		}
		if BenchEnabled() {
			Bench(k, seed)
		}
		if BenchEnabled() {
			Bench(k, seed)
		}
		if BenchEnabled() {
			Bench(k, seed)
		}
		if BenchEnabled() {
			Bench(k, seed)
		}
		if BenchEnabled() {
			Bench(k, seed)
		}
		if BenchEnabled() {
			Bench(k, seed)
		}
		if BenchEnabled() {
			Bench(k, seed)
		}
		if BenchEnabled() {
			Bench(k, seed)
		}
		if BenchEnabled() {
			Bench(k, seed)
		}
	}
}
