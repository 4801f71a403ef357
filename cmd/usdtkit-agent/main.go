// Command usdtkit-agent runs programs in bpftrace's language in every
// process their targets select, and exports their maps as Prometheus
// metrics (and over OTLP). usdtkit agent runs it.
//
// It is a separate program so that usdtkit does not link the Prometheus
// client, the OpenTelemetry SDK, gRPC and protobuf. Package agent does the
// work.
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
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run executes one command line and returns the exit code.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	cmd := newAgentCmd()
	cmd.SetArgs(args)
	cmd.SetOut(stdout)
	cmd.SetErr(stderr)
	if err := cmd.ExecuteContext(ctx); err != nil {
		fmt.Fprintln(stderr, "usdtkit agent:", userMessage(err))
		return 1
	}
	return 0
}

// userMessage turns an error into the one sentence a user acts on.
func userMessage(err error) string {
	if errors.Is(err, os.ErrPermission) && os.Geteuid() != 0 {
		return "permission denied: tracing needs root, or CAP_BPF and CAP_PERFMON"
	}
	return err.Error()
}
