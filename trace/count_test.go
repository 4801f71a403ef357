package trace_test

import (
	"context"
	"io"
	"strings"
	"testing"

	"github.com/usdtkit/usdtkit/internal/testutil"
	"github.com/usdtkit/usdtkit/trace"
)

// TestCountExact counts hits with counting blocks (only count() into maps
// without keys or keyed by probe: no scratch, atomic adds, the cookie only
// where a block's sites are different probes) next to a general block
// counting into the same map, and reads every count exactly with
// Tracer.Maps: a site of its own (bench), three inlined sites of one probe
// (inl) among other probes, a probe that an empty action enables.
func TestCountExact(t *testing.T) {
	testutil.RequireBPF(t)
	bin := testutil.BuildTracee(t, "-O2")
	tc := testutil.StartTracee(t, bin)
	src := `usdt::tracee:bench { @ = count(); @n[probe] = count(); }
		usdt::tracee:bench /arg0 >= 0/ { @ = count(); }
		usdt::tracee:inl, usdt::tracee:fbench, usdt::tracee:str { @p[probe] = count(); }
		usdt::tracee:global { }`
	pids := []int{tc.PID()}
	prog, err := trace.Compile("count.bt", src, &trace.CompileOptions{PIDs: pids})
	if err != nil {
		t.Fatal(err)
	}
	tr, err := trace.Start(prog, &trace.Options{PIDs: pids, Stdout: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tr.Close() })
	done := make(chan error, 1)
	go func() { done <- tr.Run(context.Background()) }()
	tc.Do(t, "loop 1000")
	tc.Do(t, "floop 7")
	tc.Do(t, "run 5")
	maps, err := tr.Maps()
	if err != nil {
		t.Fatal(err)
	}
	have := map[string]uint64{}
	for _, m := range maps {
		if m.Kind != trace.MapCount {
			t.Errorf("%s: kind %v", m.Name, m.Kind)
		}
		for _, e := range m.Entries {
			name := m.Name
			if len(e.Key) == 1 {
				// The probe's name, "usdt:PATH:tracee:NAME".
				name += "[" + e.Key[0].Str[strings.LastIndex(e.Key[0].Str, ":")+1:] + "]"
			}
			have[name] = e.Value
		}
	}
	want := map[string]uint64{
		"@": 2000, "@n[bench]": 1000,
		"@p[inl]": 15, "@p[fbench]": 7, "@p[str]": 5,
	}
	if len(have) != len(want) {
		t.Errorf("have %v, want %v", have, want)
	}
	for k, v := range want {
		if have[k] != v {
			t.Errorf("%s = %d, want %d (all: %v)", k, have[k], v, have)
		}
	}
	tc.Quit(t)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
