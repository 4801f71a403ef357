package main

import (
	"bufio"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/usdtkit/usdtkit/internal/escape"
	"github.com/usdtkit/usdtkit/sdt"
	"github.com/usdtkit/usdtkit/trace"
	"github.com/usdtkit/usdtkit/uprobe"
)

// runTraceList is trace -l [SEARCH...]: the probes that match, one per
// line as bpftrace -l prints them (usdt:PATH:PROVIDER:NAME,
// uprobe:PATH:FUNC), sorted, each once; with -p, an object found in the
// process (PATH a glob or empty) is /proc/PID/root/PATH, as bpftrace's. A
// SEARCH matching nothing prints nothing, as bpftrace's. A SEARCH may list several,
// comma-separated; none means every USDT probe and function of -p's
// process. -v adds what usdtkit reads of each: USDT arguments' types and
// specs, Go functions' parameters. The probes are found as usdtkit list
// finds them (sdt.List, uprobe.List).
func runTraceList(cmd *cobra.Command, o *traceOptions, args []string) error {
	if cmd.Flags().Changed("program") {
		return fmt.Errorf("-l lists probes by SEARCH, not a program's probes yet: leave -e out")
	}
	if len(o.pids) > 1 {
		return fmt.Errorf("-l lists the probes of one process (-p PID), not %d", len(o.pids))
	}
	pid := 0
	if len(o.pids) == 1 {
		pid = processOf(o.pids[0], cmd.ErrOrStderr(), "listing")
	}
	var searches []string
	for _, a := range args {
		searches = append(searches, strings.Split(a, ",")...)
	}
	if len(searches) == 0 {
		if pid == 0 {
			return fmt.Errorf("-l: give a SEARCH such as 'usdt:/usr/bin/python3.11:*' or 'uprobe:libc:mall*', or a process with -p PID")
		}
		searches = []string{"usdt:*:*:*", "uprobe:*:*"}
	}
	for i, s := range searches {
		kind, rest, ok := strings.Cut(s, ":")
		if !ok {
			return fmt.Errorf("-l %q: want usdt:PATH:PROVIDER:NAME or uprobe:PATH:FUNC (globs; PATH * with -p)", s)
		}
		// bpftrace's usdt:GLOB and uprobe:GLOB: every probe of the
		// objects GLOB names.
		if !strings.Contains(rest, ":") {
			if trace.IsFunctionSelector(s) {
				searches[i] = s + ":*"
			} else if kind == "usdt" || kind == "U" {
				searches[i] = s + ":*:*"
			}
		}
	}
	warn := warnTo(cmd.ErrOrStderr())
	var lines []listLine
	for _, search := range searches {
		// Each search alone: bpftrace prints a path found in the process
		// (PATH a glob or empty) through /proc/PID/root, a path given as
		// it is.
		la, err := parseListArgs([]string{search})
		if err != nil {
			return err
		}
		for _, sel := range la.usdt {
			probes, err := sdt.List(&sdt.ListOptions{PID: pid, Selectors: []sdt.Selector{sel}, Warn: warn})
			if err != nil {
				return err
			}
			inProcess := pid != 0 && (sel.Path == "" || strings.ContainsAny(sel.Path, "*?["))
			for i := range probes {
				p := &probes[i]
				l := listLine{text: "usdt:" + bpftracePath(p.Path, p.PID, inProcess) + ":" + escape.Name(p.Provider) + ":" + escape.Name(p.Name)}
				if o.verbose {
					l.detail = usdtArgLines(p)
				}
				lines = append(lines, l)
			}
		}
		for _, s := range la.uprobes {
			sel, err := uprobe.ParseSelector(s)
			if err != nil {
				return err
			}
			objs, err := uprobe.List(&uprobe.ListOptions{PID: pid, Selectors: []uprobe.Selector{sel}, Warn: warn})
			if err != nil {
				return err
			}
			inProcess := pid != 0 && (sel.Path == "" || strings.ContainsAny(sel.Path, "*?["))
			for i := range objs {
				lines = append(lines, funcLines(&objs[i], inProcess, o.verbose)...)
			}
		}
	}
	return writeListLines(cmd, lines)
}

// listLine is one probe of trace -l, with -v's lines under it.
type listLine struct {
	text   string
	detail []string
}

// writeListLines prints lines sorted, each probe once (a probe of several
// objects or locations has one line, as in bpftrace).
func writeListLines(cmd *cobra.Command, lines []listLine) error {
	slices.SortStableFunc(lines, func(a, b listLine) int { return strings.Compare(a.text, b.text) })
	lines = slices.CompactFunc(lines, func(a, b listLine) bool { return a.text == b.text })
	w := bufio.NewWriter(cmd.OutOrStdout())
	for _, l := range lines {
		fmt.Fprintln(w, l.text)
		for _, d := range l.detail {
			fmt.Fprintln(w, "    "+d)
		}
	}
	return w.Flush()
}

// bpftracePath is an object's path as bpftrace -l prints it: through
// the process's /proc/PID/root when it was found in the process.
func bpftracePath(path string, pid int, inProcess bool) string {
	if inProcess && pid != 0 {
		return "/proc/" + strconv.Itoa(pid) + "/root" + escape.Name(path)
	}
	return escape.Name(path)
}

// usdtArgLines says what each argument of p is, in bpftrace's type names,
// with the specs of its locations: "int32 arg0 (-4@%eax)".
func usdtArgLines(p *sdt.Probe) []string {
	var lines []string
	for i := 0; ; i++ {
		var typ string
		var specs []string
		for j := range p.Locations {
			args := p.Locations[j].Args
			if i >= len(args) {
				continue
			}
			a := &args[i]
			if typ == "" {
				typ = usdtArgType(a)
			}
			if !slices.Contains(specs, a.Spec) {
				specs = append(specs, a.Spec)
			}
		}
		if typ == "" {
			return lines
		}
		lines = append(lines, typ+" arg"+strconv.Itoa(i)+" ("+strings.Join(specs, ", ")+")")
	}
}

// usdtArgType is the bpftrace type of an argument: int32, uint64…
func usdtArgType(a *sdt.Arg) string {
	if a.Err != nil {
		return "unreadable"
	}
	typ := "int" + strconv.Itoa(a.Size*8)
	if !a.Signed {
		typ = "u" + typ
	}
	return typ
}

// funcLines are the function symbols of obj as bpftrace -l prints them;
// verbose adds a Go function's parameters and results ("TYPE NAME", as
// bpftrace prints a function's arguments).
func funcLines(obj *uprobe.Object, inProcess, verbose bool) []listLine {
	sigs := map[string][]string{}
	if verbose && obj.Go {
		for name, sig := range goSignatures(obj) {
			var d []string
			for _, p := range sig.Params {
				d = append(d, p.Type+" "+p.Name)
			}
			for _, r := range sig.Results {
				d = append(d, r.Type+" "+r.Name+" (result)")
			}
			sigs[name] = d
		}
	}
	path := bpftracePath(obj.Path, obj.PID, inProcess)
	var lines []listLine
	for i := range obj.Symbols {
		s := &obj.Symbols[i]
		lines = append(lines, listLine{text: "uprobe:" + path + ":" + escape.Name(s.Name), detail: sigs[s.Name]})
	}
	return lines
}
