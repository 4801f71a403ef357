package trace

import (
	"fmt"
	"slices"
)

// pids returns the processes Compile looks in: PID and PIDs, without
// repeats; [0] for none (files only).
func (o *CompileOptions) pids() ([]int, error) {
	return pidList("CompileOptions", o.PID, o.PIDs)
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
