// Command gofire is the Go side of bench's BenchmarkFireTraced: a process
// that fires a dynsdt probe, so that the benchmark traces it from outside
// exactly as it traces the C tracee (internal/bpf/argread/testdata/tracee.c),
// with no tracer goroutines sharing its CPUs' run queue with the loop.
//
// It loads provider "gofire" with one probe "bench" of two Int32 arguments
// (tracee.c's "bench" probe's), writing the object file to the directory
// $USDTKIT_GOFIRE_DIR (dynsdt's default directory if unset), then reads
// commands from stdin, one per line, and answers each with the lines below
// and then "done", as tracee.c does:
//
//	pid     print "pid PID": the provider is loaded and mapped
//	loop N  fire probe "bench" N times, with arguments k (0..N-1) and a
//	        value read at run time (the PID, as tracee.c's volatile seed),
//	        and print "loop NS", the time taken by the loop on this
//	        process's monotonic clock
//	enabled N  check N times whether probe "bench" is enabled, firing it
//	        (arguments as for loop) when it is, as code that guards the work
//	        for a probe's arguments does, and print "loop NS" as loop does
//	quit    exit
//
// At quit or the end of stdin it closes the provider, removing its file.
package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/usdtkit/usdtkit/dynsdt"
)

// spec is the provider gofire loads: probe "bench" as in tracee.c.
var spec = dynsdt.ProviderSpec{Name: "gofire", Probes: []dynsdt.ProbeSpec{
	{Name: "bench", Args: []dynsdt.ArgType{dynsdt.Int32, dynsdt.Int32}},
}}

func main() {
	if err := run(os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "gofire:", err)
		os.Exit(1)
	}
}

func run(in io.Reader, out io.Writer) (err error) {
	p, err := dynsdt.Load(&spec, &dynsdt.Options{Dir: os.Getenv("USDTKIT_GOFIRE_DIR")})
	if err != nil {
		return err
	}
	defer func() {
		if cerr := p.Close(); err == nil {
			err = cerr
		}
	}()
	probe := p.Probe("bench")
	// "enabled" reads the probe as the code usdtkit gen writes does: from
	// an atomic.Pointer that Load and Close store to, once in XxxEnabled()
	// and again in Xxx(args), the probe's function.
	var bench atomic.Pointer[dynsdt.Probe]
	bench.Store(probe)
	seed := uint64(os.Getpid())
	sc := bufio.NewScanner(in)
	for sc.Scan() {
		cmd, arg, _ := strings.Cut(sc.Text(), " ")
		switch cmd {
		case "pid":
			_, err = fmt.Fprintf(out, "pid %d\n", os.Getpid())
		case "loop":
			n, perr := strconv.Atoi(arg)
			if perr != nil || n < 0 {
				return fmt.Errorf("loop %q: want a count", arg)
			}
			start := time.Now()
			for k := range n {
				probe.Fire(uint64(k), seed)
			}
			_, err = fmt.Fprintf(out, "loop %d\n", time.Since(start).Nanoseconds())
		case "enabled":
			n, perr := strconv.Atoi(arg)
			if perr != nil || n < 0 {
				return fmt.Errorf("enabled %q: want a count", arg)
			}
			start := time.Now()
			checkLoop(&bench, n, seed)
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

// checkLoop checks n times whether the probe in bench is enabled and fires
// it if so, as C code guards a probe with its PROVIDER_PROBE_ENABLED()
// macro. It is a function of its own, as a hot loop in a program is, so
// that the compiler treats it as it would theirs, not as part of run.
//
//go:noinline
func checkLoop(bench *atomic.Pointer[dynsdt.Probe], n int, seed uint64) {
	for k := range n {
		if bench.Load().Enabled() {
			bench.Load().Fire(uint64(k), seed)
		}
	}
}
