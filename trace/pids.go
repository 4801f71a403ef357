package trace

import (
	"fmt"
	"slices"

	"github.com/usdtkit/usdtkit/internal/lang/btlang"
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
		k := listKey{pid: pid, path: sel.Path}
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
	// named says that only the symbols of the functions the program names
	// in path are listed (see noteFunctionNames).
	named bool
}

// usdtList is a listing's outcome.
type usdtList struct {
	probes []sdt.Probe
	err    error
}

// listFunctions lists the functions sel selects in each process, or in
// the files its path names. As with listUSDT, the symbols of one path in
// one process (or of the files) are read once per Compile: a program may
// name many functions of one library. Where the program names functions
// of the path by name only (see noteFunctionNames), only their symbols
// are read, which spares sorting every symbol of a library such as libc.
func (r *resolver) listFunctions(sel uprobe.Selector, warn func(error)) ([]uprobe.Function, error) {
	sels := []uprobe.Selector{{Path: sel.Path}}
	names := r.funcNames[sel.Path]
	named := slices.Contains(names, sel.Func)
	if named {
		sels = sels[:0]
		for _, name := range names {
			sels = append(sels, uprobe.Selector{Path: sel.Path, Func: name})
		}
	}
	var all []uprobe.Function
	for _, pid := range r.pids {
		k := listKey{pid: pid, path: sel.Path, named: named}
		l, ok := r.symbolLists[k]
		if !ok {
			l.objs, l.err = uprobe.List(&uprobe.ListOptions{PID: pid, Warn: warn, Selectors: sels})
			r.symbolLists[k] = l
		}
		if l.err != nil {
			return nil, l.err
		}
		all = append(all, uprobe.FunctionsOf(l.objs, []uprobe.Selector{sel})...)
	}
	return all, nil
}

// noteFunctionNames notes, per path, the names of prog's function probes
// of that path when every one of them names functions by one name
// (uprobe.Selector.Literal), for listFunctions.
func (r *resolver) noteFunctionNames(prog *btlang.Program) {
	glob := make(map[string]bool)
	for _, b := range prog.Blocks {
		for _, p := range b.Probes {
			if p.Kind != btlang.ProbeUprobe && p.Kind != btlang.ProbeUretprobe {
				continue
			}
			path := r.probePath(p)
			switch {
			case glob[path]:
			case !(uprobe.Selector{Func: p.Name}).Literal():
				glob[path] = true
				delete(r.funcNames, path)
			case !slices.Contains(r.funcNames[path], p.Name):
				if r.funcNames == nil {
					r.funcNames = make(map[string][]string)
				}
				r.funcNames[path] = append(r.funcNames[path], p.Name)
			}
		}
	}
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
