package symbolize

import (
	"testing"

	"github.com/usdtkit/usdtkit/internal/testutil"
)

// TestInlineIndex checks the segments paint builds and innermost's
// answers against the definition: the deepest node whose ranges contain
// pc (of equal depths the later one), 0 where none does.
func TestInlineIndex(t *testing.T) {
	type r = [2]uint64
	tests := []struct {
		name   string
		ranges [][][2]uint64 // per node; node 0 the subprogram
		depth  []int
	}{
		{"none", [][][2]uint64{{{0x100, 0x200}}}, []int{0}},
		{"nested", [][][2]uint64{nil, {r{0x110, 0x180}}, {r{0x120, 0x130}}, {r{0x140, 0x150}}}, []int{0, 1, 2, 2}},
		{"siblings touching", [][][2]uint64{nil, {r{0x110, 0x120}}, {r{0x120, 0x130}}, {r{0x130, 0x131}}}, []int{0, 1, 1, 1}},
		{"several ranges", [][][2]uint64{nil, {r{0x110, 0x118}, r{0x150, 0x160}}, {r{0x112, 0x114}, r{0x158, 0x15a}}}, []int{0, 1, 2}},
		{"deep", [][][2]uint64{nil, {r{0x100, 0x1ff}}, {r{0x101, 0x1fe}}, {r{0x102, 0x1fd}}, {r{0x103, 0x104}}}, []int{0, 1, 2, 3, 4}},
		// Damaged DWARF: siblings overlap, a child outside its parent,
		// empty and inverted ranges.
		{"damaged", [][][2]uint64{nil, {r{0x110, 0x140}}, {r{0x130, 0x150}}, {r{0x200, 0x210}}, {r{0x300, 0x300}, r{0x320, 0x310}}}, []int{0, 1, 1, 2, 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tree := &inlTree{segs: paint(tt.ranges, tt.depth)}
			for i := 1; i < len(tree.segs); i++ {
				if tree.segs[i].lo <= tree.segs[i-1].lo || tree.segs[i].node == tree.segs[i-1].node {
					t.Fatalf("segments %v: not ascending, or not merged", tree.segs)
				}
			}
			for pc := uint64(0xf0); pc < 0x330; pc++ {
				want := 0
				for i := 1; i < len(tt.ranges); i++ {
					for _, rg := range tt.ranges[i] {
						if pc >= rg[0] && pc < rg[1] && tt.depth[i] >= tt.depth[want] {
							want = i
						}
					}
				}
				if have := tree.innermost(pc); have != want {
					t.Errorf("innermost(%#x) = %d, want %d (segments %v)", pc, have, want, tree.segs)
				}
			}
		})
	}
}

// TestDWARFOnDemand: a Symbolizer with NoDWARF does not read the DWARF of
// the objects it names; one that uses DWARF, sharing its Cache, reads it
// then and gets the inlined calls.
func TestDWARFOnDemand(t *testing.T) {
	testutil.RequireRoot(t)
	bin := buildC(t, "gcc", "inline.c", t.TempDir(), "inline", "-g", "-O2", "-no-pie")
	want, tr := addrs(t, bin)
	pc := want["ret"] - 1
	cache := &Cache{}
	nd := newSymbolizer(t, tr.PID(), &Options{NoDWARF: true, Cache: cache})
	if fr := nd.Frames([]uint64{pc}); len(fr) != 1 || fr[0].Inlined {
		t.Fatalf("NoDWARF: %+v, want one frame", fr)
	}
	for _, e := range cache.objs {
		if e.dwarf != nil {
			t.Fatalf("NoDWARF read the DWARF of %v", e.syms)
		}
	}
	s := newSymbolizer(t, tr.PID(), &Options{Cache: cache})
	if fr := s.Frames([]uint64{pc}); len(fr) != 3 || !fr[0].Inlined || !fr[1].Inlined || fr[2].Inlined {
		t.Errorf("with DWARF, sharing the cache: %+v, want two inlined calls and their function", fr)
	}
}
