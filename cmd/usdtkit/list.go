package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/usdtkit/usdtkit/sdt"
)

type listOptions struct {
	pid     int
	verbose bool
	output  string
	symbols bool
}

func newListCmd() *cobra.Command {
	var o listOptions
	cmd := &cobra.Command{
		Use:   "list [PATH...] [-p PID] [PATTERN...]",
		Short: "List the USDT probes (or function symbols) of files, libraries or a process",
		Long: `List the USDT probes of files, libraries (by short name: libc, libstdc++,
libpython3.11) or every object a running process has mapped (-p PID).

PATTERN selects probes in bpftrace syntax, with globs:
  usdt:PATH:PROVIDER:NAME   usdt:*:python:function__*   PROVIDER:NAME
uprobe:PATH:FUNC patterns (or --symbols) list function symbols instead.
Arguments without a colon are paths or library short names.`,
		Example: `  usdtkit list /usr/bin/python3.11
  usdtkit list -v libstdc++
  usdtkit list -p 1234 'usdt:*:python:function__*'
  usdtkit list -o json usdt:/usr/bin/python3.11:python:gc__start
  usdtkit list 'uprobe:libc:mall*'`,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runList(cmd, &o, args)
		},
	}
	f := cmd.Flags()
	f.IntVarP(&o.pid, "pid", "p", 0, "list the objects mapped by this process")
	f.BoolVarP(&o.verbose, "verbose", "v", false, "show locations, semaphores and parsed arguments")
	f.StringVarP(&o.output, "output", "o", "text", "output format: text or json (one object per line)")
	f.BoolVar(&o.symbols, "symbols", false, "list function symbols instead of USDT probes")
	return cmd
}

// listArgs are the positional arguments sorted by kind.
type listArgs struct {
	paths   []string
	usdt    []sdt.Selector
	uprobes []string
}

func parseListArgs(args []string) (listArgs, error) {
	var la listArgs
	for _, a := range args {
		switch {
		case isUprobeSelector(a):
			la.uprobes = append(la.uprobes, a)
		case strings.Contains(a, ":"):
			sel, err := sdt.ParseSelector(a)
			if err != nil {
				return la, err
			}
			la.usdt = append(la.usdt, sel)
		default:
			la.paths = append(la.paths, a)
		}
	}
	return la, nil
}

func isUprobeSelector(s string) bool {
	for _, p := range []string{"uprobe:", "uretprobe:", "u:", "ur:"} {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}

func runList(cmd *cobra.Command, o *listOptions, args []string) error {
	if o.output != "text" && o.output != "json" {
		return fmt.Errorf("--output %q: want text or json", o.output)
	}
	if o.pid < 0 {
		return fmt.Errorf("--pid %d: want a process ID", o.pid)
	}
	la, err := parseListArgs(args)
	if err != nil {
		return err
	}
	if o.symbols || len(la.uprobes) > 0 {
		if len(la.usdt) > 0 {
			return fmt.Errorf("list either USDT probes or symbols, not both")
		}
		return listSymbols(cmd, o, la)
	}
	probes, err := sdt.List(&sdt.ListOptions{Paths: la.paths, PID: o.pid, Selectors: la.usdt, Warn: warnTo(cmd.ErrOrStderr())})
	if err != nil {
		return err
	}
	w := cmd.OutOrStdout()
	if o.output == "json" {
		return writeProbesJSON(w, probes)
	}
	return writeProbesText(w, probes, o.verbose)
}

// warnTo prints each warning of a listing (a process's object skipped) on
// one line of w.
func warnTo(w io.Writer) func(error) {
	return func(err error) { fmt.Fprintln(w, "usdtkit: warning:", err) }
}
