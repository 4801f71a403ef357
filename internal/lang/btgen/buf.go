package btgen

import (
	"github.com/cilium/ebpf/asm"

	"github.com/usdtkit/usdtkit/internal/lang/btlang"
)

// BufSize is the bytes a buffer of type t (buf()) takes in variables,
// maps and records: its length in 8 bytes, then its bytes, zero-padded
// to a multiple of 8.
func BufSize(t btlang.Type) int { return 8 + round8(t.Size) }

// bufExpr emits e, a buffer expression, and returns its bytes in
// scratch: off is the length's, size is BufSize.
func (g *gen) bufExpr(e btlang.Expr) strBuf {
	t := e.Type()
	if t.Kind != btlang.KindBuf {
		g.fail(internal(e.Pos(), "a %s value here", t))
		return strBuf{off: zeroOff, size: 8}
	}
	switch e := e.(type) {
	case *btlang.Var:
		if loc, ok := g.vars[e.Decl]; ok {
			return strBuf{off: loc.off, size: loc.size}
		}
	case *btlang.MapRef:
		if e.Map == nil || e.Map.Agg != btlang.AggNone || e.Map.Value.Kind != btlang.KindBuf {
			break
		}
		mi := &g.out.Maps[g.mapIdx[e.Map]]
		key := g.key(e, mi)
		n := BufSize(e.Map.Value)
		b := strBuf{off: g.alloc(n), size: n}
		g.copyKeyValue(mi, key, b.off, n, "buf")
		return b
	case *btlang.Call:
		if e.Name != "buf" || len(e.Args) != 2 {
			break
		}
		n := BufSize(t)
		b := strBuf{off: g.alloc(n), size: n}
		lenSlot := g.push()
		defer g.pop()
		if v, ok := btlang.ConstValue(e.Args[1]); ok {
			g.loadConst(asm.R0, min(v, int64(t.Size)))
		} else {
			// At most the buffer's size, compared unsigned.
			g.intExpr(e.Args[1])
			ok := g.newLabel("buflen")
			g.emit(asm.JLE.Imm(asm.R0, int32(t.Size), ok), asm.Mov.Imm(asm.R0, int32(t.Size)))
			g.label(ok)
			g.emit(nop())
		}
		g.emit(asm.StoreMem(asm.R10, lenSlot, asm.R0, asm.DWord))
		if e.Args[0].Type().Kind == btlang.KindString {
			src := g.strExpr(e.Args[0])
			g.zero(b.off, n)
			for k := 0; k < round8(t.Size) && k < round8(src.size); k += 8 {
				g.emit(asm.LoadMem(asm.R1, asm.R7, int16(src.off+k), asm.DWord), asm.StoreMem(asm.R7, int16(b.off+8+k), asm.R1, asm.DWord))
			}
			g.bufTail(b, t.Size)
		} else {
			g.intExpr(e.Args[0])
			g.zero(b.off, n)
			if t.Size > 0 {
				// A fault leaves zeros.
				g.emit(
					asm.Mov.Reg(asm.R3, asm.R0),
					asm.Mov.Reg(asm.R1, asm.R7),
					asm.Add.Imm(asm.R1, int32(b.off+8)),
					asm.LoadMem(asm.R2, asm.R10, lenSlot, asm.DWord),
					asm.FnProbeReadUser.Call(),
				)
			}
		}
		g.emit(asm.LoadMem(asm.R0, asm.R10, lenSlot, asm.DWord), asm.StoreMem(asm.R7, int16(b.off), asm.R0, asm.DWord))
		return b
	}
	g.fail(internal(e.Pos(), "this buffer expression (%s)", btlang.ExprString(e)))
	return strBuf{off: zeroOff, size: 8}
}

// bufTail zeros the bytes of buffer b past its size bytes, up to the
// next multiple of 8, so that equal buffers have equal bytes.
func (g *gen) bufTail(b strBuf, size int) {
	for k := size; k < round8(size); k++ {
		g.emit(asm.StoreImm(asm.R7, int16(b.off+8+k), 0, asm.Byte))
	}
}

// copyBuf copies buffer src into dst, which is as large or larger.
func (g *gen) copyBuf(dst, src strBuf) {
	g.copyBufTo(asm.R7, dst.off, dst.size, src)
}

// copyBufTo copies buffer src to to+off, a buffer of size bytes.
func (g *gen) copyBufTo(to asm.Register, off, size int, src strBuf) {
	if to == asm.R7 && off == src.off {
		return
	}
	for k := 0; k < size; k += 8 {
		if k < src.size {
			g.emit(asm.LoadMem(asm.R1, asm.R7, int16(src.off+k), asm.DWord), asm.StoreMem(to, int16(off+k), asm.R1, asm.DWord))
		} else {
			g.emit(storeImm64(to, int16(off+k), 0))
		}
	}
}

// bufEqual sets R0 to 1 when buffers a and b hold the same length and
// bytes. Bytes past a buffer's length are zeros.
func (g *gen) bufEqual(a, b strBuf) {
	g.wordsEqual(a.off, b.off, min(a.size, b.size), "buf")
}
