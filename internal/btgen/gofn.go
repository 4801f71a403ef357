package btgen

import (
	"fmt"
	"math/bits"
	"slices"

	"github.com/cilium/ebpf/asm"

	"github.com/usdtkit/usdtkit/internal/bpfgen"
	"github.com/usdtkit/usdtkit/internal/btlang"
)

// Values read by name (args.NAME) and the goroutine id (goid), which
// probes of Go functions provide.
//
// A block stores each args.NAME it reads, and goid, in argument slots of
// scratch after the positional arguments it reads (a block of Go probes
// reads none: the checker refuses arg0… there): an integer takes one
// slot, a Go string two, its data pointer and its length. A string
// expression args.NAME then copies at most min(length, size-1) bytes from
// the pointer into a zeroed buffer, so the value is the Go string cut to
// the string size, NUL-terminated (a fault reads "").

// NamedFetch says how a site reads one args.NAME: an integer in Value, or
// a Go string whose data pointer is Value and length in bytes Len (Len.Kind
// 0 for an integer).
type NamedFetch struct {
	Name       string
	Value, Len bpfgen.Fetch
}

// namedSlot is where a block keeps one args.NAME value.
type namedSlot struct {
	slot   int // first argument slot
	string bool
}

// layoutNamed gives the args.NAME values and goid that the block reads
// argument slots after the positional ones in used.
func (g *gen) layoutNamed(used uint16) error {
	g.named = map[string]namedSlot{}
	g.goidSlot = -1
	next := bits.Len16(used)
	var err error
	take := func(pos btlang.Pos, n int, what string) int {
		s := next
		next += n
		if next > bpfgen.MaxArgs && err == nil {
			err = &btlang.Error{Pos: pos, Msg: fmt.Sprintf("%s does not fit: a block reads at most %d argument words (a string takes 2)", what, bpfgen.MaxArgs)}
		}
		return s
	}
	btlang.Inspect(g.block, func(n btlang.Node) bool {
		switch e := n.(type) {
		case *btlang.ArgField:
			if _, ok := g.named[e.Name]; ok {
				break
			}
			str := e.Type().Kind == btlang.KindString
			g.named[e.Name] = namedSlot{slot: take(e.At, 1+b2i(str), "args."+e.Name), string: str}
		case *btlang.Builtin:
			if e.Name == "goid" && g.goidSlot < 0 {
				g.goidSlot = take(e.At, 1, "goid")
			}
		}
		return true
	})
	return err
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
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
	for _, name := range names {
		ns := g.named[name]
		k := slices.IndexFunc(s.Named, func(f NamedFetch) bool { return f.Name == name })
		if k < 0 {
			return nil, &btlang.Error{Pos: g.block.At, Msg: fmt.Sprintf("args.%s is read but site %d (offset %#x in %s) does not provide it", name, i, s.Offset, s.Path)}
		}
		f := &s.Named[k]
		if ns.string != (f.Len.Kind != 0) {
			return nil, &btlang.Error{Pos: g.block.At, Msg: fmt.Sprintf("args.%s is a string at some sites of the block and not at site %d", name, i)}
		}
		items = append(items, fetchItem{f: f.Value, slot: argsOff + 8*ns.slot, bit: ns.slot})
		if ns.string {
			items = append(items, fetchItem{f: f.Len, slot: argsOff + 8*(ns.slot+1), bit: ns.slot + 1})
		}
	}
	if g.goidSlot >= 0 {
		if s.GoID.Kind == 0 {
			return nil, &btlang.Error{Pos: g.block.At, Msg: fmt.Sprintf("goid is read but site %d (offset %#x in %s) cannot read it", i, s.Offset, s.Path)}
		}
		items = append(items, fetchItem{f: s.GoID, slot: argsOff + 8*g.goidSlot, bit: g.goidSlot})
	}
	return items, nil
}

// argFieldInt leaves the integer args.NAME in R0.
func (g *gen) argFieldInt(e *btlang.ArgField) {
	ns, ok := g.named[e.Name]
	if !ok || ns.string {
		g.fail(unsupported(e.At, "args.%s here", e.Name))
		return
	}
	g.emit(asm.LoadMem(asm.R0, asm.R7, int16(argsOff+8*ns.slot), asm.DWord))
}

// goid leaves the goroutine id in R0.
func (g *gen) goid(e *btlang.Builtin) {
	if g.goidSlot < 0 {
		g.fail(unsupported(e.At, "goid here"))
		return
	}
	g.emit(asm.LoadMem(asm.R0, asm.R7, int16(argsOff+8*g.goidSlot), asm.DWord))
}

// argFieldStr copies the Go string args.NAME into a new buffer of the
// expression's size: at most size-1 bytes, as many as its length says.
func (g *gen) argFieldStr(e *btlang.ArgField) strBuf {
	size := e.Type().Size
	ns, ok := g.named[e.Name]
	if !ok || !ns.string || size < 1 {
		g.fail(unsupported(e.At, "args.%s here", e.Name))
		return strBuf{off: zeroOff, size: 8}
	}
	b := strBuf{off: g.alloc(size), size: size}
	g.zero(b.off, size)
	short := g.newLabel("gostrlen")
	// The length compared unsigned: a negative one (a damaged string)
	// reads the whole buffer, as a long one does.
	g.emit(
		asm.LoadMem(asm.R2, asm.R7, int16(argsOff+8*(ns.slot+1)), asm.DWord),
		asm.JLE.Imm(asm.R2, int32(size-1), short),
		asm.Mov.Imm(asm.R2, int32(size-1)),
	)
	g.label(short)
	// A fault zeroes the buffer: the value is "".
	g.emit(
		asm.LoadMem(asm.R3, asm.R7, int16(argsOff+8*ns.slot), asm.DWord),
		asm.Mov.Reg(asm.R1, asm.R7),
		asm.Add.Imm(asm.R1, int32(b.off)),
		asm.FnProbeReadUser.Call(),
	)
	return b
}
