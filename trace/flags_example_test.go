package trace_test

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/usdtkit/usdtkit/trace"
)

// The trace command's flags are shorthands for programs: --hist arg2 --by
// pid with a string filter, as a program's text, and traced. Tracing needs
// root.
func ExampleFlagProgram() {
	pid := 1234 // a process with CPython's USDT probes
	flags := &trace.Flags{
		Probes:  []string{"usdt::python:function__entry"},
		Hist:    "arg2",
		By:      []string{"pid"},
		Filters: []string{`str(arg1) == "handle"`},
	}
	src, err := trace.FlagProgram(flags, &trace.CompileOptions{PID: pid})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return
	}
	fmt.Print(src) // usdt::python:function__entry /str(arg1) == "handle"/ { @[probe, pid] = hist(arg2); }

	prog, err := trace.CompileFlags(flags, &trace.CompileOptions{PID: pid})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return
	}
	t, err := trace.Start(prog, &trace.Options{PID: pid})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return
	}
	defer t.Close()
	if err := t.Run(context.Background()); err != nil {
		fmt.Fprintln(os.Stderr, err)
	}
}

// Malformed flags are FlagErrors, before any probe is listed.
func ExampleFlagError() {
	_, err := trace.FlagProgram(&trace.Flags{Probes: []string{"python:gc__start"}, Count: true, By: []string{"cpu"}}, nil)
	var fe *trace.FlagError
	if errors.As(err, &fe) {
		fmt.Println(fe.Flag)
	}
	fmt.Println(err)
	// Output:
	// --by
	// --by: "cpu": want pid, tid, comm, argN or str(argN)
}
