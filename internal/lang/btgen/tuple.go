package btgen

import (
	"github.com/cilium/ebpf/asm"

	"github.com/usdtkit/usdtkit/internal/lang/btlang"
)

// TupleLayout returns where each element of a value of tuple type t is in
// its bytes, and their size: integers and pointers 8 bytes, strings,
// structs, unions and arrays their size rounded to 8, tuples nested the
// same way, in order. Variables, map
// values and records hold tuples so.
func TupleLayout(t btlang.Type) (offs []int, size int) {
	for _, e := range t.Elems {
		offs = append(offs, size)
		size += elemSize(e)
	}
	return offs, size
}

func elemSize(t btlang.Type) int {
	switch t.Kind {
	case btlang.KindString:
		return round8(t.Size)
	case btlang.KindRecord, btlang.KindArray:
		return round8(btlang.CSize(t))
	case btlang.KindTuple:
		_, n := TupleLayout(t)
		return n
	case btlang.KindTimestamp:
		return TimestampSize
	}
	return 8
}

// tupleElems reports whether usdtkit stores tuples of type t: elements
// are integers, strings, timestamps, C values (pointers, structs, unions,
// arrays) and such tuples.
func tupleElems(t btlang.Type) bool {
	for _, e := range t.Elems {
		switch e.Kind {
		case btlang.KindInt, btlang.KindString, btlang.KindTimestamp, btlang.KindPtr, btlang.KindArray:
		case btlang.KindRecord:
			if e.Record == nil || !e.Record.Defined {
				return false
			}
		case btlang.KindTuple:
			if !tupleElems(e) {
				return false
			}
		default:
			return false
		}
	}
	return true
}

// tupleBuf is a tuple value in scratch at off, laid out as its type t
// (TupleLayout).
type tupleBuf struct {
	off int
	t   btlang.Type
}

// tupleExpr emits e, a tuple expression, and returns its buffer.
func (g *gen) tupleExpr(e btlang.Expr) tupleBuf {
	t := e.Type()
	none := tupleBuf{off: zeroOff, t: btlang.Type{Kind: btlang.KindTuple}}
	if _, elem := e.(*btlang.TupleIndex); t.Kind != btlang.KindTuple && !elem {
		g.fail(internal(e.Pos(), "a %s value here", t))
		return none
	}
	switch e := e.(type) {
	case *btlang.Tuple:
		_, n := TupleLayout(t)
		b := tupleBuf{off: g.alloc(n), t: t}
		offs, _ := TupleLayout(t)
		for i, x := range e.Elems {
			g.storeElem(b.off+offs[i], t.Elems[i], x)
		}
		return b
	case *btlang.Var:
		loc, ok := g.vars[e.Decl]
		if !ok {
			break
		}
		return tupleBuf{off: loc.off, t: e.Decl.Type}
	case *btlang.MapRef:
		if e.Map == nil || e.Map.Agg != btlang.AggNone || e.Map.Value.Kind != btlang.KindTuple {
			break
		}
		mi := &g.out.Maps[g.mapIdx[e.Map]]
		key := g.key(e, mi)
		_, n := TupleLayout(e.Map.Value)
		b := tupleBuf{off: g.alloc(n), t: e.Map.Value}
		g.copyKeyValue(mi, key, b.off, n, "tuple")
		return b
	case *btlang.TupleIndex:
		// An element: the parent's buffer, at the element's place and
		// of its stored type (any kind).
		p := g.tupleExpr(e.X)
		if e.Index >= len(p.t.Elems) {
			break
		}
		offs, _ := TupleLayout(p.t)
		return tupleBuf{off: p.off + offs[e.Index], t: p.t.Elems[e.Index]}
	case *btlang.Ternary:
		_, n := TupleLayout(t)
		b := tupleBuf{off: g.alloc(n), t: t}
		g.ternary(e, "t", func(x btlang.Expr) { g.copyTuple(b, g.tupleExpr(x)) })
		g.emit(nop())
		return b
	}
	g.fail(internal(e.Pos(), "this tuple expression (%s)", btlang.ExprString(e)))
	return none
}

// storeElem stores x, of a type compatible with t, at scratch off as an
// element of type t.
func (g *gen) storeElem(off int, t btlang.Type, x btlang.Expr) {
	switch t.Kind {
	case btlang.KindInt, btlang.KindPtr:
		g.intExpr(x)
		g.emit(asm.StoreMem(asm.R7, int16(off), asm.R0, asm.DWord))
	case btlang.KindString:
		g.copyStr(strBuf{off: off, size: t.Size}, g.strExpr(x))
	case btlang.KindRecord, btlang.KindArray:
		src := g.valueBuf(x)
		g.copyBytes(asm.R7, src.off, asm.R7, off, round8(btlang.CSize(t)))
	case btlang.KindTuple:
		g.copyTuple(tupleBuf{off: off, t: t}, g.tupleExpr(x))
	case btlang.KindTimestamp:
		g.copyBufTo(asm.R7, off, TimestampSize, g.timeExpr(x))
	default:
		g.fail(internal(x.Pos(), "a %s tuple element", t))
	}
}

// copyTuple copies src into dst, element by element: their types are
// compatible, dst's strings may be shorter (cut) or longer (padded).
func (g *gen) copyTuple(dst, src tupleBuf) {
	if len(dst.t.Elems) != len(src.t.Elems) {
		g.fail(internal(g.block.At, "a tuple of %d elements copied to one of %d", len(src.t.Elems), len(dst.t.Elems)))
		return
	}
	if dst.off == src.off {
		return
	}
	doffs, _ := TupleLayout(dst.t)
	soffs, _ := TupleLayout(src.t)
	for i, dt := range dst.t.Elems {
		st := src.t.Elems[i]
		d, s := dst.off+doffs[i], src.off+soffs[i]
		switch dt.Kind {
		case btlang.KindInt, btlang.KindPtr:
			g.emit(asm.LoadMem(asm.R1, asm.R7, int16(s), asm.DWord), asm.StoreMem(asm.R7, int16(d), asm.R1, asm.DWord))
		case btlang.KindRecord, btlang.KindArray:
			g.copyBytes(asm.R7, s, asm.R7, d, round8(btlang.CSize(dt)))
		case btlang.KindString:
			g.copyStr(strBuf{off: d, size: dt.Size}, strBuf{off: s, size: st.Size})
		case btlang.KindTuple:
			g.copyTuple(tupleBuf{off: d, t: dt}, tupleBuf{off: s, t: st})
		case btlang.KindTimestamp:
			g.copyBufTo(asm.R7, d, TimestampSize, strBuf{off: s, size: TimestampSize})
		}
	}
}
