// Command usdtkit lists, traces and creates USDT probes and uprobes.
//
// main builds the command tree, runs it with a context that SIGINT and
// SIGTERM cancel, prints a failure as one sentence on stderr and sets the exit
// code. Everything a command does is done by the library packages.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run executes one command line and returns the exit code.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	root := newRootCmd()
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	if err := root.ExecuteContext(ctx); err != nil {
		fmt.Fprintln(stderr, "usdtkit:", userMessage(err))
		return 1
	}
	return 0
}
