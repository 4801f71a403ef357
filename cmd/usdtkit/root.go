package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"

	"github.com/cilium/ebpf"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/usdtkit/usdtkit/dynsdt"
	"github.com/usdtkit/usdtkit/elfnotes"
	"github.com/usdtkit/usdtkit/sdt"
)

func newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:           "usdtkit",
		Short:         "List, trace and create USDT probes and uprobes",
		SilenceErrors: true,
		SilenceUsage:  true,
		Version:       version(),
		// Run-time providers' object files that processes killed by
		// a signal left in this user's directory go at every start
		// (Load also reaps them, but only when a provider is loaded
		// again). Best effort: a directory Load would refuse is left
		// alone, and Load reports it when it matters.
		PersistentPreRun: func(*cobra.Command, []string) { dynsdt.Reap("") },
	}
	root.SetVersionTemplate("usdtkit {{.Version}}\n")
	// A flag the command does not know shows its usage, as bpftrace's
	// getopt errors do.
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		var (
			unknown *pflag.NotExistError
			bt      *bpftraceError
		)
		if errors.As(err, &bt) {
			// A value refused as bpftrace refuses it: its line alone.
			return bt
		}
		if !errors.As(err, &unknown) {
			return err
		}
		return &usageError{err: err, usage: c.UsageString()}
	})
	root.AddCommand(newListCmd())
	root.AddCommand(newTraceCmd())
	root.AddCommand(newDoctorCmd())
	root.AddCommand(newGenCmd())
	root.AddCommand(newLinkCmd())
	root.AddCommand(newToolexecCmd())
	root.AddCommand(newAgentCmd())
	return root
}

// userMessage turns an error into the one sentence a user acts on.
func userMessage(err error) string {
	var (
		argErr  *sdt.ArgError
		pathErr *fs.PathError
		fmtErr  *elfnotes.FormatError
	)
	switch {
	case errors.Is(err, os.ErrPermission) && errors.As(err, &pathErr):
		// A file or a process's mapping we may not open: say which.
		if strings.HasPrefix(pathErr.Path, "/proc/") {
			return fmt.Sprintf("%s %s: permission denied (other processes' mappings need CAP_SYS_ADMIN, or root)", pathErr.Op, pathErr.Path)
		}
		return fmt.Sprintf("%s %s: permission denied", pathErr.Op, pathErr.Path)
	case errors.Is(err, os.ErrPermission) && os.Geteuid() == 0:
		// Root refused: kernels before 5.11 charge BPF maps to
		// RLIMIT_MEMLOCK (cilium's "consider rlimit.RemoveMemlock"), or a
		// security module (lockdown, SELinux) says no.
		return "permission denied to root: on kernels before 5.11 raise the locked-memory limit (ulimit -l unlimited); otherwise a security module (lockdown, SELinux) refuses BPF"
	case errors.Is(err, os.ErrPermission):
		// The kernel refused a BPF call; the chain (cilium's MEMLOCK
		// hint among it) helps no one who is not root.
		return "permission denied: tracing needs root, or CAP_BPF and CAP_PERFMON"
	case errors.Is(err, elfnotes.ErrNotELF) && errors.As(err, &fmtErr):
		// The chain says which file ("PATH: bad magic number ..."); keep
		// that and say what the magic number means.
		what := strings.TrimSuffix(strings.TrimSuffix(err.Error(), fmtErr.Error()), ": ")
		return fmt.Sprintf("%s: not an ELF file (a script or data? name the program itself)", what)
	case errors.Is(err, ebpf.ErrNotSupported):
		return fmt.Sprintf("%v (this kernel lacks a feature usdtkit needs: run usdtkit doctor)", err)
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
