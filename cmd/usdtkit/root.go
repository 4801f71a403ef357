package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/cilium/ebpf"
	"github.com/spf13/cobra"

	"github.com/usdtkit/usdtkit/sdt"
)

func newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:           "usdtkit",
		Short:         "List, trace and create USDT probes and uprobes",
		SilenceErrors: true,
		SilenceUsage:  true,
	}
	root.AddCommand(newListCmd())
	root.AddCommand(newTraceCmd())
	root.AddCommand(newDoctorCmd())
	root.AddCommand(newGenCmd())
	return root
}

// userMessage turns an error into the one sentence a user acts on.
func userMessage(err error) string {
	var argErr *sdt.ArgError
	switch {
	case errors.Is(err, os.ErrPermission):
		return fmt.Sprintf("%v (tracing needs root, or CAP_BPF and CAP_PERFMON; other processes' mappings need CAP_SYS_ADMIN)", err)
	case errors.Is(err, ebpf.ErrNotSupported):
		return fmt.Sprintf("%v (this kernel lacks a feature usdtkit needs: run usdtkit doctor)", err)
	case errors.Is(err, sdt.ErrNoProbes):
		return err.Error()
	case errors.Is(err, sdt.ErrNoProcess):
		return fmt.Sprintf("%v (is the PID right, and is the process still running?)", err)
	case errors.Is(err, sdt.ErrNoTarget):
		return "name a file, a library or a process (-p PID) to look in"
	case errors.Is(err, sdt.ErrNotFound):
		return err.Error()
	case errors.As(err, &argErr):
		return argErr.Error()
	}
	return err.Error()
}
