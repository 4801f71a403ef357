package trace

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/go-delve/delve/pkg/dwarf/godwarf"

	"github.com/usdtkit/usdtkit/internal/bpf/argread"
	"github.com/usdtkit/usdtkit/internal/golang/gofunc"
	"github.com/usdtkit/usdtkit/uprobe"
)

// Events of Go functions.
//
// The event of a Go function's site carries its values whole, by name: a
// site's event arguments (slots) are the goroutine id in slot 0, then one
// slot per word of each parameter (at the entry) or result (at a RET), in
// order, then the fields EventProbe.Fields names. An integer, bool or
// pointer takes one slot; a string two, its data pointer, whose bytes the
// event reads as many as the length in the next slot says (btgen's
// Site.Bytes), and the length; an interface two, its type and data words;
// a slice two, data and length, then for a slice of integers, bools or
// pointers its first elements while slots remain. What does not fit in
// MaxArgs slots is left out with a warning. goLayout remembers where each
// value is, and the decoder turns the slots back into Values by name.

// GoPointer is an address read from a Go value; it prints as hex.
type GoPointer uint64

func (p GoPointer) String() string { return fmt.Sprintf("%#x", uint64(p)) }

// GoSlice is a Go slice: its length in elements and the start of its
// contents: Data for a slice of bytes, Elems (int64, uint64, bool or
// GoPointer) for a slice of integers, bools or pointers, at most the
// slots an event has left.
type GoSlice struct {
	Len   uint64
	Data  string
	Elems []any
}

// GoInterface is a Go interface value that is not nil: its type word (an
// itab for a non-empty interface such as error) and data word, and the
// dynamic type's name when the binary's symbol table names the type word
// ("*errors.errorString"; not in position-independent executables).
type GoInterface struct {
	Type, Data GoPointer
	TypeName   string
}

// goLayout is where the values of a Go function's events are.
type goLayout struct {
	results bool
	values  []goSlotValue
	// types names itabs and type descriptors by address, nil if unknown.
	types map[uint64]string
}

type goSlotValue struct {
	name, typ string
	kind      gofunc.Kind
	elemKind  gofunc.Kind
	// slots are the event arguments of the value's words. For a
	// string or slice: data, length, then a slice's elements.
	slots  []int
	reason string
}

// goLayoutBuilder lays out the slots of one Go site's events.
type goLayoutBuilder struct {
	fn      *uprobe.Function
	args    []argread.Fetch
	bytes   uint16
	layout  goLayout
	missing []string
}

func (l *goLayoutBuilder) add(f argread.Fetch) int {
	l.args = append(l.args, f)
	return len(l.args) - 1
}

func (l *goLayoutBuilder) free() int { return MaxArgs - len(l.args) }

// value gives p slots, if they fit.
func (l *goLayoutBuilder) value(p *gofunc.Param) error {
	v := goSlotValue{name: p.Name, typ: p.Type, kind: p.Kind, elemKind: p.ElemKind, reason: p.Reason}
	need := 0
	switch p.Kind {
	case gofunc.Int, gofunc.Uint, gofunc.Bool, gofunc.Pointer:
		need = 1
	case gofunc.String, gofunc.Interface, gofunc.Slice:
		need = 2
	}
	if need > l.free() {
		l.missing = append(l.missing, p.Name)
		return nil
	}
	switch p.Kind {
	case gofunc.Int, gofunc.Uint, gofunc.Bool, gofunc.Pointer:
		f, err := wordFetch(l.fn, p.Words[0], p.Size, p.Kind == gofunc.Int)
		if err != nil {
			return err
		}
		v.slots = []int{l.add(f)}
	case gofunc.Interface:
		for _, w := range p.Words[:2] {
			f, err := wordFetch(l.fn, w, 8, false)
			if err != nil {
				return err
			}
			v.slots = append(v.slots, l.add(f))
		}
	case gofunc.String, gofunc.Slice:
		data, err := wordFetch(l.fn, p.Words[0], 8, false)
		if err != nil {
			return err
		}
		n, err := wordFetch(l.fn, p.Words[1], 8, false)
		if err != nil {
			return err
		}
		ds := l.add(data)
		v.slots = []int{ds, l.add(n)}
		if p.Kind == gofunc.String || p.ElemSize == 1 {
			l.bytes |= 1 << ds
		} else if p.Kind == gofunc.Slice && p.ElemKind != 0 && p.Words[0].Reg != "" {
			// The first elements, read through the data pointer.
			for i := int64(0); i < 4 && l.free() > 0; i++ {
				f := argread.Fetch{Kind: argread.FetchMem, Size: uint8(min(p.ElemSize, 8)), Signed: p.ElemKind == gofunc.Int,
					HasBase: true, Reg: data.Reg, Offset: i * p.ElemSize}
				v.slots = append(v.slots, l.add(f))
			}
		}
	}
	l.layout.values = append(l.layout.values, v)
	return nil
}

// field gives a field path through a pointer parameter a slot, if one is
// free.
func (l *goLayoutBuilder) field(params []gofunc.Param, path string) error {
	f, v, err := goField(l.fn, params, path)
	if err != nil {
		return err
	}
	if l.free() == 0 {
		l.missing = append(l.missing, path)
		return nil
	}
	v.slots = []int{l.add(f)}
	l.layout.values = append(l.layout.values, v)
	return nil
}

// goEventLayout returns the event arguments of a site of Go function fn
// (see the comment at the top of the file), which of them are Go bytes,
// and where each value is. Fields apply to the functions that have a
// parameter of the path's first name that points to a struct. goidOff
// and gReg locate the goroutine id (goidOff -1: unknown, slot 0 is 0).
func goEventLayout(fn *uprobe.Function, gf *gofunc.Func, goidOff int64, gReg string, fields []string, warn func(error)) ([]argread.Fetch, uint16, *goLayout, error) {
	l := &goLayoutBuilder{fn: fn}
	if goidOff >= 0 {
		g, err := argread.GoIDFetch(fn.Machine, gReg, goidOff)
		if err != nil {
			return nil, 0, nil, err
		}
		l.add(g)
	} else {
		l.add(argread.Fetch{Kind: argread.FetchConst, Size: 8})
	}
	values := gf.Params
	if fn.Return {
		values = gf.Results
	}
	for i := range values {
		if err := l.value(&values[i]); err != nil {
			return nil, 0, nil, err
		}
	}
	if !fn.Return {
		for _, path := range fields {
			root, _, _ := strings.Cut(path, ".")
			if !slices.ContainsFunc(gf.Params, func(p gofunc.Param) bool { return p.Name == root && p.Struct != nil }) {
				continue
			}
			if err := l.field(gf.Params, path); err != nil {
				return nil, 0, nil, err
			}
		}
	}
	if len(l.missing) > 0 {
		warn(fmt.Errorf("%s in %s: %s not read: an event has %d values", fn.Name(), fn.Path, strings.Join(l.missing, ", "), MaxArgs))
	}
	l.layout.results = fn.Return
	return l.args, l.bytes, &l.layout, nil
}

// goField returns the fetch of a field path through a pointer parameter
// ("s.hits", "s.next.hits") at the entry of fn, and the value it is.
// Integer, bool and pointer fields can be read, through registers and at
// most argread.MaxDerefs pointers past the parameter.
func goField(fn *uprobe.Function, params []gofunc.Param, path string) (argread.Fetch, goSlotValue, error) {
	var none argread.Fetch
	root, rest, ok := strings.Cut(path, ".")
	if !ok {
		return none, goSlotValue{}, fmt.Errorf("field %q: want PARAM.FIELD", path)
	}
	var p *gofunc.Param
	for i := range params {
		if params[i].Name == root {
			p = &params[i]
		}
	}
	if p == nil {
		return none, goSlotValue{}, fmt.Errorf("field %q: no parameter %s", path, root)
	}
	if p.Kind != gofunc.Pointer || p.Struct == nil {
		return none, goSlotValue{}, fmt.Errorf("field %q: %s is a %s, not a pointer to a struct", path, root, p.Type)
	}
	st := p.Struct
	var hops []int64
	var leaf godwarf.Type
	for _, name := range strings.Split(rest, ".") {
		if st == nil {
			return none, goSlotValue{}, fmt.Errorf("field %q: %s is not a struct or a pointer to one", path, name)
		}
		var fld *godwarf.StructField
		for _, f := range st.Field {
			if f.Name == name {
				fld = f
			}
		}
		if fld == nil {
			return none, goSlotValue{}, fmt.Errorf("field %q: %s has no field %s", path, st.StructName, name)
		}
		if leaf != nil || len(hops) == 0 {
			// The first field, or the previous one was a pointer: a
			// new hop.
			hops = append(hops, fld.ByteOffset)
		} else {
			hops[len(hops)-1] += fld.ByteOffset
		}
		leaf, st = nil, nil
		switch t := gofunc.Resolve(fld.Type).(type) {
		case *godwarf.StructType:
			st = t
		case *godwarf.PtrType:
			if s, ok := gofunc.Resolve(t.Type).(*godwarf.StructType); ok {
				st, leaf = s, t
			}
		}
		if st == nil {
			leaf = fld.Type
		}
	}
	if leaf == nil {
		return none, goSlotValue{}, fmt.Errorf("field %q: a struct value; name one of its fields", path)
	}
	if len(hops) > 1+argread.MaxDerefs {
		return none, goSlotValue{}, fmt.Errorf("field %q: more than %d pointers to follow", path, argread.MaxDerefs)
	}
	kind, size := gofunc.Uint, leaf.Size()
	switch gofunc.Resolve(leaf).(type) {
	case *godwarf.IntType:
		kind = gofunc.Int
	case *godwarf.BoolType:
		kind = gofunc.Bool
	case *godwarf.PtrType, *godwarf.MapType, *godwarf.ChanType, *godwarf.FuncType:
		kind = gofunc.Pointer
	case *godwarf.UintType:
	default:
		return none, goSlotValue{}, fmt.Errorf("field %q: type %s; only integer, bool and pointer fields can be read", path, leaf)
	}
	if size != 1 && size != 2 && size != 4 && size != 8 {
		return none, goSlotValue{}, fmt.Errorf("field %q: type %s of %d bytes", path, leaf, size)
	}
	if p.Words[0].Reg == "" {
		return none, goSlotValue{}, fmt.Errorf("field %q: %s is passed on the stack; fields are read through registers only", path, root)
	}
	base, err := wordFetch(fn, p.Words[0], 8, false)
	if err != nil {
		return none, goSlotValue{}, err
	}
	f := argread.Fetch{Kind: argread.FetchMem, Size: uint8(size), Signed: kind == gofunc.Int, HasBase: true, Reg: base.Reg, Offset: hops[0]}
	for i, h := range hops[1:] {
		f.Path[i] = int32(h)
		f.Derefs++
	}
	return f, goSlotValue{name: path, typ: leaf.String(), kind: kind}, nil
}

// decode turns the raw slots of an event into ev's named values.
// strs[i] is slot i's bytes, fault bit i of faults a slot not read.
func (gl *goLayout) decode(ev *Event, raw []uint64, strs []string, faults uint16) {
	ev.Go, ev.Results = true, gl.results
	ev.GoID = 0
	if len(raw) > 0 {
		ev.GoID = raw[0]
	}
	if cap(ev.Args) < len(gl.values) {
		ev.Args = make([]Value, len(gl.values))
	}
	ev.Args = ev.Args[:len(gl.values)]
	for i := range gl.values {
		ev.Args[i] = gl.values[i].decode(raw, strs, faults, gl.types)
	}
}

func (v *goSlotValue) decode(raw []uint64, strs []string, faults uint16, types map[uint64]string) Value {
	gv := Value{Name: v.name, Type: v.typ, Signed: v.kind == gofunc.Int}
	if v.kind == gofunc.Unreadable {
		gv.Unread = v.reason
		return gv
	}
	if len(v.slots) == 0 {
		gv.Unread = "not in the event"
		return gv
	}
	for _, s := range v.slots[:min(len(v.slots), 2)] {
		if s >= len(raw) {
			gv.Unread = "not in the event"
			return gv
		}
		if faults&(1<<s) != 0 && v.kind != gofunc.String && v.kind != gofunc.Slice {
			gv.Fault, gv.Unread = true, "could not read user memory"
			return gv
		}
	}
	s0 := v.slots[0]
	x := raw[s0]
	gv.Raw = x
	switch v.kind {
	case gofunc.Int:
		gv.Go = int64(x)
	case gofunc.Uint:
		gv.Go = x
	case gofunc.Bool:
		gv.Go = x&0xff != 0
	case gofunc.Pointer:
		gv.Go = GoPointer(x)
	case gofunc.Interface:
		if x == 0 {
			return gv
		}
		gv.Go = GoInterface{Type: GoPointer(x), Data: GoPointer(raw[v.slots[1]]), TypeName: types[x]}
	case gofunc.String, gofunc.Slice:
		n := raw[v.slots[1]]
		data := strs[s0]
		gv.Truncated = uint64(len(data)) < n
		if faults&(1<<s0) != 0 && n != 0 {
			gv.Fault, gv.Unread, gv.Truncated = true, "could not read the contents", false
		}
		if v.kind == gofunc.String {
			gv.Go, gv.IsString, gv.Str = data, true, data
			return gv
		}
		sl := GoSlice{Len: n, Data: data}
		for i, s := range v.slots[2:] {
			if uint64(i) >= n || s >= len(raw) || faults&(1<<s) != 0 {
				break
			}
			e := raw[s]
			switch v.elemKind {
			case gofunc.Int:
				sl.Elems = append(sl.Elems, int64(e))
			case gofunc.Bool:
				sl.Elems = append(sl.Elems, e != 0)
			case gofunc.Pointer:
				sl.Elems = append(sl.Elems, GoPointer(e))
			default:
				sl.Elems = append(sl.Elems, e)
			}
		}
		if len(v.slots) > 2 {
			gv.Truncated = uint64(len(sl.Elems)) < n
		}
		gv.Go = sl
	}
	return gv
}

// goString returns a Go value as usdtkit prints it.
func (v Value) goString() string {
	if v.Unread != "" && v.Go == nil {
		return "<unread: " + v.Unread + ">"
	}
	var b []byte
	switch x := v.Go.(type) {
	case nil:
		b = append(b, "nil"...)
	case string:
		b = strconv.AppendQuote(b, x)
	case GoSlice:
		b = append(strconv.AppendUint(append(b, '['), x.Len, 10), ']')
		if x.Elems != nil {
			b = fmt.Appendf(b, "%v", x.Elems)
		} else {
			b = strconv.AppendQuote(b, x.Data)
		}
	case GoInterface:
		if x.TypeName != "" {
			b = fmt.Appendf(b, "(%s)%s", x.TypeName, x.Data)
		} else {
			b = fmt.Appendf(b, "(%s,%s)", x.Type, x.Data)
		}
	default:
		b = fmt.Appendf(b, "%v", x)
	}
	if v.Truncated {
		b = append(b, "..."...)
	}
	return string(b)
}

// GoFunctions reports whether some probe of the program is a Go
// function at its entry or return, whose events carry values by name.
func (p *Program) GoFunctions() bool {
	for _, n := range p.names {
		if n.goFn {
			return true
		}
	}
	return false
}

// ProbeName returns the names an Event gives the probe that the probe
// builtin (and a map key of it) names full ("uprobe:/bin/app:main.f"):
// Event.Name ("main.f", "provider:name") and Event.Path. ok is false for
// a name that is none of the program's probes.
func (p *Program) ProbeName(full string) (name, path string, ok bool) {
	n, ok := p.names[full]
	return n.name, n.path, ok
}
