package trace_test

import (
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/usdtkit/usdtkit/trace"
)

// FuzzCompileEvents compiles an EventProbe of a probe and a filter,
// seeded from testdata/events.txt (one "PROBE\tFILTER" per line): no
// panic, an error exactly when there is no program, and a CompileError
// always names a field of the probes, never the program CompileEvents
// writes.
func FuzzCompileEvents(f *testing.F) {
	b, err := os.ReadFile("testdata/events.txt")
	if err != nil {
		f.Fatal(err)
	}
	seeds := 0
	for line := range strings.Lines(string(b)) {
		probe, filter, _ := strings.Cut(strings.TrimSuffix(line, "\n"), "\t")
		f.Add(probe, filter)
		seeds++
	}
	if seeds == 0 {
		f.Fatal("no seeds in testdata/events.txt")
	}
	f.Fuzz(func(t *testing.T, probe, filter string) {
		prog, err := trace.CompileEvents([]trace.EventProbe{{Probe: probe, Filter: filter, Strings: []int{0}}}, nil)
		if (err == nil) != (prog != nil) {
			t.Fatalf("CompileEvents = %v, %v", prog, err)
		}
		var ce *trace.CompileError
		if errors.As(err, &ce) && !strings.HasPrefix(ce.File, "probes") {
			t.Fatalf("error %v in file %q", err, ce.File)
		}
	})
}
