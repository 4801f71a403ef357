package trace

import (
	"fmt"
	"slices"

	"github.com/usdtkit/usdtkit/sdt"
	"github.com/usdtkit/usdtkit/uprobe"
)

// pids returns the processes Compile looks in: PID and PIDs, without
// repeats; [0] for none (files only).
func (o *CompileOptions) pids() ([]int, error) {
	return pidList("CompileOptions", o.PID, o.PIDs)
}

// compilePIDs is opts.pids(), [0] for nil opts.
func compilePIDs(opts *CompileOptions) ([]int, error) {
	if opts == nil {
		return []int{0}, nil
	}
	return opts.pids()
}

// noProcess reports whether Compile looks in no process.
func (r *resolver) noProcess() bool {
	return len(r.pids) == 1 && r.pids[0] == 0
}

// listUSDT lists the probes sel selects in each process, or in the files
// its path names. The probes of one path in one process (or of the files)
// are listed once per Compile, as a program names several probes of the
// same objects: the process's maps are read, the objects opened and their
// notes parsed, and what is skipped warned about, once.
func (r *resolver) listUSDT(sel sdt.Selector, warn func(error)) ([]sdt.Probe, error) {
	var all []sdt.Probe
	for _, pid := range r.pids {
		k := listKey{pid, sel.Path}
		l, ok := r.usdtLists[k]
		if !ok {
			l.probes, l.err = sdt.List(&sdt.ListOptions{PID: pid, Warn: warn, Selectors: []sdt.Selector{{Path: sel.Path}}})
			r.usdtLists[k] = l
		}
		if l.err != nil {
			return nil, l.err
		}
		for _, p := range l.probes {
			if sel.MatchProbe(p.Provider, p.Name) {
				all = append(all, p)
			}
		}
	}
	return all, nil
}

// listKey is what a listing of a compile reads: the objects a path names
// in a process, or the files it names (pid 0).
type listKey struct {
	pid  int
	path string
}

// usdtList is a listing's outcome.
type usdtList struct {
	probes []sdt.Probe
	err    error
}

// listFunctions lists the functions sel selects in each process, or in
// the files its path names. As with listUSDT, the symbols of one path in
// one process (or of the files) are read once per Compile: a program may
// name many functions of one library.
func (r *resolver) listFunctions(sel uprobe.Selector, warn func(error)) ([]uprobe.Function, error) {
	var all []uprobe.Function
	for _, pid := range r.pids {
		k := listKey{pid, sel.Path}
		l, ok := r.symbolLists[k]
		if !ok {
			l.objs, l.err = uprobe.List(&uprobe.ListOptions{PID: pid, Warn: warn, Selectors: []uprobe.Selector{{Path: sel.Path}}})
			r.symbolLists[k] = l
		}
		if l.err != nil {
			return nil, l.err
		}
		all = append(all, uprobe.FunctionsOf(l.objs, []uprobe.Selector{sel})...)
	}
	return all, nil
}

// symbolList is a listing's outcome.
type symbolList struct {
	objs []uprobe.Object
	err  error
}

// pidList merges a PID field and a PIDs field.
func pidList(what string, pid int, list []int) ([]int, error) {
	var out []int
	for _, p := range append([]int{pid}, list...) {
		if p < 0 {
			return nil, fmt.Errorf("%s: PID %d", what, p)
		}
		if p != 0 && !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	if len(out) == 0 {
		out = []int{0}
	}
	return out, nil
}
