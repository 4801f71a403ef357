package btgen

import (
	"github.com/cilium/ebpf/asm"

	"github.com/usdtkit/usdtkit/internal/lang/btlang"
)

// Counting blocks.
//
// A block of sites whose body only counts into array maps (@ = count(),
// @[probe] = count(), several of them, or nothing at all: an empty action
// that enables a probe) is the hot path of --count and of the commonest
// one-liners, and it needs none of the scratch value: no argument, no key
// built in memory, no string. Its program is only, per statement, the
// verifier-inlined per-CPU array lookup of the slot (0, or the probe's id)
// and an atomic add to it, then the slot's set flag: no helper call, no
// scratch lookup, no busy flag. The probe's id is a constant when every
// site is the same probe; otherwise the attach cookie (the site's index)
// chooses it through a binary tree over runs of equal ids, as the general
// prologue chooses fetch code.
//
// The add is atomic because uprobe programs can be preempted on their CPU:
// without the busy flag, a hit of another task on the same CPU may run
// between a load and a store of the slot. A general block counting into
// a map that a counting block also counts into adds atomically too (see
// gen.atomic), so neither loses the other's hit; maps only general blocks
// count into keep the plain add under the busy flag.
//
// The kernel's part of a hit (the breakpoint trap, finding the uprobe,
// uprobe_multi's run of the program) is the same for any program; with
// this one, a hit costs what it costs with an empty program attached the
// same way, within the noise of bench's BenchmarkProgramHit.

// countBlock returns the count() statements of block b when it can run as
// a counting block: a block of sites with no predicate, no variables and
// no event, whose statements are all @m = count() or @m[probe] = count()
// on array maps (maps gives each map's layout); ok is false otherwise.
func countBlock(b *btlang.ProbeBlock, maps []MapInfo, mapIdx map[*btlang.Map]int, hasEvent bool) (refs []*btlang.MapRef, ok bool) {
	if b.Pred != nil || len(b.Vars) > 0 || hasEvent {
		return nil, false
	}
	if kind, _, err := special(b); err != nil || kind != 0 {
		return nil, false
	}
	for _, s := range b.Body {
		a, ok := s.(*btlang.Assign)
		if !ok || a.Op != "=" {
			return nil, false
		}
		r, ok := a.Target.(*btlang.MapRef)
		if !ok || r.Map == nil || r.Map.Agg != btlang.AggCount {
			return nil, false
		}
		c, ok := a.Value.(*btlang.Call)
		if !ok || c.Name != "count" || len(c.Args) != 0 {
			return nil, false
		}
		i, ok := mapIdx[r.Map]
		if !ok || !maps[i].Array || len(r.Keys) != len(maps[i].Keys) {
			return nil, false
		}
		if len(r.Keys) == 1 {
			if k, ok := r.Keys[0].(*btlang.Builtin); !ok || k.Name != "probe" {
				return nil, false
			}
		}
		refs = append(refs, r)
	}
	return refs, true
}

// countProgram emits the program of a counting block (see countBlock):
// R8 holds the probe's id when a statement is keyed by probe.
func (g *gen) countProgram(refs []*btlang.MapRef) (asm.Instructions, error) {
	b := g.block
	if err := g.checkSites(); err != nil {
		return nil, err
	}
	usesProbe := false
	for _, r := range refs {
		usesProbe = usesProbe || len(r.Keys) > 0
	}
	if usesProbe {
		// The probe's id per site, and runs of sites with equal ids.
		type run struct{ lo, id int }
		var runs []run
		for i := range g.sites {
			id, err := g.siteProbeID(b, i)
			if err != nil {
				return nil, err
			}
			if n := len(runs); n == 0 || runs[n-1].id != id {
				runs = append(runs, run{lo: i, id: id})
			}
		}
		if len(runs) == 1 {
			g.emit(asm.Mov.Imm(asm.R8, int32(runs[0].id)))
		} else {
			g.emit(
				asm.FnGetAttachCookie.Call(),
				asm.Mov.Reg(asm.R8, asm.R0),
				asm.JGE.Imm(asm.R8, int32(len(g.sites)), "return"),
			)
			var tree func(rs []run)
			tree = func(rs []run) {
				if len(rs) == 1 {
					g.emit(asm.Mov.Imm(asm.R8, int32(rs[0].id)), asm.Ja.Label("body"))
					return
				}
				mid := len(rs) / 2
				right := g.newLabel("cookie_ge")
				g.emit(asm.JGE.Imm(asm.R8, int32(rs[mid].lo), right))
				tree(rs[:mid])
				g.label(right)
				tree(rs[mid:])
			}
			tree(runs)
			g.label("body")
		}
	}
	for _, r := range refs {
		mi := &g.out.Maps[g.mapIdx[r.Map]]
		missing, done := g.newLabel("noslot"), g.newLabel("counted")
		if len(r.Keys) == 0 {
			g.emit(asm.StoreImm(asm.R10, -8, 0, asm.Word))
		} else {
			g.emit(asm.StoreMem(asm.R10, -8, asm.R8, asm.Word))
		}
		g.emit(
			asm.LoadMapPtr(asm.R1, 0).WithReference(mi.BPF),
			asm.Mov.Reg(asm.R2, asm.R10),
			asm.Add.Imm(asm.R2, -8),
			asm.FnMapLookupElem.Call(),
			asm.JEq.Imm(asm.R0, 0, missing),
			asm.Mov.Imm(asm.R1, 1),
			asm.AddAtomic.Mem(asm.R0, asm.R1, asm.DWord, 0),
			storeImm64(asm.R0, int16(mi.SetOff), 1),
			asm.Ja.Label(done),
		)
		g.label(missing)
		g.lost(LostUpdates)
		g.label(done)
		g.emit(nop())
	}
	g.label("return")
	g.emit(asm.Mov.Imm(asm.R0, 0), asm.Return())
	return g.insns, nil
}
