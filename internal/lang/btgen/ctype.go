package btgen

import (
	"github.com/cilium/ebpf/asm"

	"github.com/usdtkit/usdtkit/internal/lang/btlang"
	"github.com/usdtkit/usdtkit/internal/lang/layout"
)

// C values: pointers, structs, unions and arrays.
//
// A pointer is an integer in R0, like any integer; + and - scale the
// integer operand by the size of what it points to. A field, an element
// or what a pointer points to is a place: an address in R0 that is
// either in the traced process (reached through a pointer: read with
// bpf_probe_read_user) or in the program's own memory (a variable's or a
// map's value, copied to scratch). placeOf computes it; reading an
// integer there (readLeaf) or copying the whole value (valueBuf) follows.
// Nothing is read from the process before a value is used, so
// ((struct Foo *)arg0)->bar.x reads 4 bytes, not the struct.

// userPlace reports whether place expression e is in the traced
// process's memory.
func userPlace(e btlang.Expr) bool {
	switch e := e.(type) {
	case *btlang.Deref:
		return true
	case *btlang.FieldAccess:
		return e.Arrow || userPlace(e.X)
	case *btlang.Index:
		return e.X.Type().Kind == btlang.KindPtr || userPlace(e.X)
	}
	return false
}

// cType returns the C type of the value place expression e holds.
func cType(e btlang.Expr) btlang.Type {
	switch e := e.(type) {
	case *btlang.Deref:
		if t := e.X.Type(); t.Elem != nil {
			return *t.Elem
		}
	case *btlang.FieldAccess:
		if e.Field != nil {
			return e.Field.Type
		}
	case *btlang.Index:
		if t := e.X.Type(); t.Elem != nil {
			return *t.Elem
		}
	}
	return e.Type()
}

// isPlace reports whether e is read from where another value is: a
// dereference, a field or an element.
func isPlace(e btlang.Expr) bool {
	switch e.(type) {
	case *btlang.Deref, *btlang.FieldAccess, *btlang.Index:
		return true
	}
	return false
}

// placeOf leaves in R0 the address of the value e gives: e a place
// expression, or a struct, union or array variable or map read.
func (g *gen) placeOf(e btlang.Expr) {
	switch e := e.(type) {
	case *btlang.Deref:
		g.intExpr(e.X)
	case *btlang.FieldAccess:
		if e.Arrow {
			g.intExpr(e.X)
		} else {
			g.placeOf(e.X)
		}
		if e.Field == nil {
			g.fail(internal(e.At, "field %s", e.Name))
			return
		}
		if e.Field.Offset != 0 {
			g.emit(asm.Add.Imm(asm.R0, int32(e.Field.Offset)))
		}
	case *btlang.Index:
		xt := e.X.Type()
		if xt.Elem == nil {
			g.fail(internal(e.At, "indexing a %s", xt))
			return
		}
		size := int64(btlang.CSize(*xt.Elem))
		if xt.Kind == btlang.KindPtr {
			g.intExpr(e.X)
		} else {
			g.placeOf(e.X)
		}
		if v, ok := btlang.ConstValue(e.I); ok {
			if off := v * size; off != 0 {
				g.loadConst(asm.R1, off)
				g.emit(asm.Add.Reg(asm.R0, asm.R1))
			}
			return
		}
		if !userPlace(e) {
			g.fail(internal(e.At, "a variable index into a value in BPF memory"))
			return
		}
		slot := g.push()
		g.emit(asm.StoreMem(asm.R10, slot, asm.R0, asm.DWord))
		g.intExpr(e.I)
		g.loadConst(asm.R1, size)
		g.emit(
			asm.Mul.Reg(asm.R0, asm.R1),
			asm.LoadMem(asm.R1, asm.R10, slot, asm.DWord),
			asm.Add.Reg(asm.R0, asm.R1),
		)
		g.pop()
	case *btlang.Var:
		loc, ok := g.vars[e.Decl]
		if !ok {
			g.fail(internal(e.At, "variable %s", e.Name))
			return
		}
		g.emit(asm.Mov.Reg(asm.R0, asm.R7), asm.Add.Imm(asm.R0, int32(loc.off)))
	case *btlang.MapRef:
		b := g.mapReadBytes(e)
		g.emit(asm.Mov.Reg(asm.R0, asm.R7), asm.Add.Imm(asm.R0, int32(b.off)))
	default:
		g.fail(internal(e.Pos(), "the place of %s", btlang.ExprString(e)))
	}
}

// readLeaf replaces the address in R0 with the integer or pointer of C
// type t there (a bit-field of bits bits at bitOff when bits > 0),
// extended to 64 bits: read from the traced process when user (0 if it
// cannot be read), else loaded.
func (g *gen) readLeaf(t btlang.Type, user bool, bitOff, bits int) {
	size := btlang.CSize(t)
	if size != 1 && size != 2 && size != 4 && size != 8 {
		g.fail(internal(g.block.At, "reading a %s", t))
		return
	}
	if user {
		slot := g.push()
		g.emit(
			asm.Mov.Reg(asm.R3, asm.R0),
			storeImm64(asm.R10, slot, 0),
			asm.Mov.Reg(asm.R1, asm.R10),
			asm.Add.Imm(asm.R1, int32(slot)),
			asm.Mov.Imm(asm.R2, int32(size)),
			asm.FnProbeReadUser.Call(),
			asm.LoadMem(asm.R0, asm.R10, slot, asm.DWord),
		)
		g.pop()
	} else {
		g.emit(asm.LoadMem(asm.R0, asm.R0, 0, map[int]asm.Size{1: asm.Byte, 2: asm.Half, 4: asm.Word, 8: asm.DWord}[size]))
	}
	if bits > 0 {
		// The field's bits to the top, then back down with its sign.
		g.emit(asm.LSh.Imm(asm.R0, int32(64-bitOff-bits)))
		if t.Signed {
			g.emit(asm.ArSh.Imm(asm.R0, int32(64-bits)))
		} else {
			g.emit(asm.RSh.Imm(asm.R0, int32(64-bits)))
		}
		return
	}
	if t.Kind == btlang.KindInt {
		g.extend(size, t.Signed)
	}
}

// placeInt emits e, a place expression of an integer or pointer type,
// leaving its value in R0.
func (g *gen) placeInt(e btlang.Expr) {
	g.placeOf(e)
	bitOff, bits := 0, 0
	if f, ok := e.(*btlang.FieldAccess); ok && f.Field != nil {
		bitOff, bits = f.Field.BitOff, f.Field.Bits
	}
	g.readLeaf(cType(e), userPlace(e), bitOff, bits)
}

// readPlace copies n bytes from the address in R0 to scratch at off: read
// from the traced process when user (zeros where it cannot be read),
// else copied.
func (g *gen) readPlace(off, n int, user bool) {
	if user {
		g.zero(off, n)
		g.emit(
			asm.Mov.Reg(asm.R3, asm.R0),
			asm.Mov.Reg(asm.R1, asm.R7),
			asm.Add.Imm(asm.R1, int32(off)),
			asm.Mov.Imm(asm.R2, int32(n)),
			asm.FnProbeReadUser.Call(),
		)
		return
	}
	g.copyBytes(asm.R0, 0, asm.R7, off, n)
}

// copyBytes copies n bytes from from+srcOff to to+dstOff, in the widest
// loads the length allows, through R1.
func (g *gen) copyBytes(from asm.Register, srcOff int, to asm.Register, dstOff, n int) {
	for k := 0; k < n; {
		w, size := widest(n - k)
		g.emit(
			asm.LoadMem(asm.R1, from, int16(srcOff+k), size),
			asm.StoreMem(to, int16(dstOff+k), asm.R1, size),
		)
		k += w
	}
}

// placeStr emits e, a place expression of an array of char, as a string
// buffer: its bytes and a NUL.
func (g *gen) placeStr(e btlang.Expr) strBuf {
	t := e.Type()
	b := strBuf{off: g.alloc(t.Size), size: t.Size}
	g.placeOf(e)
	user := userPlace(e)
	if !user {
		g.zero(b.off, b.size)
	}
	g.readPlace(b.off, t.Size-1, user)
	return b
}

// valueBuf emits e, a struct, union or array value, into scratch and
// returns its buffer (a variable's own, or a copy), zero-padded to 8
// bytes.
func (g *gen) valueBuf(e btlang.Expr) strBuf {
	n := btlang.CSize(e.Type())
	if v, ok := e.(*btlang.Var); ok {
		if loc, ok := g.vars[v.Decl]; ok {
			return strBuf{off: loc.off, size: loc.size}
		}
	}
	if r, ok := e.(*btlang.MapRef); ok {
		return g.mapReadBytes(r)
	}
	b := strBuf{off: g.alloc(n), size: n}
	user := userPlace(e)
	if !user {
		g.zero(b.off, n)
	}
	g.placeOf(e)
	g.readPlace(b.off, n, user)
	return b
}

// copyValue copies the value in src to dst, both of dst.size bytes
// rounded to 8.
func (g *gen) copyValue(dst, src strBuf) {
	if dst.off == src.off {
		return
	}
	g.copyBytes(asm.R7, src.off, asm.R7, dst.off, round8(dst.size))
}

// mapReadBytes copies r's value, a struct, union or array, to a scratch
// buffer (zeros for an absent key) and returns it.
func (g *gen) mapReadBytes(r *btlang.MapRef) strBuf {
	n := btlang.CSize(r.Map.Value)
	b := strBuf{off: g.alloc(n), size: n}
	mi := &g.out.Maps[g.mapIdx[r.Map]]
	g.copyKeyValue(mi, g.key(r, mi), b.off, n, "val")
	return b
}

// widest returns the widest load of at most n bytes (n > 0): its bytes
// and size.
func widest(n int) (int, asm.Size) {
	switch {
	case n >= 8:
		return 8, asm.DWord
	case n >= 4:
		return 4, asm.Word
	case n >= 2:
		return 2, asm.Half
	}
	return 1, asm.Byte
}

// bytesEqual sets R0 to 1 when the n bytes of a and b are equal.
func (g *gen) bytesEqual(a, b strBuf, n int) {
	ne, end := g.newLabel("ne"), g.newLabel("eq")
	for k := 0; k < n; {
		w, size := widest(n - k)
		g.emit(
			asm.LoadMem(asm.R1, asm.R7, int16(a.off+k), size),
			asm.LoadMem(asm.R2, asm.R7, int16(b.off+k), size),
			asm.JNE.Reg(asm.R1, asm.R2, ne),
		)
		k += w
	}
	g.emit(asm.Mov.Imm(asm.R0, 1), asm.Ja.Label(end))
	g.label(ne)
	g.emit(asm.Mov.Imm(asm.R0, 0))
	g.label(end)
}

// ptrScale returns the size a pointer of type t steps by: the size of
// what it points to (1 for void *).
func ptrScale(t btlang.Type) int64 {
	if t.Kind != btlang.KindPtr || t.Elem == nil {
		return 1
	}
	return max(int64(btlang.CSize(*t.Elem)), 1)
}

// scale multiplies reg by n.
func (g *gen) scale(reg asm.Register, n int64) {
	if n != 1 {
		g.emit(asm.Mul.Imm(reg, int32(n)))
	}
}

// isValue reports whether t is stored as bytes: a struct, union or
// array.
func isValue(t btlang.Type) bool {
	return t.Kind == btlang.KindRecord || t.Kind == btlang.KindArray
}

// CValue describes C type t for printing: the layout of its bytes.
func CValue(t btlang.Type) *layout.CValue {
	v := &layout.CValue{Size: btlang.CSize(t), Signed: t.Signed}
	switch t.Kind {
	case btlang.KindInt:
		v.Kind = layout.CInt
	case btlang.KindPtr:
		v.Kind = layout.CPtr
	case btlang.KindString:
		v.Kind = layout.CString
	case btlang.KindArray:
		v.Kind, v.Len = layout.CArray, t.Len
		if t.Elem != nil {
			v.Elem = CValue(*t.Elem)
		}
	case btlang.KindRecord:
		v.Kind = layout.CRecord
		if t.Record != nil {
			for _, f := range t.Record.Fields {
				v.Fields = append(v.Fields, layout.CField{Name: f.Name, Off: f.Offset, BitOff: f.BitOff, Bits: f.Bits, Value: CValue(f.Type)})
			}
		}
	}
	return v
}
