package btgen

import (
	"github.com/cilium/ebpf/asm"

	"github.com/usdtkit/usdtkit/internal/lang/btlang"
)

// TimestampSize is the bytes a strftime() value takes in variables,
// maps, tuples and records: the format's index in Program.Strftimes,
// then the nanoseconds since boot (8 bytes each).
const TimestampSize = 16

// timeExpr emits e, a strftime() value, and returns its bytes in scratch.
func (g *gen) timeExpr(e btlang.Expr) strBuf {
	if t := e.Type(); t.Kind != btlang.KindTimestamp {
		g.fail(internal(e.Pos(), "a %s value here", t))
		return strBuf{off: zeroOff, size: 8}
	}
	switch e := e.(type) {
	case *btlang.Call:
		lit, ok := e.Args[0].(*btlang.StrLit)
		if e.Name != "strftime" || !ok {
			break
		}
		id := len(g.out.Strftimes)
		g.out.Strftimes = append(g.out.Strftimes, lit.Val)
		b := strBuf{off: g.alloc(TimestampSize), size: TimestampSize}
		g.intExpr(e.Args[1])
		g.emit(
			asm.StoreMem(asm.R7, int16(b.off+8), asm.R0, asm.DWord),
			storeImm64(asm.R7, int16(b.off), int32(id)),
		)
		return b
	case *btlang.Var:
		if loc, ok := g.vars[e.Decl]; ok {
			return strBuf{off: loc.off, size: loc.size}
		}
	case *btlang.MapRef:
		if e.Map == nil || e.Map.Agg != btlang.AggNone || e.Map.Value.Kind != btlang.KindTimestamp {
			break
		}
		mi := &g.out.Maps[g.mapIdx[e.Map]]
		key := g.key(e, mi)
		b := strBuf{off: g.alloc(TimestampSize), size: TimestampSize}
		g.copyKeyValue(mi, key, b.off, TimestampSize, "time")
		return b
	case *btlang.TupleIndex:
		t := g.tupleExpr(e)
		return strBuf{off: t.off, size: TimestampSize}
	}
	g.fail(internal(e.Pos(), "this strftime() value (%s)", btlang.ExprString(e)))
	return strBuf{off: zeroOff, size: 8}
}
