package btgen

import (
	"slices"

	"github.com/cilium/ebpf/asm"

	"github.com/usdtkit/usdtkit/internal/lang/btlang"
	"github.com/usdtkit/usdtkit/internal/lang/layout"
	"github.com/usdtkit/usdtkit/internal/lang/printf"
)

// Flags of bpf_map_update_elem, bpf_ringbuf_output and bpf_ringbuf_query
// (include/uapi/linux/bpf.h).
const (
	bpfAny        = 0 // BPF_ANY
	bpfNoExist    = 1 // BPF_NOEXIST
	rbNoWakeup    = 1 // BPF_RB_NO_WAKEUP
	rbForceWakeup = 2 // BPF_RB_FORCE_WAKEUP
	rbAvailData   = 0 // BPF_RB_AVAIL_DATA
)

func (g *gen) stmts(list []btlang.Stmt) {
	for _, s := range list {
		g.stmt(s)
		if leaves(s) {
			// What follows is never run, and the verifier refuses
			// unreachable instructions.
			return
		}
	}
}

// leaves reports whether statement s always jumps away, so that what
// follows it in its list never runs: a return, break or continue, exit()
// (which ends its block as bpftrace's does), or an if whose branches both
// leave.
func leaves(s btlang.Stmt) bool {
	switch s := s.(type) {
	case *btlang.Return, *btlang.Break, *btlang.Continue:
		return true
	case *btlang.ExprStmt:
		return s.X.Name == "exit"
	case *btlang.If:
		return stmtsLeave(s.Then) && stmtsLeave(s.Else)
	case *btlang.Unroll:
		return stmtsLeave(s.Body)
	}
	return false
}

// stmtsLeave reports whether a statement of list always jumps away.
func stmtsLeave(list []btlang.Stmt) bool {
	return slices.ContainsFunc(list, leaves)
}

func (g *gen) stmt(s btlang.Stmt) {
	switch s := s.(type) {
	case *btlang.If:
		els, end := g.newLabel("else"), g.newLabel("endif")
		g.intExpr(s.Cond)
		g.emit(asm.JEq.Imm(asm.R0, 0, els))
		g.stmts(s.Then)
		thenReturns := stmtsLeave(s.Then)
		if !thenReturns {
			g.emit(asm.Ja.Label(end))
		}
		g.label(els)
		g.stmts(s.Else)
		if leaves(s) {
			// Both branches jump away: nothing follows.
			break
		}
		if !thenReturns {
			// Only a then that goes on jumps to end.
			g.label(end)
		}
		g.emit(nop())
	case *btlang.Return:
		// The action ends; an event block sends no event.
		g.emit(asm.Ja.Label("exit"))
	case *btlang.Unroll:
		for range s.N {
			g.stmts(s.Body)
			if stmtsLeave(s.Body) || g.err != nil {
				// A body emitted past the instruction limit stops
				// every enclosing unroll at once.
				break
			}
		}
	case *btlang.While:
		// The verifier follows the loop and accepts it when it sees it
		// end (Linux 5.3+), as for bpftrace's while.
		top, end := g.newLabel("while"), g.newLabel("endwhile")
		g.label(top)
		g.intExpr(s.Cond)
		g.emit(asm.JEq.Imm(asm.R0, 0, end))
		g.loops = append(g.loops, loopLabels{top: top, end: end})
		g.stmts(s.Body)
		g.loops = g.loops[:len(g.loops)-1]
		if !stmtsLeave(s.Body) {
			g.emit(asm.Ja.Label(top))
		}
		g.label(end)
		g.emit(nop())
	case *btlang.Break:
		g.emit(asm.Ja.Label(g.loops[len(g.loops)-1].end))
	case *btlang.Continue:
		g.emit(asm.Ja.Label(g.loops[len(g.loops)-1].top))
	case *btlang.Assign:
		g.assign(s)
	case *btlang.Let:
		g.let(s)
	case *btlang.IncDec:
		op := "+="
		if s.Op == "--" {
			op = "-="
		}
		g.assign(&btlang.Assign{At: s.At, Target: s.Target, Op: op, Value: &btlang.IntLit{ExprBase: btlang.ExprBase{At: s.At, T: btlang.Type{Kind: btlang.KindInt, Signed: true, Size: 8}}, Val: 1}})
	case *btlang.ExprStmt:
		g.call(s.X)
	default:
		g.fail(internal(s.Pos(), "this statement"))
	}
}

// let stores a declaration's value, or zeroes its variable, which a loop
// may have set in an earlier turn.
func (g *gen) let(s *btlang.Let) {
	if s.Init != nil {
		g.assign(&btlang.Assign{At: s.At, Target: s.Var, Op: "=", Value: s.Init})
		return
	}
	if s.Var.Decl.Type.Kind == btlang.KindNone {
		return
	}
	loc, ok := g.vars[s.Var.Decl]
	if !ok {
		g.fail(internal(s.At, "variable %s", s.Var.Name))
		return
	}
	if loc.size == 0 {
		g.emit(asm.Mov.Imm(asm.R0, 0), asm.StoreMem(asm.R10, loc.stack, asm.R0, asm.DWord))
		return
	}
	g.zero(loc.off, loc.size)
}

// compound returns the ALU operation of a compound assignment ("" for "=").
func compound(op string) (asm.ALUOp, bool) {
	if op == "=" {
		return 0, false
	}
	a, ok := aluOps[op[:len(op)-1]]
	return a, ok
}

func (g *gen) assign(s *btlang.Assign) {
	switch t := s.Target.(type) {
	case *btlang.Var:
		loc, ok := g.vars[t.Decl]
		if !ok {
			g.fail(internal(t.At, "variable %s", t.Name))
			return
		}
		if t.Decl.Type.Kind == btlang.KindString {
			if s.Op != "=" {
				g.fail(internal(s.At, "%s on a string", s.Op))
				return
			}
			src := g.strExpr(s.Value)
			g.copyStr(strBuf{off: loc.off, size: loc.size}, src)
			return
		}
		if t.Decl.Type.Kind == btlang.KindBuf {
			g.copyBuf(strBuf{off: loc.off, size: loc.size}, g.bufExpr(s.Value))
			return
		}
		if t.Decl.Type.Kind == btlang.KindTimestamp {
			g.copyBufTo(asm.R7, loc.off, TimestampSize, g.timeExpr(s.Value))
			return
		}
		if t.Decl.Type.Kind == btlang.KindTuple {
			if s.Op != "=" {
				g.fail(internal(s.At, "%s on a tuple", s.Op))
				return
			}
			g.copyTuple(tupleBuf{off: loc.off, t: t.Decl.Type}, g.tupleExpr(s.Value))
			return
		}
		if isValue(t.Decl.Type) {
			g.copyValue(strBuf{off: loc.off, size: loc.size}, g.valueBuf(s.Value))
			return
		}
		g.intExpr(s.Value)
		if _, ok := compound(s.Op); ok && t.Decl.Type.Kind == btlang.KindPtr {
			g.scale(asm.R0, ptrScale(t.Decl.Type))
		}
		if op, ok := compound(s.Op); ok {
			g.emit(
				asm.LoadMem(asm.R1, asm.R10, loc.stack, asm.DWord),
				op.Reg(asm.R1, asm.R0),
				asm.Mov.Reg(asm.R0, asm.R1),
			)
		} else if s.Op != "=" {
			g.fail(internal(s.At, "operator %s", s.Op))
		}
		g.emit(asm.StoreMem(asm.R10, loc.stack, asm.R0, asm.DWord))
	case *btlang.MapRef:
		m := t.Map
		if m == nil {
			g.fail(internal(t.At, "this map"))
			return
		}
		if m.Agg != btlang.AggNone {
			call, ok := s.Value.(*btlang.Call)
			if !ok {
				g.fail(internal(s.At, "this aggregation"))
				return
			}
			g.aggregate(t, call)
			return
		}
		mi := &g.out.Maps[g.mapIdx[m]]
		if m.Value.Kind == btlang.KindUsym {
			val := g.alloc(mi.ValueSize)
			if r, ok := s.Value.(*btlang.MapRef); ok {
				g.copyMapValue(r, val, 16)
			} else {
				g.usymAt(s.Value, val)
			}
			if mi.Array {
				g.emit(storeImm64(asm.R7, int16(val+mi.SetOff), 1))
			}
			key := g.key(t, mi)
			g.update(mi, key, asm.R7, int32(val))
			return
		}
		if m.Value.Kind == btlang.KindBuf || m.Value.Kind == btlang.KindTimestamp {
			val := g.alloc(mi.ValueSize)
			if m.Value.Kind == btlang.KindBuf {
				g.copyBuf(strBuf{off: val, size: BufSize(m.Value)}, g.bufExpr(s.Value))
			} else {
				g.copyBufTo(asm.R7, val, TimestampSize, g.timeExpr(s.Value))
			}
			if mi.Array {
				g.emit(storeImm64(asm.R7, int16(val+mi.SetOff), 1))
			}
			key := g.key(t, mi)
			g.update(mi, key, asm.R7, int32(val))
			return
		}
		if m.Value.Kind == btlang.KindTuple {
			if s.Op != "=" {
				g.fail(internal(s.At, "%s on a tuple", s.Op))
				return
			}
			val := tupleBuf{off: g.alloc(mi.ValueSize), t: m.Value}
			g.copyTuple(val, g.tupleExpr(s.Value))
			if mi.Array {
				g.emit(storeImm64(asm.R7, int16(val.off+mi.SetOff), 1))
			}
			key := g.key(t, mi)
			g.update(mi, key, asm.R7, int32(val.off))
			return
		}
		if m.Value.Kind == btlang.KindString {
			if s.Op != "=" {
				g.fail(internal(s.At, "%s on a string", s.Op))
				return
			}
			src := g.strExpr(s.Value)
			val := strBuf{off: g.alloc(mi.ValueSize), size: m.Value.Size}
			g.copyStr(val, src)
			if mi.Array {
				g.emit(storeImm64(asm.R7, int16(val.off+mi.SetOff), 1))
			}
			key := g.key(t, mi)
			g.update(mi, key, asm.R7, int32(val.off))
			return
		}
		if isValue(m.Value) {
			src := g.valueBuf(s.Value)
			val := strBuf{off: g.alloc(mi.ValueSize), size: btlang.CSize(m.Value)}
			g.zero(val.off, mi.ValueSize)
			g.copyBytes(asm.R7, src.off, asm.R7, val.off, round8(val.size))
			if mi.Array {
				g.emit(storeImm64(asm.R7, int16(val.off+mi.SetOff), 1))
			}
			key := g.key(t, mi)
			g.update(mi, key, asm.R7, int32(val.off))
			return
		}
		if mi.ValueName {
			if s.Op != "=" {
				g.fail(internal(s.At, "%s on a %s", s.Op, m.Value))
				return
			}
			g.nameID(s.Value)
		} else {
			g.intExpr(s.Value)
			if _, ok := compound(s.Op); ok && m.Value.Kind == btlang.KindPtr {
				g.scale(asm.R0, ptrScale(m.Value))
			}
		}
		slot := g.push()
		defer g.pop()
		g.emit(asm.StoreMem(asm.R10, slot, asm.R0, asm.DWord))
		key := g.key(t, mi)
		if op, ok := compound(s.Op); ok {
			g.lookupOrZero(mi, key)
			g.emit(
				asm.LoadMem(asm.R1, asm.R10, slot, asm.DWord),
				op.Reg(asm.R0, asm.R1),
				asm.StoreMem(asm.R10, slot, asm.R0, asm.DWord),
			)
		} else if s.Op != "=" {
			g.fail(internal(s.At, "operator %s", s.Op))
		}
		if mi.Array {
			val := g.alloc(mi.ValueSize)
			g.emit(
				asm.LoadMem(asm.R0, asm.R10, slot, asm.DWord),
				asm.StoreMem(asm.R7, int16(val), asm.R0, asm.DWord),
				storeImm64(asm.R7, int16(val+mi.SetOff), 1),
			)
			g.update(mi, key, asm.R7, int32(val))
			return
		}
		g.update(mi, key, asm.R10, int32(slot))
	default:
		g.fail(internal(s.At, "assigning to this"))
	}
}

// incDec emits e, ++ or -- as an expression: R0 is the value before
// (postfix) or after (prefix).
func (g *gen) incDec(e *btlang.IncDecExpr) {
	// A pointer steps by the size of what it points to, as in C.
	delta := int32(ptrScale(e.Target.Type()))
	if e.Op == "--" {
		delta = -1
	}
	switch t := e.Target.(type) {
	case *btlang.Var:
		loc, ok := g.vars[t.Decl]
		if !ok {
			g.fail(internal(t.At, "variable %s", t.Name))
			return
		}
		g.emit(
			asm.LoadMem(asm.R0, asm.R10, loc.stack, asm.DWord),
			asm.Mov.Reg(asm.R1, asm.R0),
			asm.Add.Imm(asm.R1, delta),
			asm.StoreMem(asm.R10, loc.stack, asm.R1, asm.DWord),
		)
		if e.Prefix {
			g.emit(asm.Mov.Reg(asm.R0, asm.R1))
		}
	case *btlang.MapRef:
		m := t.Map
		if m == nil || m.Agg != btlang.AggNone || m.Value.Kind != btlang.KindInt && m.Value.Kind != btlang.KindPtr {
			g.fail(internal(t.At, "%s of %s", e.Op, t.Name))
			return
		}
		mi := &g.out.Maps[g.mapIdx[m]]
		key := g.key(t, mi)
		val := g.alloc(mi.ValueSize)
		slot := g.push()
		defer g.pop()
		g.lookupOrZero(mi, key)
		g.emit(
			asm.StoreMem(asm.R10, slot, asm.R0, asm.DWord),
			asm.Add.Imm(asm.R0, delta),
			asm.StoreMem(asm.R7, int16(val), asm.R0, asm.DWord),
		)
		if mi.Array {
			g.emit(storeImm64(asm.R7, int16(val+mi.SetOff), 1))
		}
		g.update(mi, key, asm.R7, int32(val))
		if e.Prefix {
			g.emit(asm.LoadMem(asm.R0, asm.R7, int16(val), asm.DWord))
		} else {
			g.emit(asm.LoadMem(asm.R0, asm.R10, slot, asm.DWord))
		}
	default:
		g.fail(internal(e.At, "%s of this", e.Op))
	}
}

// copyMapValue copies the first n bytes of r's value to scratch off,
// zeros for an absent key.
func (g *gen) copyMapValue(r *btlang.MapRef, off, n int) {
	if r.Map == nil || r.Map.Agg != btlang.AggNone {
		g.fail(internal(r.At, "reading %s here", r.Name))
		return
	}
	mi := &g.out.Maps[g.mapIdx[r.Map]]
	g.copyKeyValue(mi, g.key(r, mi), off, n, "value")
}

// copyKeyValue copies the first n bytes of the value of key (scratch
// offset) in mi to scratch off, zeros for an absent key; what names the
// labels ("no"+what where it is absent, what after).
func (g *gen) copyKeyValue(mi *MapInfo, key, off, n int, what string) {
	absent, end := g.newLabel("no"+what), g.newLabel(what)
	g.lookup(mi, key)
	g.emit(asm.JEq.Imm(asm.R0, 0, absent))
	for k := 0; k < n; k += 8 {
		g.emit(asm.LoadMem(asm.R1, asm.R0, int16(k), asm.DWord), asm.StoreMem(asm.R7, int16(off+k), asm.R1, asm.DWord))
	}
	g.emit(asm.Ja.Label(end))
	g.label(absent)
	g.zero(off, n)
	g.label(end)
	g.emit(nop())
}

// key builds r's key for map mi in scratch and returns its offset.
func (g *gen) key(r *btlang.MapRef, mi *MapInfo) int {
	off := g.alloc(mi.KeySize)
	g.keyAt(r, mi, off)
	return off
}

// nameID loads into R0 the name id (Program.Probes) of e, the probe or
// func builtin (the site's values, fetched with its arguments) or a map
// holding one (0 for an absent key).
func (g *gen) nameID(e btlang.Expr) {
	if r, ok := e.(*btlang.MapRef); ok {
		if r.Map == nil || r.Map.Agg != btlang.AggNone {
			g.fail(internal(r.At, "reading %s here", r.Name))
			return
		}
		mi := &g.out.Maps[g.mapIdx[r.Map]]
		g.lookupOrZero(mi, g.key(r, mi))
		return
	}
	if b, ok := e.(*btlang.Builtin); ok && b.Name == "func" && g.funcOff >= 0 {
		g.emit(asm.LoadMem(asm.R0, asm.R7, int16(g.funcOff), asm.DWord))
		return
	}
	g.emit(asm.LoadMem(asm.R0, asm.R7, probeOff, asm.DWord))
}

// keyAt builds r's key for map mi in scratch at off. A stack field of a
// map counted in user space (MapInfo.User) is zeros: its record carries
// the stack (keyrec.go).
func (g *gen) keyAt(r *btlang.MapRef, mi *MapInfo, off int) {
	if mi.Array {
		// A u32 index: 0, or the probe's id.
		if len(mi.Keys) == 0 {
			g.emit(asm.StoreImm(asm.R7, int16(off), 0, asm.Word))
		} else {
			g.emit(asm.LoadMem(asm.R0, asm.R7, probeOff, asm.DWord), asm.StoreMem(asm.R7, int16(off), asm.R0, asm.Word))
		}
		return
	}
	if len(r.Keys) == 0 {
		g.emit(storeImm64(asm.R7, int16(off), 0))
		return
	}
	if len(r.Keys) != len(mi.Keys) {
		g.fail(internal(r.At, "a key of %d fields for %s", len(r.Keys), r.Name))
		return
	}
	for i, k := range r.Keys {
		f := off + mi.KeyOffs[i]
		switch {
		case mi.KeyProbe[i]:
			g.nameID(k)
			g.emit(asm.StoreMem(asm.R7, int16(f), asm.R0, asm.DWord))
		case i < len(mi.KeyUsym) && mi.KeyUsym[i]:
			if mi.User {
				g.fail(internal(k.Pos(), "a usym() key with stacks unwound with CFI (--unwind cfi)"))
				return
			}
			g.usymAt(k, f)
		case i < len(mi.KeyBuf) && mi.KeyBuf[i]:
			g.copyBuf(strBuf{off: f, size: mi.Keys[i].Size}, g.bufExpr(k))
		case i < len(mi.KeyTime) && mi.KeyTime[i]:
			g.copyBufTo(asm.R7, f, TimestampSize, g.timeExpr(k))
		case mi.Keys[i].Kind == layout.KeyInt:
			g.intExpr(k)
			g.emit(asm.StoreMem(asm.R7, int16(f), asm.R0, asm.DWord))
		case mi.Keys[i].Kind == layout.KeyString:
			src := g.strExpr(k)
			g.copyStr(strBuf{off: f, size: mi.Keys[i].Size}, src)
		case mi.Keys[i].Kind == layout.KeyValue:
			src := g.valueBuf(k)
			g.copyBytes(asm.R7, src.off, asm.R7, f, round8(mi.Keys[i].Size))
		case mi.KeyStacks[i] != nil && mi.User:
			g.zero(f, StackKeySize)
		case mi.KeyStacks[i] != nil:
			g.stackKey(f, mi.KeyStacks[i])
		}
	}
}

// lookup leaves in R0 the value of key (scratch offset) in mi, or 0.
func (g *gen) lookup(mi *MapInfo, key int) {
	g.emit(
		asm.LoadMapPtr(asm.R1, 0).WithReference(mi.BPF),
		asm.Mov.Reg(asm.R2, asm.R7),
		asm.Add.Imm(asm.R2, int32(key)),
		asm.FnMapLookupElem.Call(),
	)
}

// lookupOrZero leaves in R0 the integer value of key in mi, 0 if absent.
func (g *gen) lookupOrZero(mi *MapInfo, key int) {
	none := g.newLabel("nokey")
	g.lookup(mi, key)
	g.emit(
		asm.JEq.Imm(asm.R0, 0, none),
		asm.LoadMem(asm.R0, asm.R0, 0, asm.DWord),
	)
	g.label(none)
	g.emit(nop())
}

// update stores the value at base+off under key in mi; a failure (a full
// map) is counted in lost[LostUpdates].
func (g *gen) update(mi *MapInfo, key int, base asm.Register, off int32) {
	ok := g.newLabel("updated")
	g.emit(
		asm.LoadMapPtr(asm.R1, 0).WithReference(mi.BPF),
		asm.Mov.Reg(asm.R2, asm.R7),
		asm.Add.Imm(asm.R2, int32(key)),
		asm.Mov.Reg(asm.R3, base),
		asm.Add.Imm(asm.R3, off),
		asm.Mov.Imm(asm.R4, bpfAny),
		asm.FnMapUpdateElem.Call(),
		asm.JSGE.Imm(asm.R0, 0, ok),
	)
	g.lost(LostUpdates)
	g.label(ok)
	g.emit(nop())
}

// lookupAt looks up the u32 key in map m (the key at R10-4): R0 is the
// value, or 0.
func (g *gen) lookupAt(m string, key int32) {
	g.emit(asm.StoreImm(asm.R10, -4, int64(key), asm.Word))
	g.lookupStored(m)
}

// lookupStored looks up in map m the u32 key stored at R10-4.
func (g *gen) lookupStored(m string) {
	g.emit(
		asm.LoadMapPtr(asm.R1, 0).WithReference(m),
		asm.Mov.Reg(asm.R2, asm.R10),
		asm.Add.Imm(asm.R2, -4),
		asm.FnMapLookupElem.Call(),
	)
}

// lost adds one to lost[idx].
func (g *gen) lost(idx int) {
	skip := g.newLabel("nolost")
	g.lookupAt(MapLost, int32(idx))
	g.emit(
		asm.JEq.Imm(asm.R0, 0, skip),
		asm.LoadMem(asm.R1, asm.R0, 0, asm.DWord),
		asm.Add.Imm(asm.R1, 1),
		asm.StoreMem(asm.R0, 0, asm.R1, asm.DWord),
	)
	g.label(skip)
	g.emit(nop())
}

func (g *gen) mapReadInt(r *btlang.MapRef) {
	if r.Map == nil || r.Map.Agg != btlang.AggNone || r.Map.Value.Kind != btlang.KindInt && r.Map.Value.Kind != btlang.KindPtr {
		g.fail(internal(r.At, "reading %s here", r.Name))
		return
	}
	mi := &g.out.Maps[g.mapIdx[r.Map]]
	key := g.key(r, mi)
	g.lookupOrZero(mi, key)
}

func (g *gen) mapReadStr(r *btlang.MapRef) strBuf {
	b := strBuf{off: zeroOff, size: 8}
	if r.Map == nil || r.Map.Agg != btlang.AggNone || r.Map.Value.Kind != btlang.KindString {
		g.fail(internal(r.At, "reading %s here", r.Name))
		return b
	}
	mi := &g.out.Maps[g.mapIdx[r.Map]]
	key := g.key(r, mi)
	b = strBuf{off: g.alloc(r.Map.Value.Size), size: r.Map.Value.Size}
	none, end := g.newLabel("nostr"), g.newLabel("str")
	g.lookup(mi, key)
	g.emit(asm.JEq.Imm(asm.R0, 0, none))
	g.copyStrFrom(asm.R0, 0, r.Map.Value.Size, asm.R7, b.off, b.size)
	g.emit(asm.Ja.Label(end))
	g.label(none)
	g.zero(b.off, b.size)
	g.label(end)
	g.emit(nop())
	return b
}

// aggregate emits @m[k] = agg(x).
func (g *gen) aggregate(r *btlang.MapRef, call *btlang.Call) {
	m := r.Map
	mi := &g.out.Maps[g.mapIdx[m]]
	if mi.User {
		g.keyRecord(r, call, mi)
		return
	}
	slot := g.push()
	defer g.pop()
	if m.Agg != btlang.AggCount {
		if len(call.Args) == 0 {
			g.fail(internal(call.At, "%s() without a value", call.Name))
			return
		}
		g.intExpr(call.Args[0])
		g.emit(asm.StoreMem(asm.R10, slot, asm.R0, asm.DWord))
	}
	key := g.key(r, mi)
	// Per-CPU value: look up, insert zeros if absent, look up again. An
	// array's slot always exists (the verifier inlines its lookup).
	found, done := g.newLabel("found"), g.newLabel("aggdone")
	g.slotCount(mi, key, done)
	g.lookup(mi, key)
	g.emit(asm.JNE.Imm(asm.R0, 0, found))
	if !mi.Array {
		g.emit(
			asm.LoadMapPtr(asm.R1, 0).WithReference(mi.BPF),
			asm.Mov.Reg(asm.R2, asm.R7),
			asm.Add.Imm(asm.R2, int32(key)),
			asm.Mov.Reg(asm.R3, asm.R7),
			asm.Add.Imm(asm.R3, zeroOff),
			asm.Mov.Imm(asm.R4, bpfNoExist),
			asm.FnMapUpdateElem.Call(),
		)
		g.lookup(mi, key)
		g.emit(asm.JNE.Imm(asm.R0, 0, found))
	}
	g.lost(LostUpdates)
	g.emit(asm.Ja.Label(done))
	g.label(found)
	// R0: this CPU's value. R1: x.
	if mi.Array {
		g.emit(storeImm64(asm.R0, int16(mi.SetOff), 1))
	}
	g.emit(asm.LoadMem(asm.R1, asm.R10, slot, asm.DWord))
	switch m.Agg {
	case btlang.AggCount:
		if g.atomic[m] {
			// A counting block adds to it without the busy flag.
			g.emit(asm.Mov.Imm(asm.R1, 1), asm.AddAtomic.Mem(asm.R0, asm.R1, asm.DWord, 0))
			break
		}
		g.addAt(0, 1)
	case btlang.AggSum:
		g.emit(asm.LoadMem(asm.R2, asm.R0, 0, asm.DWord), asm.Add.Reg(asm.R2, asm.R1), asm.StoreMem(asm.R0, 0, asm.R2, asm.DWord))
	case btlang.AggAvg, btlang.AggStats:
		g.addAt(0, 1)
		g.emit(asm.LoadMem(asm.R2, asm.R0, 8, asm.DWord), asm.Add.Reg(asm.R2, asm.R1), asm.StoreMem(asm.R0, 8, asm.R2, asm.DWord))
	case btlang.AggMin, btlang.AggMax:
		set := g.newLabel("set")
		keep := g.newLabel("keep")
		// Replace when unset or when x is smaller (min) / larger (max),
		// compared signed as btprint reads the values.
		op := asm.JSGE
		if m.Agg == btlang.AggMax {
			op = asm.JSLE
		}
		g.emit(
			asm.LoadMem(asm.R2, asm.R0, 8, asm.DWord),
			asm.JEq.Imm(asm.R2, 0, set),
			asm.LoadMem(asm.R2, asm.R0, 0, asm.DWord),
			op.Reg(asm.R1, asm.R2, keep),
		)
		g.label(set)
		g.emit(asm.StoreMem(asm.R0, 0, asm.R1, asm.DWord), storeImm64(asm.R0, 8, 1))
		g.label(keep)
		g.emit(nop())
	case btlang.AggHist:
		g.emit(asm.Mov.Reg(asm.R8, asm.R0))
		g.histIndex()
		g.bucketAdd(mi.Buckets)
	case btlang.AggLhist:
		g.emit(asm.Mov.Reg(asm.R8, asm.R0))
		g.lhistIndex(m)
		g.bucketAdd(mi.Buckets)
	default:
		g.fail(internal(call.At, "%s()", call.Name))
	}
	g.label(done)
	g.emit(nop())
}

// addAt adds v to the u64 at R0+off.
func (g *gen) addAt(off int16, v int32) {
	g.emit(asm.LoadMem(asm.R2, asm.R0, off, asm.DWord), asm.Add.Imm(asm.R2, v), asm.StoreMem(asm.R0, off, asm.R2, asm.DWord))
}

// histIndex leaves in R0 layout.HistIndex(R1): 0 below zero, 1 for 0,
// 2+floor(log2(x)) above, unrolled as bpftrace's log2 function, which
// compares signed whatever the value's type (a uint64 argN of -5 counts in
// "(..., 0)" there).
func (g *gen) histIndex() {
	out := g.newLabel("bucket")
	g.emit(asm.Mov.Imm(asm.R0, 0), asm.JSLT.Imm(asm.R1, 0, out))
	g.emit(asm.Mov.Imm(asm.R0, 1), asm.JEq.Imm(asm.R1, 0, out), asm.Mov.Imm(asm.R0, 2))
	for _, sh := range []int32{32, 16, 8, 4, 2, 1} {
		skip := g.newLabel("log2")
		g.emit(
			asm.Mov.Reg(asm.R2, asm.R1),
			asm.RSh.Imm(asm.R2, sh),
			asm.JEq.Imm(asm.R2, 0, skip),
			asm.Mov.Reg(asm.R1, asm.R2),
			asm.Add.Imm(asm.R0, sh),
		)
		g.label(skip)
	}
	g.label(out)
	g.emit(nop())
}

// lhistIndex leaves in R0 LinearRange.Index(R1) for m's range.
func (g *gen) lhistIndex(m *btlang.Map) {
	r := layout.LinearRange{Min: m.LhistMin, Max: m.LhistMax, Step: m.LhistStep}
	out := g.newLabel("lbucket")
	g.loadConst(asm.R2, r.Min)
	g.emit(asm.Mov.Imm(asm.R0, 0), asm.JSLT.Reg(asm.R1, asm.R2, out))
	g.loadConst(asm.R3, r.Max)
	g.emit(asm.Mov.Imm(asm.R0, int32(r.Buckets()-1)), asm.JSGE.Reg(asm.R1, asm.R3, out))
	g.loadConst(asm.R3, r.Step)
	g.emit(
		asm.Mov.Reg(asm.R0, asm.R1),
		asm.Sub.Reg(asm.R0, asm.R2),
		asm.Div.Reg(asm.R0, asm.R3),
		asm.Add.Imm(asm.R0, 1),
	)
	g.label(out)
	g.emit(nop())
}

// bucketAdd adds one to bucket R0 (clamped to n-1) of the value in R8.
func (g *gen) bucketAdd(n int) {
	ok := g.newLabel("inrange")
	g.emit(
		asm.JLE.Imm(asm.R0, int32(n-1), ok),
		asm.Mov.Imm(asm.R0, int32(n-1)),
	)
	g.label(ok)
	g.emit(
		asm.LSh.Imm(asm.R0, 3),
		asm.Add.Reg(asm.R8, asm.R0),
		asm.LoadMem(asm.R2, asm.R8, 0, asm.DWord),
		asm.Add.Imm(asm.R2, 1),
		asm.StoreMem(asm.R8, 0, asm.R2, asm.DWord),
	)
}

// call emits a statement call.
func (g *gen) call(c *btlang.Call) {
	switch c.Name {
	case "printf":
		g.printf(c)
	case "cat", "system":
		n := len(g.out.Printfs)
		g.printf(c)
		if len(g.out.Printfs) > n {
			g.out.Printfs[n].Action = map[string]PrintfAction{"cat": ActionCat, "system": ActionSystem}[c.Name]
		}
	case "exit":
		g.record(RecExit, 0)
		// bpftrace 0.17 returns from the program after exit()'s event:
		// the block's statements after it do not run.
		g.emit(asm.Ja.Label("exit"))
	case "signal":
		// bpf_send_signal: to the process that hit the probe.
		sig := signalOf(c)
		if sig < 1 || sig > 64 {
			g.fail(internal(c.At, "this signal()"))
			return
		}
		g.emit(asm.Mov.Imm(asm.R1, int32(sig)), asm.FnSendSignal.Call())
	case "time":
		format := "%H:%M:%S\n" // bpftrace's default
		if len(c.Args) == 1 {
			lit, ok := c.Args[0].(*btlang.StrLit)
			if !ok {
				g.fail(internal(c.At, "a time() format that is not a literal"))
				return
			}
			format = lit.Val
		}
		g.out.Times = append(g.out.Times, format)
		g.record(RecTime, len(g.out.Times)-1)
	case "print", "clear", "zero":
		if _, isMap := c.Args[0].(*btlang.MapRef); !isMap && c.Name == "print" {
			// print(value) prints as printf would with one verb.
			format := "%s\n"
			if t := c.Args[0].Type(); t.Kind == btlang.KindInt || t.Kind == btlang.KindPtr {
				format = map[bool]string{true: "%ld\n", false: "%lu\n"}[t.Signed]
			}
			lit := &btlang.StrLit{ExprBase: btlang.ExprBase{At: c.At, T: btlang.StringType(len(format) + 1)}, Val: format}
			g.printf(&btlang.Call{ExprBase: c.ExprBase, Name: "printf", Args: []btlang.Expr{lit, c.Args[0]}})
			info := &g.out.Printfs[len(g.out.Printfs)-1]
			info.Value, info.ValueSigned = true, c.Args[0].Type().Signed
			return
		}
		var consts [2]uint64
		for i, a := range c.Args[1:] {
			lit, ok := a.(*btlang.IntLit)
			if !ok || lit.Val > 1<<31 {
				g.fail(internal(a.Pos(), "a print() top or divisor that is not a literal"))
				return
			}
			consts[i] = lit.Val
		}
		r, _ := c.Args[0].(*btlang.MapRef)
		if r == nil || r.Map == nil {
			g.fail(internal(c.At, "%s() of this", c.Name))
			return
		}
		idx, ok := g.mapIdx[r.Map]
		if !ok {
			g.fail(internal(c.At, "%s() of a map never assigned", c.Name))
			return
		}
		if c.Name == "print" {
			g.out.Prints = append(g.out.Prints, PrintInfo{Map: idx, Top: int(consts[0]), Div: uint32(consts[1])})
			g.record(RecPrint, len(g.out.Prints)-1)
			return
		}
		kind := map[string]int{"clear": RecClear, "zero": RecZero}[c.Name]
		g.record(kind, idx)
	case "delete":
		r, _ := c.Args[0].(*btlang.MapRef)
		if r == nil || r.Map == nil {
			g.fail(internal(c.At, "delete() of this"))
			return
		}
		mi := &g.out.Maps[g.mapIdx[r.Map]]
		if mi.User {
			g.fail(internal(c.At, "delete() of %s, a map counted in user space", r.Name))
			return
		}
		key := g.key(r, mi)
		g.emit(
			asm.LoadMapPtr(asm.R1, 0).WithReference(mi.BPF),
			asm.Mov.Reg(asm.R2, asm.R7),
			asm.Add.Imm(asm.R2, int32(key)),
			asm.FnMapDeleteElem.Call(),
		)
	default:
		g.fail(internal(c.At, "%s()", c.Name))
	}
}

// record writes an 8-byte record {kind, id}.
func (g *gen) record(kind, id int) {
	off := g.alloc(8)
	g.emit(
		asm.StoreImm(asm.R7, int16(off), int64(kind), asm.Word),
		asm.StoreImm(asm.R7, int16(off+4), int64(id), asm.Word),
	)
	g.output(off, 8)
}

// output sends size bytes of scratch at off to the ring buffer; a full
// ring is counted in lost[LostEvents]. As argread, it wakes the reader only
// when the ring is over a quarter full (the reader also polls on a timer).
func (g *gen) output(off, size int) {
	ok, flags := g.newLabel("sent"), g.newLabel("flags")
	g.emit(
		asm.LoadMapPtr(asm.R1, 0).WithReference(MapEvents),
		asm.Mov.Imm(asm.R2, rbAvailData),
		asm.FnRingbufQuery.Call(),
		asm.Mov.Imm(asm.R4, rbNoWakeup),
		asm.JLT.Imm(asm.R0, int32(g.opts.RingSize/4), flags),
		asm.Mov.Imm(asm.R4, rbForceWakeup),
	)
	g.label(flags)
	g.emit(
		asm.LoadMapPtr(asm.R1, 0).WithReference(MapEvents),
		asm.Mov.Reg(asm.R2, asm.R7),
		asm.Add.Imm(asm.R2, int32(off)),
		asm.Mov.Imm(asm.R3, int32(size)),
		asm.FnRingbufOutput.Call(),
		asm.JEq.Imm(asm.R0, 0, ok),
	)
	g.lost(LostEvents)
	g.label(ok)
	g.emit(nop())
}

func (g *gen) printf(c *btlang.Call) {
	lit, ok := c.Args[0].(*btlang.StrLit)
	if !ok {
		g.fail(internal(c.At, "a printf format that is not a literal"))
		return
	}
	f, err := printf.Parse(lit.Val)
	if err != nil {
		g.fail(&btlang.Error{Pos: lit.At, Msg: "printf: " + err.Error()})
		return
	}
	info := PrintfInfo{Format: f}
	size := 8
	for _, a := range c.Args[1:] {
		t := a.Type()
		switch t.Kind {
		case btlang.KindInt, btlang.KindPtr:
			info.Args = append(info.Args, RecordArg{Off: size, Size: 8})
			size += 8
		case btlang.KindString:
			info.Args = append(info.Args, RecordArg{Off: size, String: true, Size: t.Size})
			size += round8(t.Size)
		case btlang.KindProbe, btlang.KindSym:
			info.Args = append(info.Args, RecordArg{Off: size, Probe: true, Size: 8})
			size += 8
		case btlang.KindUsym:
			info.Args = append(info.Args, RecordArg{Off: size, Usym: true, Size: 16})
			size += 16
		case btlang.KindUsername:
			info.Args = append(info.Args, RecordArg{Off: size, Username: true, Size: 8})
			size += 8
		case btlang.KindTuple:
			_, n := TupleLayout(t)
			info.Args = append(info.Args, RecordArg{Off: size, Tuple: &t, Size: n})
			size += n
		case btlang.KindBuf:
			info.Args = append(info.Args, RecordArg{Off: size, Buf: true, Size: BufSize(t)})
			size += BufSize(t)
		case btlang.KindTimestamp:
			info.Args = append(info.Args, RecordArg{Off: size, Time: true, Size: TimestampSize})
			size += TimestampSize
		case btlang.KindInet:
			info.Args = append(info.Args, RecordArg{Off: size, Inet: true, Size: InetSize})
			size += InetSize
		case btlang.KindRecord, btlang.KindArray:
			n := btlang.CSize(t)
			info.Args = append(info.Args, RecordArg{Off: size, Size: n, C: CValue(t)})
			size += round8(n)
		case btlang.KindStack:
			si := stackInfo(t)
			si.Map, si.Machine = "", g.opts.Machine
			if g.opts.StackCopy > 0 {
				si.Copy = g.opts.StackCopy
			}
			n := stackArgSize(si)
			info.Args = append(info.Args, RecordArg{Off: size, Stack: si, Size: n})
			size += round8(n)
		default:
			g.fail(internal(a.Pos(), "printing a %s", t))
			return
		}
	}
	info.Size = size
	id := len(g.out.Printfs)
	g.out.Printfs = append(g.out.Printfs, info)
	rec := g.alloc(size)
	for i, a := range c.Args[1:] {
		ra := info.Args[i]
		if ra.Tuple != nil {
			g.copyTuple(tupleBuf{off: rec + ra.Off, t: *ra.Tuple}, g.tupleExpr(a))
			continue
		}
		if ra.Buf {
			g.copyBuf(strBuf{off: rec + ra.Off, size: ra.Size}, g.bufExpr(a))
			continue
		}
		if ra.Inet {
			g.inetAt(a, rec+ra.Off)
			continue
		}
		if ra.Time {
			g.copyBufTo(asm.R7, rec+ra.Off, TimestampSize, g.timeExpr(a))
			continue
		}
		if ra.String {
			src := g.strExpr(a)
			g.copyStr(strBuf{off: rec + ra.Off, size: ra.Size}, src)
			continue
		}
		if ra.Stack != nil {
			g.stackArg(a.Pos(), rec+ra.Off, ra.Stack)
			continue
		}
		if ra.C != nil {
			src := g.valueBuf(a)
			g.copyBytes(asm.R7, src.off, asm.R7, rec+ra.Off, round8(ra.Size))
			continue
		}
		if ra.Usym {
			g.usymAt(a, rec+ra.Off)
			continue
		}
		if ra.Username {
			// The uid, named in user space.
			g.emit(asm.FnGetCurrentUidGid.Call(), asm.Mov.Reg32(asm.R0, asm.R0))
		} else if ra.Probe {
			g.nameID(a)
		} else {
			g.intExpr(a)
		}
		g.emit(asm.StoreMem(asm.R7, int16(rec+ra.Off), asm.R0, asm.DWord))
	}
	g.emit(
		asm.StoreImm(asm.R7, int16(rec), RecPrintf, asm.Word),
		asm.StoreImm(asm.R7, int16(rec+4), int64(id), asm.Word),
	)
	g.output(rec, size)
}

// usymAt stores usym(x), e, at scratch off: the address, then the process
// (announced as a stack's is, so that it symbolizes after it exits).
func (g *gen) usymAt(e btlang.Expr, off int) {
	c, ok := e.(*btlang.Call)
	if !ok || c.Name != "usym" || len(c.Args) != 1 {
		g.fail(internal(e.Pos(), "this usym value"))
		return
	}
	g.intExpr(c.Args[0])
	g.emit(asm.StoreMem(asm.R7, int16(off), asm.R0, asm.DWord))
	g.stackPID(off + 8)
}
