package btgen_test

import (
	"testing"

	"github.com/cilium/ebpf"

	"github.com/usdtkit/usdtkit/internal/btgen"
	"github.com/usdtkit/usdtkit/internal/eventfmt"
	"github.com/usdtkit/usdtkit/internal/stackcap"
)

// TestStackLayout: stack keys are StackKeySize bytes referring to a stack
// map per frame count; printf'd stacks carry a copy (or, with a negative
// StackCopy, frames) and their sizes add up.
func TestStackLayout(t *testing.T) {
	src := `uprobe:/x:f { @[ustack, comm] = count(); @p[ustack(perf, 5)] = count(); printf("%s|%d\n", ustack(perf, 7), pid); }`
	tests := []struct {
		name      string
		stackCopy int
		argSize   int
	}{
		{"copy", 0, stackcap.CopySize(&stackcap.CopyOptions{Size: btgen.DefaultStackCopy}) + 16},
		{"copy 4096", 4096, stackcap.CopySize(&stackcap.CopyOptions{Size: 4096}) + 16},
		{"frames", -1, stackcap.FramesSize(&stackcap.FramesOptions{MaxFrames: 7}) + 8},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			prog, opts := compile(t, src)
			opts.StackCopy = tt.stackCopy
			out, err := btgen.Generate(prog, opts)
			if err != nil {
				t.Fatal(err)
			}
			m := out.Maps[0]
			if len(m.Keys) != 2 || m.Keys[0].Kind != eventfmt.KeyStack || m.KeyStacks[0] == nil || m.KeyStacks[1] != nil {
				t.Fatalf("@ keys %+v, stacks %+v", m.Keys, m.KeyStacks)
			}
			if m.KeyOffs[1] != btgen.StackKeySize || m.KeyStacks[0].Frames != 127 || m.KeyStacks[0].Perf {
				t.Errorf("@: comm at %d, stack %+v", m.KeyOffs[1], *m.KeyStacks[0])
			}
			p := out.Maps[1].KeyStacks[0]
			if p.Frames != 5 || !p.Perf || p.Map == m.KeyStacks[0].Map {
				t.Errorf("@p stack %+v", *p)
			}
			for _, s := range []*btgen.StackInfo{m.KeyStacks[0], p} {
				spec := out.Spec.Maps[s.Map]
				if spec == nil || spec.Type != ebpf.StackTrace || int(spec.ValueSize) != 8*s.Frames {
					t.Errorf("stack map %s: %+v", s.Map, spec)
				}
			}
			if out.Spec.Maps[btgen.MapStackPIDs] == nil {
				t.Error("no stackpids map")
			}
			a := out.Printfs[0].Args
			if len(a) != 2 || a[0].Stack == nil || a[0].Size != tt.argSize || a[0].Stack.Frames != 7 || !a[0].Stack.Perf {
				t.Fatalf("printf args %+v", a)
			}
			if a[1].Off < a[0].Off+a[0].Size || out.Printfs[0].Size < a[1].Off+8 {
				t.Errorf("pid at %d after a stack of %d bytes at %d; record %d bytes", a[1].Off, a[0].Size, a[0].Off, out.Printfs[0].Size)
			}
		})
	}
}
