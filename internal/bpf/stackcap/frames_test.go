package stackcap_test

import (
	"slices"
	"testing"

	"github.com/usdtkit/usdtkit/internal/bpf/stackcap/stacktest"
	"github.com/usdtkit/usdtkit/internal/testutil"
)

// TestFramesAtEntry captures the frame-pointer stack at leaf's first
// instruction in chain.c built with frame pointers: with Entry the
// immediate caller (level3) is there; without it the kernel's walk skips
// it (leaf does not start with `push %rbp`, so no kernel adds it).
func TestFramesAtEntry(t *testing.T) {
	testutil.RequireBPF(t)
	exe := stacktest.BuildChain(t, "-O0", "-fno-omit-frame-pointer")
	for _, tc := range []struct {
		name  string
		entry bool
		want  []string
	}{
		{"entry", true, []string{"leaf", "level3", "level2", "level1", "main"}},
		{"plain", false, []string{"leaf", "level2", "level1", "main"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr := testutil.StartTracee(t, exe)
			p := stacktest.Attach(t, exe, "leaf", &stacktest.Options{Mode: stacktest.Frames, Entry: tc.entry, PID: tr.PID()})
			tr.Do(t, "levels")
			r := p.Next(t)
			n := stacktest.NewNamer(t, tr.PID())
			var have []string
			for _, pc := range r.Frames {
				have = append(have, n.Name(t, pc, exe))
			}
			t.Logf("frames: %v", have)
			if len(have) < len(tc.want) || !slices.Equal(have[:len(tc.want)], tc.want) {
				t.Fatalf("have %v, want prefix %v", have, tc.want)
			}
		})
	}
}
