package session

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/usdtkit/usdtkit/internal/bpfgen"
)

// ErrNoArg is wrapped by ArgRefs.Check when an option reads an argument a
// probe does not have: the probe would print "<argN?>", read nothing as a
// string, or fail in the kernel's verifier.
var ErrNoArg = errors.New("no such argument")

// ArgRefs are the arguments a trace's options read, of every probe or of
// the probe a map's key names ("provider:name", "uprobe:FUNC").
type ArgRefs struct {
	// Strings are read as strings; Prints are printed.
	Strings, Prints           uint16
	ProbeStrings, ProbePrints map[string]uint16
	Filters                   []bpfgen.Filter
	// Hist is the histogram's argument when HistOn.
	Hist   int
	HistOn bool
}

// Check returns an error wrapping ErrNoArg when an argument r reads of the
// probe name is not among its n arguments.
func (r *ArgRefs) Check(name string, n int) error {
	missing := func(mask uint16) int {
		if n >= 16 || mask>>n == 0 {
			return -1
		}
		for i := n; i < 16; i++ {
			if mask&(1<<i) != 0 {
				return i
			}
		}
		return -1
	}
	fail := func(arg int, what string) error {
		return fmt.Errorf("%s has %s, no arg%d to %s: %w", name, argCount(n), arg, what, ErrNoArg)
	}
	if a := missing(r.Strings | r.ProbeStrings[name]); a >= 0 {
		return fail(a, "read as a string")
	}
	if a := missing(r.Prints | r.ProbePrints[name]); a >= 0 {
		return fail(a, "print")
	}
	for _, f := range r.Filters {
		if f.Arg >= n {
			return fail(f.Arg, "filter on")
		}
	}
	if r.HistOn && r.Hist >= n {
		return fail(r.Hist, "make a histogram of")
	}
	return nil
}

// CheckNames returns an error if a per-probe key of r names none of the
// traced probes: what it asks for would silently not happen.
func (r *ArgRefs) CheckNames(names []string) error {
	for _, m := range []map[string]uint16{r.ProbeStrings, r.ProbePrints} {
		for _, key := range slices.Sorted(maps.Keys(m)) {
			if !slices.Contains(names, key) {
				return fmt.Errorf("%s is not among the traced probes (%s)", key, strings.Join(names, ", "))
			}
		}
	}
	return nil
}

func argCount(n int) string {
	switch n {
	case 0:
		return "no arguments"
	case 1:
		return "1 argument (arg0)"
	}
	return fmt.Sprintf("%d arguments (arg0..arg%d)", n, n-1)
}
