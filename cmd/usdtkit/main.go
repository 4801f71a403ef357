// Command usdtkit lists, traces and creates USDT probes and uprobes.
//
// main builds the command tree, runs it with a context that SIGINT and
// SIGTERM cancel, prints a failure as one sentence on stderr and sets the exit
// code. Everything a command does is done by the library packages.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	// The first signal asks for an orderly end (a trace detaches, drains
	// its ring into stdout and prints its maps, which waits on a slow
	// reader of stdout); a second one ends the process at once, as the
	// default disposition does, and the kernel detaches with the fds.
	go func() {
		<-ctx.Done()
		stop()
	}()
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run executes one command line with os.Stdin and returns the exit code.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	return runIn(ctx, args, os.Stdin, stdout, stderr)
}

// runIn is run with stdin as the commands' standard input (trace's
// program file -).
func runIn(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	root := newRootCmd()
	root.SetArgs(args)
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	err := root.ExecuteContext(ctx)
	var (
		status exitStatus
		usage  *usageError
		bt     *bpftraceError
	)
	switch {
	case err == nil:
		return 0
	case errors.As(err, &status):
		return int(status)
	case errors.As(err, &usage):
		fmt.Fprintf(stderr, "usdtkit: %v\n\n%s", usage.err, usage.usage)
		return 1
	case errors.As(err, &bt):
		fmt.Fprintln(stderr, bt.msg)
		return 1
	}
	fmt.Fprintln(stderr, "usdtkit:", userMessage(err))
	return 1
}

// exitStatus is a command's exit status (trace -c) that usdtkit passes on
// as its own; it is not printed.
type exitStatus int

func (e exitStatus) Error() string { return fmt.Sprintf("exit status %d", int(e)) }

// usageError is a command line a command cannot read (an unknown flag):
// the error, then the command's usage.
type usageError struct {
	err   error
	usage string
}

func (e *usageError) Error() string { return e.err.Error() }
func (e *usageError) Unwrap() error { return e.err }

// bpftraceError is an error that usdtkit trace writes on stderr as
// bpftrace does, word for word, for the scripts that read it.
type bpftraceError struct {
	msg string
	err error
}

func (e *bpftraceError) Error() string { return e.msg }
func (e *bpftraceError) Unwrap() error { return e.err }
