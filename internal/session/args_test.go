package session

import (
	"errors"
	"testing"

	"github.com/usdtkit/usdtkit/internal/bpfgen"
)

func TestArgRefsCheck(t *testing.T) {
	tests := []struct {
		name string
		refs ArgRefs
		n    int
		want string // "" for no error
	}{
		{"none", ArgRefs{}, 0, ""},
		{"strings in range", ArgRefs{Strings: 0b111}, 3, ""},
		{"string past", ArgRefs{Strings: 1 << 5}, 3, "p:n has 3 arguments (arg0..arg2), no arg5 to read as a string: no such argument"},
		{"probe string past", ArgRefs{ProbeStrings: map[string]uint16{"p:n": 1 << 1}}, 1, "p:n has 1 argument (arg0), no arg1 to read as a string: no such argument"},
		{"other probe's string", ArgRefs{ProbeStrings: map[string]uint16{"p:m": 1 << 1}}, 1, ""},
		{"print past", ArgRefs{Prints: 1 << 2}, 0, "p:n has no arguments, no arg2 to print: no such argument"},
		{"filter past", ArgRefs{Filters: []bpfgen.Filter{{Arg: 0}, {Arg: 4}}}, 2, "p:n has 2 arguments (arg0..arg1), no arg4 to filter on: no such argument"},
		{"hist off", ArgRefs{Hist: 9}, 2, ""},
		{"hist past", ArgRefs{Hist: 9, HistOn: true}, 2, "p:n has 2 arguments (arg0..arg1), no arg9 to make a histogram of: no such argument"},
		{"all twelve", ArgRefs{Strings: 1 << 11}, 12, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.refs.Check("p:n", tt.n)
			if tt.want == "" {
				if err != nil {
					t.Errorf("Check = %v, want nil", err)
				}
				return
			}
			if err == nil || err.Error() != tt.want || !errors.Is(err, ErrNoArg) {
				t.Errorf("Check = %v, want %q wrapping ErrNoArg", err, tt.want)
			}
		})
	}
	r := ArgRefs{ProbePrints: map[string]uint16{"p:x": 1}}
	if err := r.CheckNames([]string{"p:n"}); err == nil || err.Error() != "p:x is not among the traced probes (p:n)" {
		t.Errorf("CheckNames = %v", err)
	}
	if err := r.CheckNames([]string{"p:n", "p:x"}); err != nil {
		t.Errorf("CheckNames with the probe traced = %v", err)
	}
}
