package btrun

import (
	"slices"
	"testing"

	"github.com/usdtkit/usdtkit/internal/btgen"
	"github.com/usdtkit/usdtkit/internal/eventfmt"
)

// TestMergeStackKeys: entries whose keys print alike (stacks differing
// only in the frame that ustack(N) dropped to keep the caller) are one
// entry; the others are kept, and maps of other aggregations untouched.
func TestMergeStackKeys(t *testing.T) {
	stack := &btgen.StackInfo{Frames: 2, Map: "stacks2"}
	mi := &btgen.MapInfo{KeyStacks: []*btgen.StackInfo{stack, nil}}
	keys := []eventfmt.KeyField{{Kind: eventfmt.KeyStack}, {Kind: eventfmt.KeyString, Size: 16}}
	entries := func() []eventfmt.MapEntry {
		return []eventfmt.MapEntry{
			{Key: []eventfmt.Key{{Int: 7, Str: "\n    leaf+0\n    level3+21\n"}, {Str: "chain"}}, Value: 2},
			{Key: []eventfmt.Key{{Int: 3, Str: "\n    leaf+0\n    level3+21\n"}, {Str: "chain"}}, Value: 5},
			{Key: []eventfmt.Key{{Int: 4, Str: "\n    leaf+0\n    level3+21\n"}, {Str: "other"}}, Value: 1},
			{Key: []eventfmt.Key{{Int: 9, Str: "\n    leaf+0\n    cmp+44\n"}, {Str: "chain"}}, Value: 4},
		}
	}
	tests := []struct {
		agg  eventfmt.Agg
		want []uint64 // values in order
		ids  []int64
	}{
		{eventfmt.AggCount, []uint64{7, 1, 4}, []int64{3, 4, 9}},
		{eventfmt.AggSum, []uint64{7, 1, 4}, []int64{3, 4, 9}},
		{eventfmt.AggMax, []uint64{2, 5, 1, 4}, []int64{7, 3, 4, 9}},
	}
	for _, tt := range tests {
		m := &eventfmt.Map{Name: "@", Keys: keys, Agg: tt.agg, Entries: entries()}
		mergeStackKeys(mi, m)
		var got []uint64
		var ids []int64
		for _, e := range m.Entries {
			got = append(got, e.Value)
			ids = append(ids, e.Key[0].Int)
		}
		if !slices.Equal(got, tt.want) || !slices.Equal(ids, tt.ids) {
			t.Errorf("%v: values %v ids %v, want %v %v", tt.agg, got, ids, tt.want, tt.ids)
		}
	}
}
