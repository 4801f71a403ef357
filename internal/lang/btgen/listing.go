package btgen

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Listing returns the generated BPF as text: every map (type, key and
// value sizes, entries, flags), then every program (type, attach type) and
// its instructions as cilium/ebpf's asm formats them, both in name order.
// A special block's token, random per Generate, is named instead of
// printed, so the same program always lists the same.
func (p *Program) Listing() string {
	var b strings.Builder
	for _, name := range slices.Sorted(maps.Keys(p.Spec.Maps)) {
		m := p.Spec.Maps[name]
		fmt.Fprintf(&b, "map %s %v key %d value %d entries %d flags %#x\n", name, m.Type, m.KeySize, m.ValueSize, m.MaxEntries, m.Flags)
	}
	for _, name := range slices.Sorted(maps.Keys(p.Spec.Programs)) {
		s := p.Spec.Programs[name]
		fmt.Fprintf(&b, "program %s %v %v\n", name, s.Type, s.AttachType)
		fmt.Fprintf(&b, "%v", s.Instructions)
	}
	l := b.String()
	for i, blk := range p.Blocks {
		if blk.Token != 0 {
			l = strings.ReplaceAll(l, fmt.Sprintf("imm: %d\n", int64(blk.Token)), fmt.Sprintf("imm: <token of block %d>\n", i))
		}
	}
	return l
}
