package trace_test

import (
	"context"
	"strings"
	"testing"

	"github.com/usdtkit/usdtkit/internal/testutil"
	"github.com/usdtkit/usdtkit/trace"
)

// TestWarmThenStart warms, compiles and starts a program in the order
// usdtkit trace does, a second Warm joining the first: the program counts
// every hit of the tracee, and both warm-up channels close (TestMain then
// checks that the warm-up left no descriptor open).
func TestWarmThenStart(t *testing.T) {
	testutil.RequireBPF(t)
	bin := testutil.BuildTracee(t, "-O2", "-DTRACEE_NO_WIDE")
	tc := testutil.StartTracee(t, bin)
	first, second := trace.Warm(), trace.Warm()
	prog, err := trace.Compile("t.bt", "usdt:"+bin+":tracee:ints { @ = count(); }", &trace.CompileOptions{PID: tc.PID()})
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	tr, err := trace.Start(prog, &trace.Options{PID: tc.PID(), Stdout: &out})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tr.Close() })
	<-first
	<-second
	done := make(chan error, 1)
	go func() { done <- tr.Run(context.Background()) }()
	tc.Do(t, "run 3")
	tc.Quit(t)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if have, want := out.String(), "\n\n@: 3\n"; have != want {
		t.Errorf("have %q, want %q", have, want)
	}
}
