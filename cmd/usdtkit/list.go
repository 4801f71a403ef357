package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/usdtkit/usdtkit/sdt"
	"github.com/usdtkit/usdtkit/trace"
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
	f.VarP(&pidFlag{pid: &o.pid}, "pid", "p", "list the objects mapped by this process; a thread's ID means its process")
	f.BoolVarP(&o.verbose, "verbose", "v", false, "show locations, semaphores and parsed arguments")
	f.StringVarP(&o.output, "output", "o", "text", "output format: text or json (one object per line)")
	f.BoolVar(&o.symbols, "symbols", false, "list function symbols instead of USDT probes")
	return cmd
}

// listArgs are the positional arguments sorted by kind.
type listArgs struct {
	paths    []string
	usdt     []sdt.Selector
	patterns []string // usdt's selectors as given
	uprobes  []string
}

func parseListArgs(args []string) (listArgs, error) {
	var la listArgs
	for _, a := range args {
		switch {
		case trace.IsFunctionSelector(a):
			la.uprobes = append(la.uprobes, a)
		case strings.Contains(a, ":"):
			sel, err := sdt.ParseSelector(a)
			if err != nil {
				return la, err
			}
			la.usdt = append(la.usdt, sel)
			la.patterns = append(la.patterns, a)
		default:
			la.paths = append(la.paths, a)
		}
	}
	return la, nil
}

func runList(cmd *cobra.Command, o *listOptions, args []string) error {
	if o.output != "text" && o.output != "json" {
		return fmt.Errorf("--output %q: want text or json", o.output)
	}
	o.pid = processOf(o.pid, cmd.ErrOrStderr(), "listing")
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
	if len(probes) == 0 {
		// Like grep, and like trace: a pattern that selects nothing is a
		// failure a script can test (bpftrace -l and tplist exit 0
		// silently). A file with no probes at all is an answer: exit 0,
		// but say it.
		if len(la.usdt) > 0 {
			return fmt.Errorf("no probe matches %s", strings.Join(la.patterns, " "))
		}
		fmt.Fprintln(cmd.ErrOrStderr(), "usdtkit: no USDT probes found")
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
