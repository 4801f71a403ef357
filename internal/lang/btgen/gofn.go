package btgen

import (
	"slices"

	"github.com/cilium/ebpf/asm"

	"github.com/usdtkit/usdtkit/internal/bpf/argread"
	"github.com/usdtkit/usdtkit/internal/lang/btlang"
)

// Values read by name (args.NAME) and the goroutine id (goid), which
// probes of Go functions provide.
//
// A block stores each args.NAME it reads, and goid, in scratch space of
// its own: an integer takes 8 bytes, a Go string 16, its data pointer and
// its length. A string
// expression args.NAME then copies at most min(length, size-1) bytes from
// the pointer into a zeroed buffer, so the value is the Go string cut to
// the string size, NUL-terminated (a fault reads "").

// NamedFetch says how a site reads one args.NAME: an integer in Value, or
// a Go string whose data pointer is Value and length in bytes Len (Len.Kind
// 0 for an integer).
type NamedFetch struct {
	Name       string
	Value, Len argread.Fetch
}

// namedSlot is where a block keeps one args.NAME value.
type namedSlot struct {
	off    int // scratch offset; a string's length is at off+8
	string bool
}

// layoutNamed gives the args.NAME values and goid that the block reads
// scratch space.
func (g *gen) layoutNamed() {
	g.named = map[string]namedSlot{}
	g.goidOff = -1
	btlang.Inspect(g.block, func(n btlang.Node) bool {
		switch e := n.(type) {
		case *btlang.ArgField:
			if _, ok := g.named[e.Name]; ok {
				break
			}
			str := e.Type().Kind == btlang.KindString
			size := 8
			if str {
				size = 16
			}
			g.named[e.Name] = namedSlot{off: g.alloc(size), string: str}
		case *btlang.Builtin:
			if e.Name == "goid" && g.goidOff < 0 {
				g.goidOff = g.alloc(8)
			}
		}
		return true
	})
}

// namedItems returns the fetches of the block's args.NAME values and
// goid at site s.
func (g *gen) namedItems(i int, s *Site) ([]fetchItem, error) {
	var items []fetchItem
	names := make([]string, 0, len(g.named))
	for name := range g.named {
		names = append(names, name)
	}
	slices.Sort(names)
	// Fault bits are not read: a failed read stores 0.
	bit := 0
	for _, name := range names {
		ns := g.named[name]
		k := slices.IndexFunc(s.Named, func(f NamedFetch) bool { return f.Name == name })
		if k < 0 {
			return nil, internal(g.block.At, "args.%s at site %d, which does not provide it", name, i)
		}
		f := &s.Named[k]
		if ns.string != (f.Len.Kind != 0) {
			return nil, internal(g.block.At, "args.%s, not a string at site %d", name, i)
		}
		items = append(items, fetchItem{f: f.Value, slot: ns.off, bit: bit})
		if ns.string {
			items = append(items, fetchItem{f: f.Len, slot: ns.off + 8, bit: bit})
		}
	}
	if g.goidOff >= 0 {
		if s.GoID.Kind == 0 {
			return nil, internal(g.block.At, "goid at site %d, which cannot read it", i)
		}
		items = append(items, fetchItem{f: s.GoID, slot: g.goidOff, bit: bit})
	}
	return items, nil
}

// argFieldInt leaves the integer args.NAME in R0.
func (g *gen) argFieldInt(e *btlang.ArgField) {
	ns, ok := g.named[e.Name]
	if !ok || ns.string {
		g.fail(internal(e.At, "args.%s here", e.Name))
		return
	}
	g.emit(asm.LoadMem(asm.R0, asm.R7, int16(ns.off), asm.DWord))
}

// goid leaves the goroutine id in R0.
func (g *gen) goid(e *btlang.Builtin) {
	if g.goidOff < 0 {
		g.fail(internal(e.At, "goid here"))
		return
	}
	g.emit(asm.LoadMem(asm.R0, asm.R7, int16(g.goidOff), asm.DWord))
}

// argFieldStr copies the Go string args.NAME into a new buffer of the
// expression's size: at most size-1 bytes, as many as its length says.
func (g *gen) argFieldStr(e *btlang.ArgField) strBuf {
	size := e.Type().Size
	ns, ok := g.named[e.Name]
	if !ok || !ns.string || size < 1 {
		g.fail(internal(e.At, "args.%s here", e.Name))
		return strBuf{off: zeroOff, size: 8}
	}
	b := strBuf{off: g.alloc(size), size: size}
	g.zero(b.off, size)
	short := g.newLabel("gostrlen")
	// The length compared unsigned: a negative one (a damaged string)
	// reads the whole buffer, as a long one does.
	g.emit(
		asm.LoadMem(asm.R2, asm.R7, int16(ns.off+8), asm.DWord),
		asm.JLE.Imm(asm.R2, int32(size-1), short),
		asm.Mov.Imm(asm.R2, int32(size-1)),
	)
	g.label(short)
	// A fault zeroes the buffer: the value is "".
	g.emit(
		asm.LoadMem(asm.R3, asm.R7, int16(ns.off), asm.DWord),
		asm.Mov.Reg(asm.R1, asm.R7),
		asm.Add.Imm(asm.R1, int32(b.off)),
	)
	g.readUser()
	return b
}
