package main

import (
	"bufio"
	"fmt"
	"os"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/usdtkit/usdtkit/internal/elf/cparams"
	"github.com/usdtkit/usdtkit/internal/escape"
	"github.com/usdtkit/usdtkit/internal/lang/btlang"
	"github.com/usdtkit/usdtkit/internal/proc/procfs"
	"github.com/usdtkit/usdtkit/internal/proc/target"
	"github.com/usdtkit/usdtkit/sdt"
	"github.com/usdtkit/usdtkit/uprobe"
)

// runTraceList is trace -l [SEARCH...]: the probes that match, one per
// line as bpftrace -l prints them (usdt:PATH:PROVIDER:NAME,
// uprobe:PATH:FUNC), sorted, each once; with -p, an object found in the
// process (PATH a glob or empty) is /proc/PID/root/PATH, as bpftrace's. A
// SEARCH matching nothing prints nothing, as bpftrace's. A SEARCH may list several,
// comma-separated; none means, as in bpftrace, every USDT probe of -p's
// process and the functions of its executable. A type may be an alias
// (ur:) or a glob (*:PATH:*; see listSearches). -v adds what usdtkit reads of each: USDT arguments' types and
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
		searches = []string{"*:*"} // as bpftrace: the executable's functions, every USDT probe
	}
	var list []listSearch
	for _, s := range searches {
		ls, err := listSearches(s, pid)
		if err != nil {
			return err
		}
		list = append(list, ls...)
	}
	warn := warnTo(cmd.ErrOrStderr())
	var lines []listLine
	for _, search := range list {
		// Each search alone: bpftrace prints a path found in the process
		// (PATH a glob or empty, or the executable) through
		// /proc/PID/root, a path given as it is.
		la, err := parseListArgs([]string{search.text})
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
			inProcess := pid != 0 && (search.exe || sel.Path == "" || strings.ContainsAny(sel.Path, "*?["))
			for i := range objs {
				lines = append(lines, funcLines(&objs[i], search.kind, inProcess, o.verbose)...)
			}
		}
	}
	return writeListLines(cmd, lines)
}

// listSearch is one SEARCH of trace -l for one probe type.
type listSearch struct {
	text string // with the type's full name: uprobe:PATH:FUNC, usdt:PATH:PROVIDER:NAME
	kind string // uprobe, uretprobe or usdt: how its lines start
	exe  bool   // PATH is -p's executable, printed through /proc/PID/root
}

// listSearches reads one SEARCH of trace -l as bpftrace 0.17 does: a
// type's alias stands for its full name (ur: lists uretprobe: lines); a
// type with a wildcard lists each user-space type it matches whose
// search is complete (uprobe and usdt; bpftrace leaves the return
// probes out), when the search names a path with a "/" or a process;
// with -p, uprobe:FUNC lists the process's executable and usdt:NAME all
// of its objects.
func listSearches(s string, pid int) ([]listSearch, error) {
	name, rest, ok := strings.Cut(s, ":")
	if !ok {
		return nil, fmt.Errorf("-l %q: want usdt:PATH:PROVIDER:NAME or uprobe:PATH:FUNC (globs; PATH * with -p)", s)
	}
	if !strings.ContainsAny(name, "*?[") {
		kind, ok := btlang.LookupProbeKind(name)
		if !ok || (kind != btlang.ProbeUprobe && kind != btlang.ProbeUretprobe && kind != btlang.ProbeUSDT) {
			return nil, fmt.Errorf("-l %q: usdtkit lists user-space probes only: usdt, uprobe and uretprobe", s)
		}
		ls, err := listSearchOf(kind, rest, pid)
		if err != nil {
			return nil, fmt.Errorf("-l %q: %w", s, err)
		}
		return []listSearch{ls}, nil
	}
	if pid == 0 && !strings.Contains(strings.Split(rest, ":")[0], "/") {
		return nil, fmt.Errorf("-l %q: usdtkit lists user-space probes only; a probe type with a wildcard needs a path with a \"/\" or a process (-p PID)", s)
	}
	var list []listSearch
	for _, kind := range []btlang.ProbeKind{btlang.ProbeUprobe, btlang.ProbeUSDT} {
		if ok, err := path.Match(name, kind.String()); err != nil {
			return nil, fmt.Errorf("-l %q: probe type %q: %w", s, name, err)
		} else if !ok {
			continue
		}
		// As bpftrace: a type for which the search has the wrong
		// number of parts is left out.
		if ls, err := listSearchOf(kind, rest, pid); err == nil {
			list = append(list, ls)
		}
	}
	return list, nil
}

// listSearchOf is the search rest (after the type) for probes of kind.
func listSearchOf(kind btlang.ProbeKind, rest string, pid int) (listSearch, error) {
	ls := listSearch{kind: kind.String()}
	parts := strings.Count(rest, ":") + 1
	switch kind {
	case btlang.ProbeUSDT:
		switch parts {
		case 1: // usdt:GLOB: every probe of the objects GLOB names
			rest += ":*:*"
		case 2, 3:
		default:
			return ls, fmt.Errorf("want usdt:PATH:PROVIDER:NAME")
		}
		ls.text = "usdt:" + rest
	default:
		switch {
		case parts == 1 && pid != 0:
			exe, err := os.Readlink("/proc/" + strconv.Itoa(pid) + "/exe")
			if err != nil {
				return ls, fmt.Errorf("the executable of process %d: %w", pid, err)
			}
			rest, ls.exe = exe+":"+rest, true
		case parts == 1: // uprobe:GLOB: every function of the objects GLOB names
			rest += ":*"
		case parts > 2:
			return ls, fmt.Errorf("want %s:PATH:FUNC", kind)
		}
		// The selector's own type: uprobe.ParseSelector reads ret from it.
		ls.text = kind.String() + ":" + rest
	}
	return ls, nil
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
func funcLines(obj *uprobe.Object, kind string, inProcess, verbose bool) []listLine {
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
	if verbose && !obj.Go && kind == "uprobe" { // as bpftrace: not for uretprobe
		sigs = cParams(obj)
	}
	path := bpftracePath(obj.Path, obj.PID, inProcess)
	var lines []listLine
	for i := range obj.Symbols {
		s := &obj.Symbols[i]
		lines = append(lines, listLine{text: kind + ":" + path + ":" + escape.Name(s.Name), detail: sigs[s.Name]})
	}
	return lines
}

// cParams are the parameters of obj's C functions from its DWARF, as
// bpftrace 0.17's -lv prints them ("int argc"); none when obj has no
// DWARF or it cannot be read.
func cParams(obj *uprobe.Object) map[string][]string {
	f, err := target.Reopen(obj.Path, obj.PID, procfs.FileID{Dev: obj.Dev, Inode: obj.Inode})
	if err != nil {
		return nil
	}
	defer f.Close()
	params, err := cparams.Read(f)
	if err != nil {
		return nil
	}
	return params
}
