package trace_test

import (
	"strings"
	"testing"

	"github.com/usdtkit/usdtkit/internal/bpf/stackcap/stacktest"
	"github.com/usdtkit/usdtkit/trace"
)

// TestCountsStacks: a program counts stacks when a map keyed by a stack
// has count(), sum() or integer values, what Tracer.Stacks returns.
func TestCountsStacks(t *testing.T) {
	bin := stacktest.BuildChain(t, "-O0", "-fno-omit-frame-pointer")
	for _, tt := range []struct {
		body string
		want bool
	}{
		{`@[ustack] = count();`, true},
		{`@[comm, ustack(3)] = sum(arg0);`, true},
		{`@[ustack(perf)] = 1;`, true},
		{`@[ustack] = hist(arg0);`, false},
		{`@[comm] = count();`, false},
		{`printf("%s\n", ustack);`, false},
	} {
		prog, err := trace.Compile("t.bt", strings.ReplaceAll("uprobe:BIN:leaf { "+tt.body+" }", "BIN", bin), nil)
		if err != nil {
			t.Fatalf("%s: %v", tt.body, err)
		}
		if have := prog.CountsStacks(); have != tt.want {
			t.Errorf("%s: CountsStacks %v, want %v", tt.body, have, tt.want)
		}
	}
	if (*trace.Program)(nil).CountsStacks() {
		t.Error("a nil Program counts stacks")
	}
}
