package btgen

import (
	"debug/elf"
	"fmt"
	"maps"
	"slices"

	"github.com/cilium/ebpf"

	"github.com/usdtkit/usdtkit/internal/bpf/argread"
	"github.com/usdtkit/usdtkit/internal/lang/btlang"
	"github.com/usdtkit/usdtkit/internal/lang/layout"
	"github.com/usdtkit/usdtkit/internal/lang/printf"
)

// Support is the pass between checking and generating: it returns what a
// checked program asks that Generate cannot build, as a *btlang.Error at
// its position ("… is not supported yet"), or the Plan Generate builds
// from: what support found out about the program (each map's layout, the
// blocks that run as counting blocks and the maps they count into). What
// it lets through, Plan.Generate builds (or refuses for a limit of the
// kernel's: instructions, stack, scratch space, sites).
//
// It walks the program as Generate does, in the same order, so that the
// error it returns is the first Generate would have met: statements after
// one that always leaves, and unroll bodies run no times, are not built
// and not looked at.
func Support(prog *btlang.Program, opts *Options) (*Plan, error) {
	o, err := withDefaults(prog, opts)
	if err != nil {
		return nil, err
	}
	plan := &Plan{prog: prog, opts: o, mapIdx: map[*btlang.Map]int{}, defaultRing: opts == nil || opts.RingSize == 0}
	machine := o.Machine
	deleted := deletedMaps(prog)
	s := &support{maps: map[*btlang.Map]*MapInfo{}}
	for i, m := range prog.Maps {
		mi, err := mapInfo(m, i, !deleted[m])
		if err != nil {
			return nil, err
		}
		if o.StackKeys == StackKeysCopy {
			if err := userMap(&mi, &o); err != nil {
				return nil, err
			}
		}
		s.maps[m] = &mi
		plan.maps = append(plan.maps, mi)
		plan.mapIdx[m] = i
	}
	for i, b := range prog.Blocks {
		kind, _, err := special(b)
		if err != nil {
			return nil, err
		}
		if kind == btlang.ProbeProfile && machine != elf.EM_X86_64 {
			return nil, &btlang.Error{Pos: b.At, Msg: fmt.Sprintf("profile probes on %v: %v", machine, ebpf.ErrNotSupported)}
		}
		hasEvent := i < len(o.Events) && o.Events[i] != nil
		if kind != 0 && hasEvent {
			return nil, unsupported(b.At, "an event of a BEGIN, END or interval block")
		}
		if kind == 0 && len(o.Sites[i]) == 0 {
			// Every probe of the block was left out: Generate builds
			// a program that does nothing.
			continue
		}
		s.special, s.machine = kind, machine
		if kind == 0 {
			if err := siteSupport(b, o.Sites[i], hasEvent); err != nil {
				return nil, err
			}
		}
		if err := s.block(b); err != nil {
			return nil, err
		}
	}
	// Counting blocks (count.go), and the maps they count into, which
	// every block then adds to atomically.
	plan.counts = make([][]*btlang.MapRef, len(prog.Blocks))
	plan.isCount = make([]bool, len(prog.Blocks))
	plan.atomic = map[*btlang.Map]bool{}
	for i, b := range prog.Blocks {
		hasEvent := i < len(o.Events) && o.Events[i] != nil
		plan.counts[i], plan.isCount[i] = countBlock(b, plan.maps, plan.mapIdx, hasEvent)
		for _, r := range plan.counts[i] {
			plan.atomic[r.Map] = true
		}
	}
	return plan, nil
}

// Plan is what the support pass found out about a program that Generate
// needs: options with their defaults, each map's layout, the counting
// blocks (count.go) and the maps they count into. Support returns it;
// Plan.Generate builds the program.
type Plan struct {
	prog        *btlang.Program
	opts        Options
	defaultRing bool // Options.RingSize was 0: Generate sizes the ring
	maps        []MapInfo
	mapIdx      map[*btlang.Map]int
	counts      [][]*btlang.MapRef // each block's count() statements, if it is a counting block
	isCount     []bool
	atomic      map[*btlang.Map]bool // maps a counting block counts into
}

// WithCopyStr returns the plan for a kernel whose bpf_copy_from_user_str
// kfunc has BTF type id id (Options.CopyStr).
func (p *Plan) WithCopyStr(id uint32) *Plan {
	q := *p
	q.opts.CopyStr = id
	return &q
}

// unsupported returns Support's error for what cannot be generated yet.
func unsupported(pos btlang.Pos, format string, args ...any) error {
	return &btlang.Error{Pos: pos, Msg: fmt.Sprintf(format, args...) + " is not supported yet"}
}

// support is the walk of Support.
type support struct {
	maps    map[*btlang.Map]*MapInfo
	special btlang.ProbeKind
	machine elf.Machine
	err     error
}

// fail keeps the first error, as gen.fail.
func (s *support) fail(err error) {
	if s.err == nil {
		s.err = err
	}
}

func (s *support) block(b *btlang.ProbeBlock) error {
	for _, v := range b.Vars {
		switch v.Type.Kind {
		case btlang.KindInt, btlang.KindString, btlang.KindBuf, btlang.KindTimestamp, btlang.KindPtr, btlang.KindRecord, btlang.KindArray:
		case btlang.KindTuple:
			if !tupleElems(v.Type) {
				return unsupported(v.Pos, "a %s variable", v.Type)
			}
		default:
			return unsupported(v.Pos, "a %s variable", v.Type)
		}
	}
	if b.Pred != nil {
		s.intExpr(b.Pred)
	}
	s.stmts(b.Body)
	return s.err
}

func (s *support) stmts(list []btlang.Stmt) {
	for _, st := range list {
		s.stmt(st)
		if leaves(st) {
			return
		}
	}
}

func (s *support) stmt(st btlang.Stmt) {
	switch st := st.(type) {
	case *btlang.If:
		s.intExpr(st.Cond)
		s.stmts(st.Then)
		s.stmts(st.Else)
	case *btlang.Return, *btlang.Break, *btlang.Continue:
	case *btlang.Unroll:
		if st.N > 0 {
			s.stmts(st.Body)
		}
	case *btlang.While:
		s.intExpr(st.Cond)
		s.stmts(st.Body)
	case *btlang.Assign:
		s.assign(st.At, st.Target, st.Op, st.Value)
	case *btlang.Let:
		if st.Init != nil {
			s.assign(st.At, st.Var, "=", st.Init)
		}
	case *btlang.IncDec:
		op := "+="
		if st.Op == "--" {
			op = "-="
		}
		s.assign(st.At, st.Target, op, nil)
	case *btlang.ExprStmt:
		s.call(st.X)
	default:
		s.fail(unsupported(st.Pos(), "this statement"))
	}
}

// assign is gen.assign's walk; value nil is ++ or --'s literal 1.
func (s *support) assign(at btlang.Pos, target btlang.Expr, op string, value btlang.Expr) {
	intValue := func() {
		if value != nil {
			s.intExpr(value)
		}
	}
	_, isCompound := compound(op)
	switch t := target.(type) {
	case *btlang.Var:
		if t.Decl.Type.Kind == btlang.KindString {
			if op != "=" {
				s.fail(unsupported(at, "%s on a string", op))
				return
			}
			s.strExpr(value)
			return
		}
		if t.Decl.Type.Kind == btlang.KindTuple {
			s.tupleExpr(value)
			return
		}
		if t.Decl.Type.Kind == btlang.KindBuf {
			s.bufExpr(value)
			return
		}
		if t.Decl.Type.Kind == btlang.KindTimestamp {
			s.timeExpr(value)
			return
		}
		if isValue(t.Decl.Type) {
			s.valueExpr(value)
			return
		}
		intValue()
		if !isCompound && op != "=" {
			s.fail(unsupported(at, "operator %s", op))
		}
	case *btlang.MapRef:
		m := t.Map
		if m == nil {
			s.fail(unsupported(t.At, "this map"))
			return
		}
		mi := s.maps[m]
		if mi == nil {
			s.fail(unsupported(t.At, "this map"))
			return
		}
		if m.Agg != btlang.AggNone {
			call, ok := value.(*btlang.Call)
			if !ok {
				s.fail(unsupported(at, "this aggregation"))
				return
			}
			s.aggregate(t, call, mi)
			return
		}
		if m.Value.Kind == btlang.KindString {
			if op != "=" {
				s.fail(unsupported(at, "%s on a string", op))
				return
			}
			s.strExpr(value)
			s.key(t, mi)
			return
		}
		if m.Value.Kind == btlang.KindTuple {
			s.tupleExpr(value)
			s.key(t, mi)
			return
		}
		if m.Value.Kind == btlang.KindBuf {
			s.bufExpr(value)
			s.key(t, mi)
			return
		}
		if m.Value.Kind == btlang.KindTimestamp {
			s.timeExpr(value)
			s.key(t, mi)
			return
		}
		if m.Value.Kind == btlang.KindUsym {
			if r, ok := value.(*btlang.MapRef); ok {
				s.mapRead(r, btlang.KindUsym)
			} else {
				s.usym(value)
			}
			s.key(t, mi)
			return
		}
		if isValue(m.Value) {
			s.valueExpr(value)
			s.key(t, mi)
			return
		}
		if mi.ValueName {
			if op != "=" {
				s.fail(unsupported(at, "%s on a %s", op, m.Value))
				return
			}
			s.nameID(value)
		} else {
			intValue()
		}
		s.key(t, mi)
		if !isCompound && op != "=" {
			s.fail(unsupported(at, "operator %s", op))
		}
	default:
		s.fail(unsupported(at, "assigning to this"))
	}
}

// aggregate is the walk of gen.aggregate and gen.keyRecord.
func (s *support) aggregate(r *btlang.MapRef, call *btlang.Call, mi *MapInfo) {
	needsValue := r.Map.Agg != btlang.AggCount
	if mi.User {
		needsValue = r.Map.Agg == btlang.AggSum
	}
	if needsValue {
		if len(call.Args) == 0 {
			s.fail(unsupported(call.At, "%s() without a value", call.Name))
			return
		}
		s.intExpr(call.Args[0])
	}
	s.key(r, mi)
}

// key is the walk of gen.keyAt: an array's key is its slot, no
// expression.
func (s *support) key(r *btlang.MapRef, mi *MapInfo) {
	if mi.Array || len(r.Keys) == 0 {
		return
	}
	if len(r.Keys) != len(mi.Keys) {
		s.fail(unsupported(r.At, "a key of %d fields for %s", len(r.Keys), r.Name))
		return
	}
	for i, k := range r.Keys {
		switch {
		case mi.KeyProbe[i]:
			s.nameID(k)
		case i < len(mi.KeyUsym) && mi.KeyUsym[i]:
			if mi.User {
				s.fail(unsupported(k.Pos(), "a usym() key with stacks unwound with CFI (--unwind cfi)"))
				return
			}
			s.usym(k)
		case i < len(mi.KeyBuf) && mi.KeyBuf[i]:
			s.bufExpr(k)
		case i < len(mi.KeyTime) && mi.KeyTime[i]:
			s.timeExpr(k)
		case mi.KeyStacks[i] != nil:
		case mi.Keys[i].Kind == layout.KeyString:
			s.strExpr(k)
		case mi.Keys[i].Kind == layout.KeyValue:
			s.valueExpr(k)
		default:
			s.intExpr(k)
		}
	}
}

// nameID is the walk of gen.nameID.
func (s *support) nameID(e btlang.Expr) {
	r, ok := e.(*btlang.MapRef)
	if !ok {
		return
	}
	if r.Map == nil || r.Map.Agg != btlang.AggNone {
		s.fail(unsupported(r.At, "reading %s here", r.Name))
		return
	}
	s.mapKey(r)
}

// mapKey walks the key of r, a map the program assigns.
func (s *support) mapKey(r *btlang.MapRef) {
	mi := s.maps[r.Map]
	if mi == nil {
		s.fail(unsupported(r.At, "reading %s here", r.Name))
		return
	}
	s.key(r, mi)
}

// usym is the walk of gen.usymAt.
func (s *support) usym(e btlang.Expr) {
	c, ok := e.(*btlang.Call)
	if !ok || c.Name != "usym" || len(c.Args) != 1 {
		s.fail(unsupported(e.Pos(), "this usym value"))
		return
	}
	s.intExpr(c.Args[0])
}

// mapRead is the walk of gen.mapReadInt, gen.mapReadStr and
// gen.mapReadBytes.
func (s *support) mapRead(r *btlang.MapRef, kind btlang.Kind) {
	if r.Map == nil || r.Map.Agg != btlang.AggNone || r.Map.Value.Kind != kind && !(kind == btlang.KindInt && r.Map.Value.Kind == btlang.KindPtr) {
		s.fail(unsupported(r.At, "reading %s here", r.Name))
		return
	}
	s.mapKey(r)
}

// intExpr is the walk of gen.intExpr.
func (s *support) intExpr(e btlang.Expr) {
	if t := e.Type(); t.Kind != btlang.KindInt && t.Kind != btlang.KindPtr {
		s.fail(unsupported(e.Pos(), "a %s value here", t))
		return
	}
	switch e := e.(type) {
	case *btlang.IntLit, *btlang.ArgField, *btlang.Var, *btlang.Sizeof:
	case *btlang.Deref, *btlang.FieldAccess, *btlang.Index:
		s.place(e)
		if size := btlang.CSize(cType(e)); size != 1 && size != 2 && size != 4 && size != 8 {
			s.fail(unsupported(e.Pos(), "reading a %s", cType(e)))
		}
	case *btlang.Builtin:
		if e.Arg < 0 && !intBuiltins[e.Name] {
			s.fail(unsupported(e.At, "builtin %s", e.Name))
		}
	case *btlang.MapRef:
		s.mapRead(e, btlang.KindInt)
	case *btlang.Unary:
		s.intExpr(e.X)
		if e.Op != "-" && e.Op != "~" && e.Op != "!" {
			s.fail(unsupported(e.At, "operator %s", e.Op))
		}
	case *btlang.Binary:
		s.binary(e)
	case *btlang.Cast:
		s.intExpr(e.X)
	case *btlang.Call:
		switch e.Name {
		case "reg":
			if lit, _ := e.Args[0].(*btlang.StrLit); lit == nil || s.machine != elf.EM_X86_64 || s.special != 0 {
				s.fail(unsupported(e.At, "reg() here"))
			}
		case "strncmp":
			s.strExpr(e.Args[0])
			s.strExpr(e.Args[1])
		case "bswap":
			s.intExpr(e.Args[0])
		case "strcontains":
			_, a := e.Args[0].(*btlang.StrLit)
			_, b := e.Args[1].(*btlang.StrLit)
			if !a || !b {
				s.fail(unsupported(e.At, "strcontains() of strings that are not both literals"))
			}
		default:
			s.fail(unsupported(e.At, "%s() here", e.Name))
		}
	case *btlang.Ternary:
		s.intExpr(e.Cond)
		s.intExpr(e.Then)
		s.intExpr(e.Else)
	case *btlang.TupleIndex:
		s.tupleExpr(e.X)
	case *btlang.IncDecExpr:
		if r, ok := e.Target.(*btlang.MapRef); ok {
			if r.Map == nil || r.Map.Agg != btlang.AggNone || r.Map.Value.Kind != btlang.KindInt && r.Map.Value.Kind != btlang.KindPtr || s.maps[r.Map] == nil || s.maps[r.Map].ValueName || s.maps[r.Map].User {
				s.fail(unsupported(e.At, "%s of %s", e.Op, r.Name))
				return
			}
			s.key(r, s.maps[r.Map])
		}
	default:
		s.fail(unsupported(e.Pos(), "this expression (%s)", btlang.ExprString(e)))
	}
}

// timeExpr is the walk of gen.timeExpr.
func (s *support) timeExpr(e btlang.Expr) {
	if t := e.Type(); t.Kind != btlang.KindTimestamp {
		s.fail(unsupported(e.Pos(), "a %s value here", t))
		return
	}
	switch e := e.(type) {
	case *btlang.Var:
	case *btlang.MapRef:
		s.mapRead(e, btlang.KindTimestamp)
	case *btlang.TupleIndex:
		s.tupleExpr(e.X)
	case *btlang.Call:
		if _, ok := e.Args[0].(*btlang.StrLit); e.Name != "strftime" || !ok {
			s.fail(unsupported(e.At, "%s() here", e.Name))
			return
		}
		s.intExpr(e.Args[1])
	default:
		s.fail(unsupported(e.Pos(), "this strftime() value (%s)", btlang.ExprString(e)))
	}
}

// bufExpr is the walk of gen.bufExpr.
func (s *support) bufExpr(e btlang.Expr) {
	if t := e.Type(); t.Kind != btlang.KindBuf {
		s.fail(unsupported(e.Pos(), "a %s value here", t))
		return
	}
	switch e := e.(type) {
	case *btlang.Var:
	case *btlang.MapRef:
		s.mapRead(e, btlang.KindBuf)
	case *btlang.Call:
		if e.Name != "buf" || len(e.Args) != 2 {
			s.fail(unsupported(e.At, "%s() here", e.Name))
			return
		}
		if _, ok := btlang.ConstValue(e.Args[1]); !ok {
			s.intExpr(e.Args[1])
		}
		if e.Args[0].Type().Kind == btlang.KindString {
			s.strExpr(e.Args[0])
		} else {
			s.intExpr(e.Args[0])
		}
	default:
		s.fail(unsupported(e.Pos(), "this buffer expression (%s)", btlang.ExprString(e)))
	}
}

// tupleExpr is the walk of gen.tupleExpr.
func (s *support) tupleExpr(e btlang.Expr) {
	if t := e.Type(); t.Kind != btlang.KindTuple || !tupleElems(t) {
		s.fail(unsupported(e.Pos(), "a %s value here", t))
		return
	}
	switch e := e.(type) {
	case *btlang.Var:
	case *btlang.Tuple:
		for _, x := range e.Elems {
			switch x.Type().Kind {
			case btlang.KindInt, btlang.KindPtr:
				s.intExpr(x)
			case btlang.KindString:
				s.strExpr(x)
			case btlang.KindTimestamp:
				s.timeExpr(x)
			case btlang.KindRecord, btlang.KindArray:
				s.valueExpr(x)
			default:
				s.tupleExpr(x)
			}
		}
	case *btlang.MapRef:
		s.mapRead(e, btlang.KindTuple)
	case *btlang.TupleIndex:
		s.tupleExpr(e.X)
	case *btlang.Ternary:
		s.intExpr(e.Cond)
		s.tupleExpr(e.Then)
		s.tupleExpr(e.Else)
	default:
		s.fail(unsupported(e.Pos(), "this tuple expression (%s)", btlang.ExprString(e)))
	}
}

// intBuiltins are the builtins gen.builtin reads, besides argN.
var intBuiltins = map[string]bool{
	"retval": true, "goid": true, "pid": true, "tid": true, "uid": true, "gid": true,
	"nsecs": true, "cpu": true, "elapsed": true, "cpid": true, "rand": true, "numaid": true, "cgroup": true,
}

// binary is the walk of gen.binary.
func (s *support) binary(e *btlang.Binary) {
	switch {
	case e.Op == "&&" || e.Op == "||":
		s.intExpr(e.X)
		s.intExpr(e.Y)
	case e.X.Type().Kind == btlang.KindBuf:
		s.bufExpr(e.X)
		s.bufExpr(e.Y)
	case e.X.Type().Kind == btlang.KindArray:
		s.valueExpr(e.X)
		s.valueExpr(e.Y)
	case e.X.Type().Kind == btlang.KindString:
		if e.Op != "==" && e.Op != "!=" {
			s.fail(unsupported(e.At, "string operator %s", e.Op))
			return
		}
		s.strExpr(e.X)
		s.strExpr(e.Y)
	default:
		s.intExpr(e.X)
		s.intExpr(e.Y)
		if _, ok := aluOps[e.Op]; !ok {
			if _, ok := cmpOps[e.Op]; !ok {
				s.fail(unsupported(e.At, "operator %s", e.Op))
			}
		}
	}
}

// strExpr is the walk of gen.strExpr.
func (s *support) strExpr(e btlang.Expr) {
	if t := e.Type(); t.Kind != btlang.KindString {
		s.fail(unsupported(e.Pos(), "a %s value here", t))
		return
	}
	switch e := e.(type) {
	case *btlang.StrLit, *btlang.Var, *btlang.ArgField:
		return
	case *btlang.Builtin:
		if e.Name == "comm" {
			return
		}
	case *btlang.Call:
		if e.Name != "str" {
			break
		}
		_, literal := e.Args[len(e.Args)-1].(*btlang.IntLit)
		variable := len(e.Args) == 2 && !literal
		if e.Args[0].Type().Kind == btlang.KindString {
			if variable {
				s.fail(unsupported(e.Args[1].Pos(), "a length of str() of a string that is not a literal"))
			}
			s.strExpr(e.Args[0])
			return
		}
		if variable {
			s.intExpr(e.Args[1])
		}
		s.intExpr(e.Args[0])
		return
	case *btlang.Ternary:
		s.intExpr(e.Cond)
		s.strExpr(e.Then)
		s.strExpr(e.Else)
		return
	case *btlang.MapRef:
		s.mapRead(e, btlang.KindString)
		return
	case *btlang.TupleIndex:
		s.tupleExpr(e.X)
		return
	case *btlang.Deref, *btlang.FieldAccess, *btlang.Index:
		s.place(e)
		return
	}
	s.fail(unsupported(e.Pos(), "this string expression (%s)", btlang.ExprString(e)))
}

// place is the walk of gen.placeOf.
func (s *support) place(e btlang.Expr) {
	switch e := e.(type) {
	case *btlang.Deref:
		s.intExpr(e.X)
	case *btlang.FieldAccess:
		if e.Arrow {
			s.intExpr(e.X)
		} else {
			s.place(e.X)
		}
	case *btlang.Index:
		if e.X.Type().Kind == btlang.KindPtr {
			s.intExpr(e.X)
		} else {
			s.place(e.X)
		}
		if _, ok := btlang.ConstValue(e.I); !ok {
			if !userPlace(e) {
				s.fail(unsupported(e.At, "an index that is not a constant into an array held in a variable or map"))
				return
			}
			s.intExpr(e.I)
		}
	case *btlang.Var:
		if !isValue(e.Type()) {
			s.fail(unsupported(e.At, "a %s here", e.Type()))
		}
	case *btlang.MapRef:
		s.mapRead(e, e.Type().Kind)
	default:
		s.fail(unsupported(e.Pos(), "this value (%s)", btlang.ExprString(e)))
	}
}

// valueExpr is the walk of gen.valueBuf.
func (s *support) valueExpr(e btlang.Expr) {
	if !isValue(e.Type()) {
		s.fail(unsupported(e.Pos(), "a %s value here", e.Type()))
		return
	}
	s.place(e)
}

// call is the walk of gen.call.
func (s *support) call(c *btlang.Call) {
	switch c.Name {
	case "printf", "cat", "system":
		s.printf(c)
	case "exit":
	case "signal":
		if sig := signalOf(c); sig < 1 || sig > 64 {
			s.fail(unsupported(c.At, "this signal()"))
		}
	case "time":
		if len(c.Args) == 1 {
			if _, ok := c.Args[0].(*btlang.StrLit); !ok {
				s.fail(unsupported(c.At, "a time() format that is not a literal"))
			}
		}
	case "print", "clear", "zero":
		if _, isMap := c.Args[0].(*btlang.MapRef); !isMap && c.Name == "print" {
			s.printArgs(c.Args[:1], true)
			return
		}
		for _, a := range c.Args[1:] {
			if lit, ok := a.(*btlang.IntLit); !ok || lit.Val > 1<<31 {
				s.fail(unsupported(a.Pos(), "a print() top or divisor that is not a literal"))
				return
			}
		}
		r, _ := c.Args[0].(*btlang.MapRef)
		if r == nil || r.Map == nil {
			s.fail(unsupported(c.At, "%s() of this", c.Name))
			return
		}
		if s.maps[r.Map] == nil {
			s.fail(unsupported(c.At, "%s() of a map never assigned", c.Name))
		}
	case "delete":
		r, _ := c.Args[0].(*btlang.MapRef)
		if r == nil || r.Map == nil {
			s.fail(unsupported(c.At, "delete() of this"))
			return
		}
		mi := s.maps[r.Map]
		if mi == nil {
			s.fail(unsupported(c.At, "delete() of this"))
			return
		}
		if mi.User {
			s.fail(&btlang.Error{Pos: c.At, Msg: fmt.Sprintf("with stacks unwound with CFI (--unwind cfi), delete() of %s, a map keyed by ustack, is not supported: clear() it, or use --unwind fp", r.Name)})
			return
		}
		s.key(r, mi)
	default:
		s.fail(unsupported(c.At, "%s()", c.Name))
	}
}

// printf is the walk of gen.printf.
func (s *support) printf(c *btlang.Call) {
	lit, ok := c.Args[0].(*btlang.StrLit)
	if !ok {
		s.fail(unsupported(c.At, "a printf format that is not a literal"))
		return
	}
	if _, err := printf.Parse(lit.Val); err != nil {
		s.fail(&btlang.Error{Pos: lit.At, Msg: "printf: " + err.Error()})
		return
	}
	s.printArgs(c.Args[1:], false)
}

// printArgs checks the values a printf record carries, then walks them;
// value: print()'s, which may be a struct, union or array.
func (s *support) printArgs(args []btlang.Expr, value bool) {
	for _, a := range args {
		switch t := a.Type(); t.Kind {
		case btlang.KindRecord, btlang.KindArray:
			if !value {
				s.fail(unsupported(a.Pos(), "printing a %s", t))
				return
			}
		case btlang.KindInt, btlang.KindString, btlang.KindProbe, btlang.KindSym, btlang.KindUsym, btlang.KindStack, btlang.KindUsername, btlang.KindTuple, btlang.KindBuf, btlang.KindTimestamp, btlang.KindInet, btlang.KindPtr:
		default:
			s.fail(unsupported(a.Pos(), "printing a %s", t))
			return
		}
	}
	for _, a := range args {
		switch a.Type().Kind {
		case btlang.KindString:
			s.strExpr(a)
		case btlang.KindStack:
		case btlang.KindTuple:
			s.tupleExpr(a)
		case btlang.KindBuf:
			s.bufExpr(a)
		case btlang.KindTimestamp:
			s.timeExpr(a)
		case btlang.KindInet:
			c, ok := a.(*btlang.Call)
			if !ok || c.Name != "ntop" {
				s.fail(unsupported(a.Pos(), "this ntop() value"))
				return
			}
			for _, x := range c.Args {
				if p, ok := x.(*btlang.Call); !ok || p.Name != "pton" {
					s.intExpr(x)
				}
			}
		case btlang.KindUsym:
			s.usym(a)
		case btlang.KindUsername:
			if b, ok := a.(*btlang.Builtin); !ok || b.Name != "username" {
				s.fail(unsupported(a.Pos(), "this username value"))
			}
		case btlang.KindProbe, btlang.KindSym:
			s.nameID(a)
		case btlang.KindRecord, btlang.KindArray:
			s.valueExpr(a)
		default:
			s.intExpr(a)
		}
	}
}

// uses is what a block reads that its sites provide.
type uses struct {
	args           uint16 // bit N: argN
	ret, probe, fn bool   // retval, probe, func
}

// blockUses returns what block b reads that its sites provide, in every
// statement, built or not.
func blockUses(b *btlang.ProbeBlock) uses {
	var u uses
	btlang.Inspect(b, func(n btlang.Node) bool {
		if e, ok := n.(*btlang.Builtin); ok {
			switch {
			case e.Arg >= 0:
				u.args |= 1 << e.Arg
			case e.Name == "retval":
				u.ret = true
			case e.Name == "probe":
				u.probe = true
			case e.Name == "func":
				u.fn = true
			}
		}
		return true
	})
	return u
}

// namedArgs returns the args.NAME values block b reads, by name, true for
// a string, and whether it reads goid.
func namedArgs(b *btlang.ProbeBlock) (named map[string]bool, goid bool) {
	named = map[string]bool{}
	btlang.Inspect(b, func(n btlang.Node) bool {
		switch e := n.(type) {
		case *btlang.ArgField:
			if _, ok := named[e.Name]; !ok {
				named[e.Name] = e.Type().Kind == btlang.KindString
			}
		case *btlang.Builtin:
			goid = goid || e.Name == "goid"
		}
		return true
	})
	return named, goid
}

// siteSupport returns what block b reads that one of its sites cannot
// give, in the order Generate would meet it. event: the block sends an
// event, which names its probe.
func siteSupport(b *btlang.ProbeBlock, sites []Site, event bool) error {
	if len(sites) > argread.MaxSites {
		return &btlang.Error{Pos: b.At, Msg: fmt.Sprintf("%d sites exceed %d", len(sites), argread.MaxSites)}
	}
	u := blockUses(b)
	for i := range sites {
		s := &sites[i]
		for a := range argread.MaxArgs {
			if u.args&(1<<a) != 0 && a >= len(s.Args) {
				return &btlang.Error{Pos: b.At, Msg: fmt.Sprintf("arg%d is read but site %d (offset %#x in %s) has %d arguments", a, i, s.Offset, s.Path, len(s.Args))}
			}
		}
		if u.ret && s.Ret.Kind == 0 {
			return &btlang.Error{Pos: b.At, Msg: "retval is read but a site of this block is not a return probe"}
		}
	}
	named, goid := namedArgs(b)
	names := slices.Sorted(maps.Keys(named))
	for i := range sites {
		s := &sites[i]
		for _, name := range names {
			k := slices.IndexFunc(s.Named, func(f NamedFetch) bool { return f.Name == name })
			if k < 0 {
				return &btlang.Error{Pos: b.At, Msg: fmt.Sprintf("args.%s is read but site %d (offset %#x in %s) does not provide it", name, i, s.Offset, s.Path)}
			}
			if named[name] != (s.Named[k].Len.Kind != 0) {
				return &btlang.Error{Pos: b.At, Msg: fmt.Sprintf("args.%s is a string at some sites of the block and not at site %d", name, i)}
			}
		}
		if goid && s.GoID.Kind == 0 {
			return &btlang.Error{Pos: b.At, Msg: fmt.Sprintf("goid is read but site %d (offset %#x in %s) cannot read it", i, s.Offset, s.Path)}
		}
		if (u.probe || event) && s.Probe == "" && len(b.Probes) > 1 {
			return &btlang.Error{Pos: b.At, Msg: fmt.Sprintf("probe is read but site %d does not say which probe it is", i)}
		}
		if u.fn && s.Func == "" {
			return &btlang.Error{Pos: b.At, Msg: fmt.Sprintf("func is read but site %d (offset %#x in %s) does not say which function it probes", i, s.Offset, s.Path)}
		}
	}
	return nil
}

// signalOf returns the signal signal(SIG) sends: its number, by name or
// constant, or 0.
func signalOf(c *btlang.Call) int {
	if lit, ok := c.Args[0].(*btlang.StrLit); ok {
		return btlang.SignalNumber(lit.Val)
	}
	if v, ok := btlang.ConstValue(c.Args[0]); ok {
		return int(v)
	}
	return 0
}
