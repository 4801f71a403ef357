package btgen

import (
	"net/netip"

	"github.com/cilium/ebpf/asm"

	"github.com/usdtkit/usdtkit/internal/lang/btlang"
)

// InetSize is the bytes an ntop() value takes in records: the address
// family, then 16 bytes of address.
const InetSize = 24

// afInet is AF_INET, ntop()'s family without one.
const afInet = 2

// inetAt stores ntop([af, ]x), e, at scratch off: the family, then x's
// bytes in memory order (an integer's, little endian) or pton()'s.
func (g *gen) inetAt(e btlang.Expr, off int) {
	c, ok := e.(*btlang.Call)
	if !ok || c.Name != "ntop" || len(c.Args) < 1 || len(c.Args) > 2 {
		g.fail(internal(e.Pos(), "this ntop() value"))
		return
	}
	g.zero(off, InetSize)
	if len(c.Args) == 2 {
		g.intExpr(c.Args[0])
		g.emit(asm.StoreMem(asm.R7, int16(off), asm.R0, asm.DWord))
	} else {
		g.emit(storeImm64(asm.R7, int16(off), afInet))
	}
	a := c.Args[len(c.Args)-1]
	if p, ok := a.(*btlang.Call); ok && p.Name == "pton" {
		lit, ok := btlang.PtonArg(p)
		addr, err := netip.ParseAddr(lit.Val)
		if !ok || err != nil {
			g.fail(internal(p.At, "pton() of this"))
			return
		}
		for i, b := range addr.AsSlice() {
			g.emit(asm.StoreImm(asm.R7, int16(off+8+i), int64(b), asm.Byte))
		}
		return
	}
	g.intExpr(a)
	g.emit(asm.StoreMem(asm.R7, int16(off+8), asm.R0, asm.DWord))
}
