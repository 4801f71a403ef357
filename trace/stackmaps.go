package trace

import "github.com/usdtkit/usdtkit/internal/lang/btlang"

// CountsStacks reports whether the program has a map that Tracer.Stacks
// returns: one keyed by a stack (@[ustack] = count()) whose values are
// count(), sum() or integers. A caller that wants a flame graph checks
// it before Start.
func (p *Program) CountsStacks() bool {
	if p == nil || p.gen == nil {
		return false
	}
	for i := range p.gen.Maps {
		mi := &p.gen.Maps[i]
		stack := false
		for _, s := range mi.KeyStacks {
			stack = stack || s != nil
		}
		agg := mi.Map.Agg
		if stack && !mi.Array && (agg == btlang.AggCount || agg == btlang.AggSum || agg == btlang.AggNone && mi.Map.Value.Kind == btlang.KindInt) {
			return true
		}
	}
	return false
}
