package functrace

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/go-delve/delve/pkg/dwarf/godwarf"

	"github.com/usdtkit/usdtkit/internal/bpfgen"
	"github.com/usdtkit/usdtkit/internal/gofunc"
	"github.com/usdtkit/usdtkit/uprobe"
)

// Go function tracing: the layout of a Go probe's event.
//
// Every Go site's event has the goroutine id in argument slot 0; then the
// values the filters and the histogram name, in the order the options name
// them, so that they are in the same slot at every site; then the other
// parameters (entry) or results (returns) in order; then the Fields paths.
// A value takes one slot per word it needs (a string two: pointer, read as
// bytes, and length), so at most bpfgen.MaxArgs slots fit; values that do
// not are left out with a warning.

// ErrGoNoDWARF is wrapped by errors about names of Go parameters in a
// binary without debug information.
var ErrGoNoDWARF = errors.New("Go binary without DWARF")

// GoValue is one decoded value of a Go function event.
type GoValue struct {
	// Name is the parameter or result name, or a field path ("s.hits").
	Name string
	// Type is its Go type as DWARF names it.
	Type string
	// Value is one of: int64 (signed integers), uint64 (unsigned), bool,
	// string (a Go string's bytes, at most StrLen-2 of them), Pointer,
	// Slice, Interface, or nil for a value that could not be read (Err
	// says why).
	Value any
	// Truncated reports a string or slice longer than what was read.
	Truncated bool
	// Err says why Value is nil: a fault reading user memory, or a value
	// a uprobe cannot read.
	Err string
}

// Pointer is an address read from a Go value; it prints as hex.
type Pointer uint64

func (p Pointer) String() string { return fmt.Sprintf("%#x", uint64(p)) }

// Slice is a Go slice: its length in elements and the start of its
// contents: Data for byte slices, Elems (int64, uint64, bool or Pointer)
// for others, at most 4 elements.
type Slice struct {
	Len   uint64
	Data  string
	Elems []any
}

// Interface is a Go interface value that is not nil: its type word (an
// itab for a non-empty interface such as error) and data word, and the
// dynamic type's name when the binary's symbol table names the type word
// ("*errors.errorString"; not for position-independent executables).
type Interface struct {
	Type, Data Pointer
	TypeName   string
}

// goProbe is how a Go probe's event slots make values.
type goProbe struct {
	results bool
	values  []goSlotValue
	// types names itabs and type descriptors by address, nil if unknown.
	types map[uint64]string
}

type goSlotValue struct {
	name, typ string
	kind      gofunc.Kind
	size      int64
	elemKind  gofunc.Kind
	elemSize  int64
	// slots are the event arguments of the value's words; -1 for a word
	// not read. For a slice: data, len, then element slots.
	slots  []int
	reason string
}

// goLayout builds the fetches of one Go site. refs are the names the
// filters and histogram need in fixed slots 1..len(refs).
type goLayout struct {
	site  bpfgen.Site
	probe goProbe
	// missing are values left out for lack of slots.
	missing []string
}

func (l *goLayout) add(f bpfgen.Fetch) int {
	l.site.Args = append(l.site.Args, f)
	return len(l.site.Args) - 1
}

func (l *goLayout) free() int { return bpfgen.MaxArgs - len(l.site.Args) }

// wordFetch returns the fetch of a word of size bytes.
func wordFetch(fn *uprobe.Function, w gofunc.Word, size int64, signed bool) (bpfgen.Fetch, error) {
	return bpfgen.WordFetch(fn.Machine, w.Reg, w.SPOffset, size, signed)
}

// addValue gives p slots, if they fit.
func (l *goLayout) addValue(fn *uprobe.Function, p *gofunc.Param) error {
	v := goSlotValue{name: p.Name, typ: p.Type, kind: p.Kind, size: p.Size, elemKind: p.ElemKind, elemSize: p.ElemSize, reason: p.Reason}
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
		f, err := wordFetch(fn, p.Words[0], p.Size, p.Kind == gofunc.Int)
		if err != nil {
			return err
		}
		v.slots = []int{l.add(f)}
	case gofunc.Interface:
		for _, w := range p.Words[:2] {
			f, err := wordFetch(fn, w, 8, false)
			if err != nil {
				return err
			}
			v.slots = append(v.slots, l.add(f))
		}
	case gofunc.String, gofunc.Slice:
		data, err := wordFetch(fn, p.Words[0], 8, false)
		if err != nil {
			return err
		}
		n, err := wordFetch(fn, p.Words[1], 8, false)
		if err != nil {
			return err
		}
		ds := l.add(data)
		ns := l.add(n)
		v.slots = []int{ds, ns}
		byteData := p.Kind == gofunc.String || p.ElemSize == 1
		if byteData {
			l.site.Bytes |= 1 << ds
			l.site.BytesLen[ds] = uint8(ns)
		} else if p.Kind == gofunc.Slice && p.ElemKind != 0 && p.Words[0].Reg != "" {
			// The first elements, read through the data pointer.
			base := data
			for i := int64(0); i < 4 && l.free() > 0; i++ {
				f := bpfgen.Fetch{Kind: bpfgen.FetchMem, Size: uint8(min(p.ElemSize, 8)), Signed: p.ElemKind == gofunc.Int,
					HasBase: true, Reg: base.Reg, Offset: i * p.ElemSize}
				v.slots = append(v.slots, l.add(f))
			}
		}
	}
	l.probe.values = append(l.probe.values, v)
	return nil
}

// addField gives slots to a field path through a pointer parameter:
// "s.hits", "s.next.hits".
func (l *goLayout) addField(fn *uprobe.Function, params []gofunc.Param, path string) error {
	root, rest, ok := strings.Cut(path, ".")
	if !ok {
		return fmt.Errorf("field %q: want PARAM.FIELD", path)
	}
	var p *gofunc.Param
	for i := range params {
		if params[i].Name == root {
			p = &params[i]
		}
	}
	if p == nil {
		return fmt.Errorf("field %q: no parameter %s", path, root)
	}
	if p.Kind != gofunc.Pointer || p.Struct == nil {
		return fmt.Errorf("field %q: %s is a %s, not a pointer to a struct", path, root, p.Type)
	}
	st := p.Struct
	var hops []int64
	var leaf godwarf.Type
	for _, name := range strings.Split(rest, ".") {
		if st == nil {
			return fmt.Errorf("field %q: %s is not a struct or a pointer to one", path, name)
		}
		var fld *godwarf.StructField
		for _, f := range st.Field {
			if f.Name == name {
				fld = f
			}
		}
		if fld == nil {
			return fmt.Errorf("field %q: %s has no field %s", path, st.StructName, name)
		}
		if leaf != nil {
			// The previous field was a pointer: a new hop.
			hops = append(hops, fld.ByteOffset)
		} else if len(hops) == 0 {
			hops = append(hops, fld.ByteOffset)
		} else {
			hops[len(hops)-1] += fld.ByteOffset
		}
		leaf = nil
		st = nil
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
		return fmt.Errorf("field %q: a struct value; name one of its fields", path)
	}
	if len(hops) > 1+bpfgen.MaxDerefs {
		return fmt.Errorf("field %q: more than %d pointers to follow", path, bpfgen.MaxDerefs)
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
		return fmt.Errorf("field %q: type %s; only integer, bool and pointer fields can be read", path, leaf)
	}
	if l.free() == 0 {
		l.missing = append(l.missing, path)
		return nil
	}
	base, err := wordFetch(fn, p.Words[0], 8, false)
	if err != nil {
		return err
	}
	f := bpfgen.Fetch{Kind: bpfgen.FetchMem, Size: uint8(size), Signed: kind == gofunc.Int, HasBase: true, Reg: base.Reg, Offset: hops[0]}
	if base.Kind == bpfgen.FetchMem {
		return fmt.Errorf("field %q: %s is passed on the stack; fields are read through registers only", path, root)
	}
	for i, h := range hops[1:] {
		f.Path[i] = int32(h)
		f.Derefs++
	}
	l.probe.values = append(l.probe.values, goSlotValue{name: path, typ: leaf.String(), kind: kind, size: size, slots: []int{l.add(f)}})
	return nil
}

// GoFilter keeps a hit of a Go function only when the named parameter,
// result or field compares with Filter.Value as Filter.Op says
// (Filter.Arg is ignored; Filter.Signed is set from the value's type).
type GoFilter struct {
	Name   string
	Filter Filter
}

// goSites builds the sites of one Go function: its entry after the
// prologue, or every RET for a return probe.
func (t *Tracer) goSites(fn *uprobe.Function, gf *gofunc.Func, goidOff int64, gReg string, opts *TraceOptions, id uint32) (offs []uint64, site bpfgen.Site, err error) {
	l := &goLayout{}
	// Slot 0: the goroutine id, *(g + goidOff).
	if goidOff >= 0 {
		g, err := bpfgen.GoIDFetch(fn.Machine, gReg, goidOff)
		if err != nil {
			return nil, site, err
		}
		l.add(g)
	} else {
		l.add(bpfgen.Fetch{Kind: bpfgen.FetchConst, Size: 8})
	}
	values := gf.Params
	if fn.Return {
		values = gf.Results
	}
	used := make(map[string]bool)
	for _, ref := range opts.goRefs() {
		var p *gofunc.Param
		for i := range values {
			if values[i].Name == ref {
				p = &values[i]
			}
		}
		switch {
		case p != nil:
			switch p.Kind {
			case gofunc.Int, gofunc.Uint, gofunc.Bool, gofunc.Pointer:
			default:
				return nil, site, fmt.Errorf("%s: %s is a %s; filters and histograms take integers, bools and pointers", fn.Name(), ref, p.Type)
			}
			if err := l.addValue(fn, p); err != nil {
				return nil, site, err
			}
		case strings.Contains(ref, ".") && !fn.Return:
			if err := l.addField(fn, gf.Params, ref); err != nil {
				return nil, site, fmt.Errorf("%s: %w", fn.Name(), err)
			}
		default:
			return nil, site, fmt.Errorf("%s has no %s %q (it has %s)", fn.Name(), map[bool]string{false: "parameter", true: "result"}[fn.Return], ref, valueNames(values))
		}
		used[ref] = true
	}
	for i := range values {
		if used[values[i].Name] {
			continue
		}
		if err := l.addValue(fn, &values[i]); err != nil {
			return nil, site, err
		}
	}
	if !fn.Return {
		for _, path := range opts.Fields {
			root, _, _ := strings.Cut(path, ".")
			if used[path] || !slices.ContainsFunc(gf.Params, func(p gofunc.Param) bool { return p.Name == root && p.Struct != nil }) {
				// Fields apply to the functions whose parameter of that
				// name is a pointer to a struct.
				continue
			}
			if err := l.addField(fn, gf.Params, path); err != nil {
				return nil, site, fmt.Errorf("%s: %w", fn.Name(), err)
			}
		}
	}
	if len(l.missing) > 0 {
		t.Warnings = append(t.Warnings, fmt.Errorf("%s in %s: %s not read: an event has %d values", fn.Name(), fn.Path, strings.Join(l.missing, ", "), bpfgen.MaxArgs))
	}
	l.probe.results = fn.Return
	for int(id) >= len(t.goProbes) {
		t.goProbes = append(t.goProbes, nil)
	}
	t.goProbes[id] = &l.probe
	var signed uint16
	for _, v := range l.probe.values {
		if v.kind == gofunc.Int && len(v.slots) > 0 {
			signed |= 1 << v.slots[0]
		}
	}
	for int(id) >= len(t.SignedArgs) {
		t.SignedArgs = append(t.SignedArgs, 0)
	}
	t.SignedArgs[id] = signed
	addrs := []uint64{gf.Site}
	if fn.Return {
		addrs = gf.Returns
	}
	for _, a := range addrs {
		offs = append(offs, fn.Symbol.Offset+(a-gf.Entry))
	}
	l.site.Probe = id
	return offs, l.site, nil
}

func valueNames(ps []gofunc.Param) string {
	if len(ps) == 0 {
		return "none"
	}
	names := make([]string, len(ps))
	for i := range ps {
		names[i] = ps[i].Name
	}
	return strings.Join(names, ", ")
}

// goRefs are the value names filters and the histogram use, in order.
func (o *TraceOptions) goRefs() []string {
	var refs []string
	seen := make(map[string]bool)
	add := func(n string) {
		if n != "" && !seen[n] {
			seen[n] = true
			refs = append(refs, n)
		}
	}
	for _, f := range o.GoFilters {
		add(f.Name)
	}
	add(o.GoHist)
	return refs
}

// GoEvent is an Event of a Go function decoded by name.
type GoEvent struct {
	// GoID is the goroutine id (0 if the binary does not say where it is).
	GoID uint64
	// Results reports a return event: Values are the results.
	Results bool
	Values  []GoValue
}

// DecodeGo decodes ev into ge if ev is a Go function's event, reusing
// ge.Values, and reports whether it was.
func (t *Tracer) DecodeGo(ev *Event, ge *GoEvent) bool {
	if int(ev.Probe) >= len(t.goProbes) || t.goProbes[ev.Probe] == nil {
		return false
	}
	gp := t.goProbes[ev.Probe]
	ge.Results = gp.results
	ge.GoID = arg(ev, 0)
	ge.Values = ge.Values[:0]
	for i := range gp.values {
		ge.Values = append(ge.Values, gp.values[i].decode(ev, gp.types))
	}
	return true
}

func arg(ev *Event, i int) uint64 {
	if i < len(ev.Args) {
		return ev.Args[i]
	}
	return 0
}

func (v *goSlotValue) decode(ev *Event, types map[uint64]string) GoValue {
	gv := GoValue{Name: v.name, Type: v.typ}
	if v.kind == gofunc.Unreadable {
		gv.Err = v.reason
		return gv
	}
	for _, s := range v.slots[:min(len(v.slots), 2)] {
		if s >= len(ev.Args) {
			gv.Err = "not in the event"
			return gv
		}
		if ev.Faults&(1<<s) != 0 && !(v.kind == gofunc.String || v.kind == gofunc.Slice) {
			gv.Err = "could not read user memory"
			return gv
		}
	}
	x := ev.Args[v.slots[0]]
	switch v.kind {
	case gofunc.Int:
		gv.Value = int64(x)
	case gofunc.Uint:
		gv.Value = x
	case gofunc.Bool:
		gv.Value = x&0xff != 0
	case gofunc.Pointer:
		gv.Value = Pointer(x)
	case gofunc.Interface:
		if x == 0 {
			gv.Value = nil
			return gv
		}
		gv.Value = Interface{Type: Pointer(x), Data: Pointer(ev.Args[v.slots[1]]), TypeName: types[x]}
	case gofunc.String, gofunc.Slice:
		n := ev.Args[v.slots[1]]
		data := ""
		if ev.BytesArgs&(1<<v.slots[0]) != 0 {
			data = ev.Strings[v.slots[0]]
			gv.Truncated = ev.Truncated&(1<<v.slots[0]) != 0
		}
		if ev.Faults&(1<<v.slots[0]) != 0 && n != 0 {
			gv.Err = "could not read the contents"
		}
		if v.kind == gofunc.String {
			gv.Value = data
			return gv
		}
		sl := Slice{Len: n, Data: data}
		for i, s := range v.slots[2:] {
			if uint64(i) >= n || s >= len(ev.Args) || ev.Faults&(1<<s) != 0 {
				break
			}
			e := ev.Args[s]
			switch v.elemKind {
			case gofunc.Int:
				sl.Elems = append(sl.Elems, int64(e))
			case gofunc.Bool:
				sl.Elems = append(sl.Elems, e != 0)
			case gofunc.Pointer:
				sl.Elems = append(sl.Elems, Pointer(e))
			default:
				sl.Elems = append(sl.Elems, e)
			}
		}
		gv.Truncated = gv.Truncated || (len(v.slots) > 2 && uint64(len(sl.Elems)) < n)
		gv.Value = sl
	}
	return gv
}
