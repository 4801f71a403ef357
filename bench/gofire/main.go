// Command gofire is the Go side of BenchmarkFireTraced: a process that
// fires a dynsdt probe, traced from outside as the C tracee is.
//
// It loads provider "gofire" with probe "bench" of two Int32 arguments,
// in $USDTKIT_GOFIRE_DIR (else dynsdt's default directory). It reads
// commands from stdin and ends each answer with "done":
//
//	pid        print "pid PID" once the provider is loaded
//	loop N     fire the probe N times and print "loop NS", the loop's time
//	enabled N  check Enabled N times, firing when true; print "loop NS"
//	quit       exit
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
