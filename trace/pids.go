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

// listUSDT lists the probes opts selects in each process (opts.PID is
// ignored), or in the files.
func (r *resolver) listUSDT(opts *sdt.ListOptions) ([]sdt.Probe, error) {
	var all []sdt.Probe
	for _, pid := range r.pids {
		o := *opts
		o.PID = pid
		some, err := sdt.List(&o)
		if err != nil {
			return nil, err
		}
		all = append(all, some...)
	}
	return all, nil
}

// listFunctions lists the functions opts selects in each process
// (opts.PID is ignored), or in the files.
func (r *resolver) listFunctions(opts *uprobe.ListOptions) ([]uprobe.Function, error) {
	var all []uprobe.Function
	for _, pid := range r.pids {
		o := *opts
		o.PID = pid
		some, err := uprobe.Functions(&o)
		if err != nil {
			return nil, err
		}
		all = append(all, some...)
	}
	return all, nil
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
