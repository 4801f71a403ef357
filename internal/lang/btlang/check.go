package btlang

import (
	"fmt"
	"net/netip"
	"slices"
	"sort"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/usdtkit/usdtkit/internal/lang/printf"
)

// DefaultStrLen is the length str() reads by default, NUL included, as
// bpftrace's BPFTRACE_STRLEN default.
const DefaultStrLen = 64

// maxStrLit bounds a string literal's bytes, NUL included, as bpftrace
// 0.17 does (STRING_SIZE) for every literal but printf's format.
const maxStrLit = 64

// MaxStackFrames is the most frames ustack and ustack(n) keep, as the
// kernel's default perf_event_max_stack.
const MaxStackFrames = 127

// maxLhistBuckets bounds lhist's (max-min)/step.
const maxLhistBuckets = 1000

// maxErrors is how many errors Check reports before it stops.
const maxErrors = 20

// ProbeArgs describes the arguments a probe provides.
type ProbeArgs struct {
	// Count is how many positional arguments (arg0, arg1…) the probe has,
	// or -1 when unknown (arg0 to arg11 are accepted).
	Count int
	// Named are the arguments the probe provides as args.NAME (Go and
	// DWARF-described functions), in order.
	Named []NamedArg
	// Refuse says, per builtin the probe does not provide ("arg" for
	// arg0…arg11, "args", "retval", "goid"), why, in one sentence that is
	// reported where the program uses it.
	Refuse map[string]string
	// GoID reports that the probe provides goid, the goroutine id (a
	// usdtkit extension for Go functions).
	GoID bool
}

// NamedArg is an argument reachable as args.NAME.
type NamedArg struct {
	Name string
	Type Type
	// Err, when not "", says in one sentence why the argument cannot be
	// read (its type, its place); using it is an error.
	Err string
}

// ProbeInfo answers the checker's questions about the probes of a program.
// The back end implements it, resolving paths, globs and Go functions.
type ProbeInfo interface {
	// Args returns the arguments p provides; for a wildcard probe, those
	// every match provides. It is called for usdt, uprobe and uretprobe
	// probes only. An error is reported at the probe's position.
	Args(p *Probe) (ProbeArgs, error)
}

// CheckOptions tunes Check. The zero value is the default.
type CheckOptions struct {
	// Probes describes the probes' arguments. Nil: every usdt and uprobe
	// probe has arguments arg0 to arg11 and no names (args.NAME is an
	// error).
	Probes ProbeInfo
	// StrLen is the length str(x) reads, NUL included. Default
	// DefaultStrLen; at most 1024.
	StrLen int
	// Unsafe allows what changes the traced processes, as bpftrace's
	// --unsafe: signal().
	Unsafe bool
}

// Check resolves the types of a parsed program and checks it against
// bpftrace's rules for the subset usdtkit compiles: every expression gets
// its Type, every MapRef its Map, every Var its Decl; prog.Maps lists the
// maps and each block's Vars its variables. It returns an ErrorList of
// every error found (at most 20), in source order, or nil.
//
// Check rejects, with one sentence each, what usdtkit does not compile yet
// and bpftrace programs that would print wrong answers (a division by the
// constant zero, reading an aggregation), so that a program Check accepts
// means the same under bpftrace and usdtkit.
func Check(prog *Program, opts *CheckOptions) error {
	c := &checker{strLen: DefaultStrLen, maps: map[string]*Map{}}
	if opts != nil {
		c.info, c.unsafe = opts.Probes, opts.Unsafe
		if opts.StrLen != 0 {
			if opts.StrLen < 1 || opts.StrLen > 1024 {
				return fmt.Errorf("check: field StrLen must be within 1 and 1024, not %d", opts.StrLen)
			}
			c.strLen = opts.StrLen
		}
	}
	if cerr := c.config(prog, opts); cerr != nil {
		return cerr
	}
	c.args = map[*Probe]ProbeArgs{}
	c.argErr = map[*Probe]error{}
	c.assigned = map[string]bool{}
	c.reported = map[string]bool{}
	// Maps may be read before, in source order, the assignment that gives
	// them their type (a uretprobe block before the uprobe that stores the
	// start time), so learn map types in passes until they settle, then
	// check for real.
	for range 8 {
		n := c.known()
		c.pass(prog, false)
		if c.known() == n {
			break
		}
	}
	c.errs = nil
	c.pass(prog, true)
	if len(c.errs) > 0 {
		sort.SliceStable(c.errs, func(i, j int) bool {
			a, b := c.errs[i].Pos, c.errs[j].Pos
			return a.Line < b.Line || a.Line == b.Line && a.Col < b.Col
		})
		if len(c.errs) > maxErrors {
			c.errs = c.errs[:maxErrors]
		}
		return c.errs
	}
	prog.Maps = prog.Maps[:0]
	for _, m := range c.maps {
		prog.Maps = append(prog.Maps, m)
	}
	slices.SortFunc(prog.Maps, func(a, b *Map) int { return strings.Compare(a.Name, b.Name) })
	return nil
}

type checker struct {
	info   ProbeInfo
	strLen int
	unsafe bool
	maps   map[string]*Map
	args   map[*Probe]ProbeArgs
	argErr map[*Probe]error
	errs   ErrorList
	// assigned holds the maps some statement assigns, even wrongly, so
	// that a failed assignment does not also report "never assigned".
	assigned map[string]bool
	// reported holds the maps already reported as read but never
	// assigned, which the end of the final pass does not report again.
	reported map[string]bool
	final    bool

	block *ProbeBlock
	vars  map[string]*Variable
	// stackPerf: ustack without a mode is ustack(perf) (stack_mode).
	stackPerf bool
	// scopes are the blocks ({ … }) the checker is in, innermost last.
	scopes []*scope
}

// known counts what the passes have learned about maps.
func (c *checker) known() int {
	n := 0
	for _, m := range c.maps {
		n++
		if m.Keys != nil {
			n++
		}
		if m.Value.Kind != KindNone || m.Agg != AggNone {
			n++
		}
	}
	return n
}

func (c *checker) errorf(pos Pos, format string, args ...any) {
	if c.final {
		c.errs = append(c.errs, errorf(pos, format, args...))
	}
}

func (c *checker) pass(prog *Program, final bool) {
	c.final = final
	for _, b := range prog.Blocks {
		c.block = b
		c.vars = map[string]*Variable{}
		b.Vars = nil
		c.probes(b)
		if b.Pred != nil {
			if t := c.expr(b.Pred); t.Kind != KindNone && t.Kind != KindInt {
				c.errorf(b.Pred.Pos(), "the predicate must be an integer, not %s", t)
			}
		}
		c.stmts(b.Body)
	}
	if final {
		for _, m := range c.maps {
			if m.Value.Kind == KindNone && m.Agg == AggNone && !c.assigned[m.Name] && !c.reported[m.Name] {
				c.errorf(m.Pos, "map %s is used but never assigned", m.Name)
			}
		}
	}
}

// probes asks ProbeInfo about each probe of the block once, and reports
// its errors in the final pass.
func (c *checker) probes(b *ProbeBlock) {
	for _, p := range b.Probes {
		switch p.Kind {
		case ProbeUSDT, ProbeUprobe, ProbeUretprobe:
		default:
			continue
		}
		if _, ok := c.args[p]; !ok {
			a := ProbeArgs{Count: -1}
			if c.info != nil {
				var err error
				a, err = c.info.Args(p)
				if err != nil {
					c.argErr[p] = err
					a = ProbeArgs{Count: -1}
				}
			}
			c.args[p] = a
		}
		if err := c.argErr[p]; err != nil {
			c.errorf(p.At, "%s: %v", p, err)
		}
	}
}

// scope is one block's names: those it declares with let, and those
// first assigned in it without one, which bpftrace 0.21 and later scope
// to it (usdtkit keeps such a variable the probe's, as bpftrace 0.17, but
// refuses a let of its name where 0.26 would see it).
type scope struct {
	lets     map[string]*Variable
	implicit map[string]bool
}

func (c *checker) stmts(list []Stmt) {
	c.scopes = append(c.scopes, &scope{lets: map[string]*Variable{}, implicit: map[string]bool{}})
	for _, s := range list {
		c.stmt(s)
	}
	c.scopes = c.scopes[:len(c.scopes)-1]
}

// lookupVar returns the variable name refers to here: the innermost let
// of it in scope, or else the probe's variable, nil if none.
func (c *checker) lookupVar(name string) *Variable {
	for i := len(c.scopes) - 1; i >= 0; i-- {
		if v := c.scopes[i].lets[name]; v != nil {
			return v
		}
	}
	return c.vars[name]
}

// let checks a declaration: bpftrace's scoping, which allows no
// shadowing, and the declared type.
func (c *checker) let(s *Let) {
	name := s.Var.Name
	for _, sc := range c.scopes {
		if sc.lets[name] != nil || sc.implicit[name] {
			c.errorf(s.Var.At, "%s is already declared in this block or one around it; bpftrace does not allow a second declaration to shadow it", name)
			return
		}
	}
	decl := &Variable{Name: name, Pos: s.Var.At, Declared: s.Of}
	if s.Var.Decl != nil {
		// The type the last pass learned from later assignments.
		decl.Type, decl.CType = s.Var.Decl.Type, s.Var.Decl.CType
	}
	if s.Of != nil {
		decl.Type, decl.CType = s.Of.widen(*s.Of), *s.Of
	}
	s.Var.Decl, s.Var.T = decl, decl.Type
	if !c.final || decl.Type.Kind != KindNone || s.Value != nil {
		// A variable never assigned (let $x; alone) takes no space.
		c.block.Vars = append(c.block.Vars, decl)
	}
	s.Init = s.Value
	if s.Value != nil && s.Of != nil {
		c.literalFits(s.Value, *s.Of)
		cast := &Cast{ExprBase: ExprBase{At: s.Value.Pos()}, To: *s.Of, X: s.Value}
		if s.Of.Kind == KindInt {
			cast.Size, cast.Signed = s.Of.Size, s.Of.Signed
		} else {
			cast.Ptr = true
			if e := s.Of.Elem; e != nil && e.Kind == KindInt {
				cast.Size, cast.Signed = e.Size, e.Signed
			}
		}
		s.Init = cast
	}
	if s.Init != nil {
		// The value is checked before the name is in scope, as in
		// let $x = $x + 1, which reads an outer $x.
		c.assignDecl(&Var{ExprBase: ExprBase{At: s.Var.At}, Name: name}, decl, "=", s.Init)
	}
	c.scopes[len(c.scopes)-1].lets[name] = decl
}

// literalFits reports an integer literal, or its negation, that the
// declared integer type cannot hold: bpftrace wants a cast then.
func (c *checker) literalFits(v Expr, to Type) {
	if to.Kind != KindInt || to.Size >= 8 {
		return
	}
	neg := false
	if u, ok := v.(*Unary); ok && u.Op == "-" {
		neg, v = true, u.X
	}
	lit, ok := v.(*IntLit)
	if !ok {
		return
	}
	bits := uint(to.Size * 8)
	fits := lit.Val < 1<<bits
	switch {
	case to.Signed && neg:
		fits = lit.Val <= 1<<(bits-1)
	case to.Signed:
		fits = lit.Val < 1<<(bits-1)
	case neg:
		fits = lit.Val == 0
	}
	if !fits {
		c.errorf(v.Pos(), "%s does not fit in %s; cast it, (%s)%s, to cut it", ExprString(v), to, to, ExprString(v))
	}
}

func (c *checker) stmt(s Stmt) {
	switch s := s.(type) {
	case *ExprStmt:
		c.statementCall(s.X)
	case *Return:
	case *Let:
		c.let(s)
	case *Assign:
		switch t := s.Target.(type) {
		case *MapRef:
			c.assignMap(t, s.Op, s.Value)
		case *Var:
			c.assignVar(t, s.Op, s.Value)
		}
	case *IncDec:
		switch t := s.Target.(type) {
		case *MapRef:
			c.assignMap(t, s.Op, nil)
		case *Var:
			c.assignVar(t, s.Op, nil)
		}
	case *If:
		if t := c.expr(s.Cond); t.Kind != KindNone && t.Kind != KindInt {
			c.errorf(s.Cond.Pos(), "the if condition must be an integer, not %s", t)
		}
		c.stmts(s.Then)
		c.stmts(s.Else)
	case *While:
		if t := c.expr(s.Cond); t.Kind != KindNone && t.Kind != KindInt {
			c.errorf(s.Cond.Pos(), "the while condition must be an integer, not %s", t)
		}
		c.stmts(s.Body)
	case *Break, *Continue:
	case *Unroll:
		// bpftrace's bounds.
		if v, ok := c.constant(s.Count, "the count of unroll"); ok {
			switch {
			case v < 1:
				c.errorf(s.At, "unroll minimum value is 1")
			case v > 100:
				c.errorf(s.At, "unroll maximum value is 100")
			default:
				s.N = int(v)
			}
		}
		c.stmts(s.Body)
	}
}

// lookupMap returns the map named by r, creating it, and checks r's keys
// against the map's, learning them on first use.
func (c *checker) lookupMap(r *MapRef) *Map {
	m := c.maps[r.Name]
	if m == nil {
		m = &Map{Name: r.Name, Pos: r.At}
		c.maps[r.Name] = m
	}
	r.Map = m
	keys := make([]Type, len(r.Keys))
	ok := true
	for i, k := range r.Keys {
		keys[i] = c.expr(k)
		switch keys[i].Kind {
		case KindNone:
			ok = false
			if call, isCall := k.(*Call); isCall && statementCalls[call.Name] {
				c.errorf(k.Pos(), "%s() has no value and cannot be a map key", call.Name)
			}
		case KindTuple:
			ok = false
			c.errorf(k.Pos(), "a tuple cannot be a map key; use several keys, %s[a, b]", r.Name)
		case KindPtr, KindArray, KindRecord:
		default:
			keys[i] = keys[i].widen(keys[i])
		}
	}
	if !ok {
		return m
	}
	switch {
	case m.Keys == nil && m.Value.Kind == KindNone && m.Agg == AggNone && !c.final:
		m.Keys = keys
		if len(keys) == 0 {
			m.Keys = nil
		}
	case m.Keys == nil && len(keys) == 0:
	case len(m.Keys) != len(keys):
		if m.Keys == nil && m.Value.Kind == KindNone && m.Agg == AggNone {
			m.Keys = keys
			break
		}
		switch {
		case len(m.Keys) == 0:
			c.errorf(r.At, "map %s has no keys; it cannot be used as %s[…]", r.Name, r.Name)
		case len(keys) == 0:
			c.errorf(r.At, "map %s needs %s (%s), as in %s[…]", r.Name, plural(len(m.Keys), "key"), typeList(m.Keys), r.Name)
		default:
			c.errorf(r.At, "map %s has %s (%s), not %d", r.Name, plural(len(m.Keys), "key"), typeList(m.Keys), len(keys))
		}
	default:
		for i := range keys {
			if !m.Keys[i].compatible(keys[i]) {
				c.errorf(r.Keys[i].Pos(), "key %d of map %s is %s, not %s as elsewhere", i+1, r.Name, keys[i], m.Keys[i])
				return m
			}
			m.Keys[i] = m.Keys[i].widen(keys[i])
		}
	}
	return m
}

func typeList(ts []Type) string {
	if len(ts) == 0 {
		return "none"
	}
	s := make([]string, len(ts))
	for i, t := range ts {
		s[i] = t.String()
	}
	return strings.Join(s, ", ")
}

var aggArgs = map[AggKind]int{AggCount: 0, AggSum: 1, AggAvg: 1, AggMin: 1, AggMax: 1, AggStats: 1, AggHist: 1, AggLhist: 4}

// assignMap checks r op value; value is nil for ++ and --.
func (c *checker) assignMap(r *MapRef, op string, value Expr) {
	m := c.lookupMap(r)
	c.assigned[r.Name] = true
	if call, ok := value.(*Call); ok && aggByName(call.Name) != AggNone {
		if op != "=" {
			c.errorf(call.At, "%s() must be assigned with =, not %s", call.Name, op)
			return
		}
		c.assignAgg(r, m, call)
		return
	}
	if m.Agg != AggNone {
		c.errorf(r.At, "map %s holds %s(); it cannot also be assigned a value", r.Name, m.Agg)
		if value != nil {
			c.expr(value)
		}
		return
	}
	var t Type
	if value == nil || op != "=" {
		t = int64T
		if value != nil {
			t = c.expr(value)
			if t.Kind == KindNone {
				return
			}
			if t.Kind != KindInt {
				c.errorf(value.Pos(), "%s needs an integer, not %s", op, t)
				return
			}
			if !c.constOperand(r.At, op, value) {
				return
			}
		}
		if m.Value.Kind != KindNone && m.Value.Kind != KindInt && !isPtrArith(m.Value, op) {
			c.errorf(r.At, "%s needs an integer, but map %s holds %s", op, r.Name, m.Value)
			return
		}
		if value != nil {
			// As bpftrace: a map first given a value by a compound
			// assignment is unsigned, by ++ or -- signed.
			t = uint64T
		}
		if m.Value.Kind == KindInt || m.Value.Kind == KindPtr {
			t = m.Value
		}
	} else {
		t = c.expr(value)
		if !c.storable(value, t) {
			return
		}
	}
	r.T = t.widen(t)
	switch {
	case m.Value.Kind == KindNone:
		m.Value = r.T
	case !m.Value.compatible(t):
		c.errorf(r.At, "map %s holds %s; it cannot also be assigned %s", r.Name, m.Value, t)
	default:
		m.Value = m.Value.widen(t)
	}
}

// storable reports whether a value of type t may be stored in a map or
// variable, reporting why not.
func (c *checker) storable(value Expr, t Type) bool {
	switch t.Kind {
	case KindNone:
		if call, ok := value.(*Call); ok && statementCalls[call.Name] {
			c.errorf(value.Pos(), "%s() has no value to assign", call.Name)
		}
		return false
	}
	return true
}

func (c *checker) assignAgg(r *MapRef, m *Map, call *Call) {
	agg := aggByName(call.Name)
	if n := aggArgs[agg]; len(call.Args) != n {
		c.errorf(call.At, "%s() takes %s, not %d", call.Name, argCount(n), len(call.Args))
		return
	}
	var arg Type
	if len(call.Args) > 0 {
		arg = c.expr(call.Args[0])
		if arg.Kind == KindNone {
			return
		}
		if arg.Kind != KindInt {
			c.errorf(call.Args[0].Pos(), "%s() needs an integer, not %s", call.Name, arg)
			return
		}
		arg = arg.widen(arg)
	}
	var lmin, lmax, lstep int64
	if agg == AggLhist {
		var ok [3]bool
		lmin, ok[0] = c.constant(call.Args[1], "lhist() min")
		lmax, ok[1] = c.constant(call.Args[2], "lhist() max")
		lstep, ok[2] = c.constant(call.Args[3], "lhist() step")
		if !ok[0] || !ok[1] || !ok[2] {
			return
		}
		switch {
		case lmin < 0:
			c.errorf(call.Args[1].Pos(), "lhist() min must be 0 or more, not %d", lmin)
			return
		case lmax <= lmin:
			c.errorf(call.Args[2].Pos(), "lhist() max (%d) must be greater than min (%d)", lmax, lmin)
			return
		case lstep < 1:
			c.errorf(call.Args[3].Pos(), "lhist() step must be 1 or more, not %d", lstep)
			return
		case (lmax-lmin)/lstep > maxLhistBuckets:
			c.errorf(call.Args[3].Pos(), "lhist() would have more than %d buckets; use a larger step", maxLhistBuckets)
			return
		}
	}
	r.T = Type{}
	switch {
	case m.Value.Kind != KindNone:
		c.errorf(r.At, "map %s holds %s; it cannot also be assigned %s()", r.Name, m.Value, call.Name)
	case m.Agg == AggNone:
		m.Agg, m.AggArg = agg, arg
		m.LhistMin, m.LhistMax, m.LhistStep = lmin, lmax, lstep
	case m.Agg != agg:
		c.errorf(r.At, "map %s holds %s(); it cannot also be assigned %s()", r.Name, m.Agg, call.Name)
	case agg == AggLhist && (m.LhistMin != lmin || m.LhistMax != lmax || m.LhistStep != lstep):
		c.errorf(call.At, "map %s holds lhist(x, %d, %d, %d); every lhist() assigned to it needs the same bounds and step", r.Name, m.LhistMin, m.LhistMax, m.LhistStep)
	default:
		if arg.Kind == KindInt && !arg.Signed {
			m.AggArg = arg
		}
	}
	call.T = Type{}
}

// plural returns "1 key", "2 keys".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

func argCount(n int) string {
	switch n {
	case 0:
		return "no arguments"
	case 1:
		return "one argument"
	}
	return fmt.Sprintf("%d arguments", n)
}

// constant evaluates an integer constant: a literal, possibly negated.
func (c *checker) constant(e Expr, what string) (int64, bool) {
	c.expr(e)
	v, ok := constValue(e)
	if !ok {
		c.errorf(e.Pos(), "%s must be an integer constant", what)
	}
	return v, ok
}

// ConstValue returns the value of e if it is an integer constant (a
// literal, or a negated one).
func ConstValue(e Expr) (int64, bool) { return constValue(e) }

func constValue(e Expr) (int64, bool) {
	switch e := e.(type) {
	case *IntLit:
		return int64(e.Val), e.Val <= 1<<63-1
	case *Unary:
		if e.Op == "-" {
			v, ok := constValue(e.X)
			return -v, ok
		}
	}
	return 0, false
}

// assignVar checks v op value; value is nil for ++ and --.
func (c *checker) assignVar(v *Var, op string, value Expr) {
	decl := c.lookupVar(v.Name)
	if decl == nil || decl == c.vars[v.Name] {
		if sc := c.scopes; len(sc) > 0 {
			sc[len(sc)-1].implicit[v.Name] = true
		}
	}
	c.assignDecl(v, decl, op, value)
}

// assignDecl checks v op value, v the variable decl (nil: a new variable
// of the probe's).
func (c *checker) assignDecl(v *Var, decl *Variable, op string, value Expr) {
	if decl != nil && decl.Declared != nil && decl.Declared.Kind == KindInt && decl.Declared.Size < 8 && v.At != decl.Pos {
		c.errorf(v.At, "%s is declared %s: assigning it after its declaration is not supported yet; declare it int64 or uint64", v.Name, *decl.Declared)
		return
	}
	if op != "=" {
		if decl == nil {
			c.errorf(v.At, "%s is used before it is assigned", v.Name)
			if value != nil {
				c.expr(value)
			}
			return
		}
		v.Decl, v.T = decl, decl.Type
		if decl.Type.Kind != KindInt && !isPtrArith(decl.Type, op) {
			c.errorf(v.At, "%s needs an integer, but %s holds %s", op, v.Name, decl.Type)
			return
		}
		if value != nil {
			if t := c.expr(value); t.Kind != KindInt && t.Kind != KindNone {
				c.errorf(value.Pos(), "%s needs an integer, not %s", op, t)
			} else {
				c.constOperand(v.At, op, value)
			}
		}
		return
	}
	if call, ok := value.(*Call); ok && aggByName(call.Name) != AggNone {
		c.errorf(call.At, "%s() can only be assigned to a map, as in @x = %s(…)", call.Name, call.Name)
		return
	}
	t := c.expr(value)
	if !c.storable(value, t) {
		return
	}
	t = t.widen(t)
	if decl == nil {
		decl = &Variable{Name: v.Name, Type: t, Pos: v.At, CType: exprCType(value)}
		c.vars[v.Name] = decl
		c.block.Vars = append(c.block.Vars, decl)
	}
	if decl.Type.Kind == KindNone {
		decl.Type = t
		if decl.Declared == nil {
			decl.CType = exprCType(value)
		}
	} else if !decl.Type.compatible(t) {
		c.errorf(v.At, "%s holds %s; it cannot also be assigned %s", v.Name, decl.Type, t)
		return
	} else {
		decl.Type = decl.Type.widen(t)
	}
	decl.Narrow = decl.Narrow || t.Kind == KindInt && ByteWidth(value) < 8
	v.Decl, v.T = decl, t
}

// isPtrArith reports whether op on a value of type t is pointer
// arithmetic: +=, -=, ++ or -- on a pointer.
func isPtrArith(t Type, op string) bool {
	return t.Kind == KindPtr && (op == "+=" || op == "-=" || op == "++" || op == "--")
}

// statementCalls are the functions that are statements, without a value.
var statementCalls = map[string]bool{
	"printf": true, "print": true, "delete": true, "clear": true, "zero": true, "time": true, "exit": true,
	"signal": true, "cat": true, "system": true,
}

// RegNames are the names reg() takes: bpftrace's, those of x86-64's
// struct pt_regs without their prefix.
var RegNames = []string{"ip", "sp", "bp", "ax", "bx", "cx", "dx", "si", "di",
	"r8", "r9", "r10", "r11", "r12", "r13", "r14", "r15", "flags", "orig_ax", "cs", "ss"}

// unsupportedCalls are bpftrace functions usdtkit does not compile yet.
var unsupportedCalls = map[string]bool{
	"join": true, "override": true, "kaddr": true,
	"uaddr": true, "ksym": true,
	"macaddr": true, "path": true, "cgroupid": true,
	"kptr": true, "uptr": true, "skboutput": true, "unwatch": true, "len": true,
	"cgroup_path": true, "kstack": true, "has_key": true, "debugf": true,
	"offsetof": true, "percpu_kaddr": true, "nsecs": true, "socket_cookie": true,
}

func (c *checker) statementCall(call *Call) {
	call.T = Type{}
	if !statementCalls[call.Name] {
		if aggByName(call.Name) != AggNone {
			c.errorf(call.At, "%s() must be assigned to a map, as in @x = %s(…)", call.Name, call.Name)
			return
		}
		if t := c.expr(call); t.Kind != KindNone {
			c.errorf(call.At, "the value of %s() is not used", call.Name)
		}
		return
	}
	args := call.Args
	switch call.Name {
	case "printf", "cat", "system":
		if len(args) == 0 {
			c.errorf(call.At, "%s() needs a format string", call.Name)
			return
		}
		if call.Name == "system" && !c.unsafe {
			c.errorf(call.At, "system() runs a command: it needs --unsafe, as in bpftrace")
			return
		}
		c.printf(call)
	case "time":
		if len(args) > 1 {
			c.errorf(call.At, "time() takes at most one argument, a format string")
			return
		}
		if len(args) == 1 {
			if _, ok := args[0].(*StrLit); !ok {
				c.errorf(args[0].Pos(), "time() takes a string literal, the strftime format")
				return
			}
			c.expr(args[0])
		}
	case "exit":
		if len(args) != 0 {
			c.errorf(call.At, "exit() takes no arguments")
		}
	case "signal":
		c.signal(call)
	case "print":
		if len(args) == 0 || len(args) > 3 {
			c.errorf(call.At, "print() takes a map and optionally how many top entries and a divisor: print(@m, top, div)")
			return
		}
		r, ok := args[0].(*MapRef)
		if !ok {
			// print(value): the value and a newline, as bpftrace.
			if len(args) != 1 {
				c.errorf(call.At, "print() of a value takes the value alone")
				return
			}
			switch t := c.expr(args[0]); t.Kind {
			case KindNone, KindInt, KindString, KindProbe, KindSym, KindUsym, KindUsername, KindTuple, KindTimestamp, KindInet, KindPtr, KindRecord, KindArray:
			default:
				c.errorf(args[0].Pos(), "print() of a %s is not supported yet; print a map, an integer, a string or a tuple", t)
			}
			return
		}
		c.wholeMap(call, r)
		for i, a := range args[1:] {
			what := [2]string{"print() top", "print() divisor"}[i]
			if v, ok := c.constant(a, what); ok && v < 0 || ok && i == 1 && v == 0 {
				c.errorf(a.Pos(), "%s must be positive, not %d", what, v)
			}
		}
	case "clear", "zero":
		if len(args) != 1 {
			c.errorf(call.At, "%s() takes one map", call.Name)
			return
		}
		r, ok := args[0].(*MapRef)
		if !ok {
			c.errorf(args[0].Pos(), "%s() takes a map, as in %s(@m)", call.Name, call.Name)
			return
		}
		c.wholeMap(call, r)
	case "delete":
		if len(args) != 1 {
			c.errorf(call.At, "delete() takes one map element, as in delete(@m[key])")
			return
		}
		r, ok := args[0].(*MapRef)
		if !ok {
			c.errorf(args[0].Pos(), "delete() takes a map element, as in delete(@m[key])")
			return
		}
		if m := c.maps[r.Name]; r.Keys == nil && m != nil && m.Keys != nil {
			c.errorf(r.At, "delete() needs the element's key, as in delete(%s[key])", r.Name)
			return
		}
		c.lookupMap(r)
	}
}

// wholeMap checks the map argument of print, clear and zero.
func (c *checker) wholeMap(call *Call, r *MapRef) {
	if r.Keys != nil {
		c.errorf(r.At, "the map passed to %s() must not have a key", call.Name)
		return
	}
	m := c.maps[r.Name]
	if m == nil {
		m = &Map{Name: r.Name, Pos: r.At}
		c.maps[r.Name] = m
	}
	r.Map = m
}

func (c *checker) printf(call *Call) {
	f, ok := call.Args[0].(*StrLit)
	if !ok {
		c.errorf(call.Args[0].Pos(), "%s() takes a string literal as its format", call.Name)
		return
	}
	// A format may be longer than other string literals.
	f.T = StringType(len(f.Val) + 1)
	format, err := printf.Parse(f.Val)
	if err == nil {
		err = format.Strict()
	}
	if err != nil {
		c.errorf(f.At, "%s: %v", call.Name, err.(*printf.FormatError).Msg)
		return
	}
	verbs := format.Verbs()
	args := call.Args[1:]
	types := make([]Type, len(args))
	for i, a := range args {
		types[i] = c.expr(a)
	}
	if len(args) != len(verbs) {
		c.errorf(call.At, "%s: the format takes %s, not %d", call.Name, plural(len(verbs), "argument"), len(args))
		return
	}
	for i, v := range verbs {
		t := types[i]
		if t.Kind == KindNone {
			if call, ok := args[i].(*Call); ok && statementCalls[call.Name] {
				c.errorf(args[i].Pos(), "%s() has no value to print", call.Name)
			}
			continue
		}
		if !verbAccepts(v, t) {
			want := "an integer"
			switch v.Conv {
			case 's':
				want = "a string"
			case 'r':
				want = "a buffer, buf()"
			}
			c.errorf(args[i].Pos(), "%s: %s takes %s, not %s", call.Name, v.Token, want, t)
		}
	}
}

// expr resolves e's type and records it in e. KindNone means an error was
// reported (or e has no value); callers do not report again.
func (c *checker) expr(e Expr) Type {
	t := c.exprType(e)
	switch e := e.(type) {
	case *IntLit:
		e.T = t
	case *StrLit:
		e.T = t
	case *Builtin:
		e.T = t
	case *ArgField:
		e.T = t
	case *Var:
		e.T = t
	case *MapRef:
		e.T = t
	case *Call:
		e.T = t
	case *Unary:
		e.T = t
	case *Cast:
		e.T = t
	case *Deref:
		e.T = t
	case *FieldAccess:
		e.T = t
	case *Index:
		e.T = t
	case *Sizeof:
		e.T = t
	case *Binary:
		e.T = t
	case *Ternary:
		e.T = t
	case *Tuple:
		e.T = t
	case *TupleIndex:
		e.T = t
	case *IncDecExpr:
		e.T = t
	}
	return t
}

func (c *checker) exprType(e Expr) Type {
	switch e := e.(type) {
	case *IntLit:
		if e.Enum != "" {
			return uint64T
		}
		return int64T
	case *StrLit:
		// bpftrace 0.17 refuses string literals of 64 bytes or more,
		// whatever BPFTRACE_STRLEN says, except printf's format. The
		// type stays known: what uses the literal is not wrong too.
		if len(e.Val) >= maxStrLit {
			c.errorf(e.At, "a string literal holds at most %d bytes, as in bpftrace; this one has %d", maxStrLit-1, len(e.Val))
		}
		return StringType(len(e.Val) + 1)
	case *Builtin:
		return c.builtin(e)
	case *ArgField:
		return c.argField(e)
	case *Var:
		decl := c.lookupVar(e.Name)
		if decl != nil && decl.Type.Kind == KindNone {
			c.errorf(e.At, "%s is declared but never assigned a value, so it has no type; give it one: let %s: int64", e.Name, e.Name)
			return Type{}
		}
		if decl == nil {
			c.errorf(e.At, "%s is used before it is assigned", e.Name)
			return Type{}
		}
		e.Decl = decl
		return decl.Type
	case *MapRef:
		m := c.lookupMap(e)
		if m.Agg != AggNone {
			c.errorf(e.At, "map %s holds %s(), which can only be printed, not read", e.Name, m.Agg)
			return Type{}
		}
		if m.Value.Kind == KindNone {
			c.errorf(e.At, "map %s is read but never assigned", e.Name)
			if c.final {
				c.reported[e.Name] = true
			}
		}
		return m.Value
	case *Call:
		return c.call(e)
	case *Unary:
		t := c.expr(e.X)
		if t.Kind == KindNone {
			return t
		}
		if t.Kind != KindInt {
			c.errorf(e.At, "%s needs an integer, not %s", e.Op, t)
			return Type{}
		}
		if e.Op == "!" {
			return uint64T
		}
		return t.widen(t)
	case *Cast:
		t := c.expr(e.X)
		if t.Kind == KindNone {
			return t
		}
		if t.Kind != KindInt && t.Kind != KindPtr {
			c.errorf(e.At, "a cast to %s needs an integer or a pointer, not %s", e.To, t)
			return Type{}
		}
		if e.Ptr {
			return e.To
		}
		return Type{Kind: KindInt, Signed: e.Signed, Size: 8}
	case *Deref:
		t := c.expr(e.X)
		if t.Kind == KindNone {
			return t
		}
		if t.Kind != KindPtr {
			c.errorf(e.At, "only a pointer can be dereferenced, not %s: cast it first, as in *(int32 *)X", t)
			return Type{}
		}
		if t.Elem == nil {
			c.errorf(e.At, "a void * cannot be dereferenced: cast it to a pointer to a type")
			return Type{}
		}
		return c.valueOf(e.At, *t.Elem)
	case *FieldAccess:
		return c.field(e)
	case *Index:
		return c.index(e)
	case *Sizeof:
		if e.Of != nil {
			if e.Of.Kind == KindRecord && !e.Of.Record.Defined {
				c.errorf(e.At, "%s is not defined", e.Of.Record)
				return Type{}
			}
			if e.Of.Kind == KindNone {
				c.errorf(e.At, "sizeof(void) has no size")
				return Type{}
			}
			e.Val = CSize(*e.Of)
			return uint64T
		}
		if t := c.expr(e.X); t.Kind == KindNone {
			return t
		}
		e.Val = CSize(exprCType(e.X))
		return uint64T
	case *Binary:
		return c.binary(e)
	case *Ternary:
		ct := c.expr(e.Cond)
		a, b := c.expr(e.Then), c.expr(e.Else)
		if ct.Kind != KindNone && ct.Kind != KindInt {
			c.errorf(e.Cond.Pos(), "the condition of ?: must be an integer, not %s", ct)
			return Type{}
		}
		if a.Kind == KindNone || b.Kind == KindNone || ct.Kind == KindNone {
			return Type{}
		}
		if !a.compatible(b) {
			c.errorf(e.At, "the branches of ?: have different types, %s and %s", a, b)
			return Type{}
		}
		if a.Kind == KindInt {
			return Type{Kind: KindInt, Signed: a.Signed && b.Signed, Size: 8}
		}
		return a.widen(b)
	case *Tuple:
		t := Type{Kind: KindTuple, Elems: make([]Type, len(e.Elems))}
		ok := true
		for i, x := range e.Elems {
			t.Elems[i] = c.expr(x)
			if t.Elems[i].Kind == KindNone {
				ok = false
			}
		}
		if !ok {
			return Type{}
		}
		return t
	case *IncDecExpr:
		switch x := e.Target.(type) {
		case *MapRef:
			c.assignMap(x, e.Op, nil)
			if x.Map != nil && (x.Map.Value.Kind == KindInt || x.Map.Value.Kind == KindPtr) {
				return x.Map.Value
			}
		case *Var:
			c.assignVar(x, e.Op, nil)
			if x.Decl != nil && (x.Decl.Type.Kind == KindInt || x.Decl.Type.Kind == KindPtr) {
				return x.Decl.Type
			}
		}
		return Type{}
	case *TupleIndex:
		t := c.expr(e.X)
		if t.Kind == KindNone {
			return t
		}
		if t.Kind != KindTuple {
			c.errorf(e.At, "only tuples can be indexed with .N; this is %s", t)
			return Type{}
		}
		if e.Index >= len(t.Elems) {
			c.errorf(e.At, "tuple index %d is out of range: the tuple has %d elements", e.Index, len(t.Elems))
			return Type{}
		}
		return t.Elems[e.Index]
	}
	return Type{}
}

func (c *checker) binary(e *Binary) Type {
	a, b := c.expr(e.X), c.expr(e.Y)
	if a.Kind == KindPtr || b.Kind == KindPtr {
		return c.pointerOp(e, a, b)
	}
	if (e.Op == "==" || e.Op == "!=") && a.Kind == KindArray && b.Kind == KindArray {
		if !a.Equal(b) {
			c.errorf(e.At, "%s compares arrays of the same type, not %s and %s", e.Op, a, b)
			return Type{}
		}
		return uint64T
	}
	if a.Kind == KindNone || b.Kind == KindNone {
		// A map whose value type is not known yet, with an integer (or
		// another such map): the result is an unsigned integer, as
		// bpftrace types it, so that @n[k] = @n[k] + 1 gives @n its type.
		if (a.Kind == KindInt || untypedMap(e.X, a)) && (b.Kind == KindInt || untypedMap(e.Y, b)) {
			return uint64T
		}
		return Type{}
	}
	switch e.Op {
	case "==", "!=":
		if a.Kind == KindString && b.Kind == KindString || a.Kind == KindBuf && b.Kind == KindBuf {
			return uint64T
		}
		if a.Kind == KindInt && b.Kind == KindInt {
			return Type{Kind: KindInt, Signed: a.Signed && b.Signed, Size: 8}
		}
		c.errorf(e.At, "%s compares two integers or two strings, not %s and %s", e.Op, a, b)
		return Type{}
	}
	if a.Kind != KindInt || b.Kind != KindInt {
		if (a.Kind == KindString || b.Kind == KindString) && e.Op == "+" {
			c.errorf(e.At, "strings cannot be concatenated; + needs integers, not %s and %s", a, b)
		} else if a.Kind == KindString && b.Kind == KindString {
			c.errorf(e.At, "strings can only be compared with == and !=, not %s", e.Op)
		} else {
			c.errorf(e.At, "%s needs integers, not %s and %s", e.Op, a, b)
		}
		return Type{}
	}
	if !c.constOperand(e.At, e.Op, e.Y) {
		return Type{}
	}
	return Type{Kind: KindInt, Signed: a.Signed && b.Signed, Size: 8}
}

// untypedMap reports whether e, of type t, reads a map whose value type
// no pass has learned yet.
func untypedMap(e Expr, t Type) bool {
	_, ok := e.(*MapRef)
	return ok && t.Kind == KindNone
}

// constOperand rejects a right operand that makes op undefined: a constant
// zero divisor (BPF would give 0, bpftrace prints it silently) or a
// constant shift outside 0..63 (undefined in C and BPF). op may be a
// compound assignment.
func (c *checker) constOperand(at Pos, op string, y Expr) bool {
	v, ok := constValue(y)
	if !ok {
		return true
	}
	switch strings.TrimSuffix(op, "=") {
	case "/", "%":
		if v == 0 {
			c.errorf(at, "division by zero")
			return false
		}
	case "<<", ">>":
		if v < 0 || v > 63 {
			c.errorf(at, "shift by %d is outside 0 to 63", v)
			return false
		}
	}
	return true
}

// builtinKinds lists the probe kinds each builtin needs; nil: any kind.
var builtinKinds = map[string][]ProbeKind{
	"retval": {ProbeUretprobe},
	"func":   {ProbeUprobe, ProbeUretprobe},
	"ustack": {ProbeUSDT, ProbeUprobe, ProbeUretprobe, ProbeProfile},
	"arg":    {ProbeUSDT, ProbeUprobe},
	"reg":    {ProbeUSDT, ProbeUprobe, ProbeUretprobe},
}

var builtinNeeds = map[string]string{
	"retval": "a uretprobe",
	"func":   "a uprobe or uretprobe",
	"ustack": "a usdt, uprobe, uretprobe or profile probe",
	"reg":    "a usdt, uprobe or uretprobe probe",
	"arg":    "a usdt or uprobe probe (uretprobes have retval)",
}

func (c *checker) builtin(e *Builtin) Type {
	name := e.Name
	if e.Arg >= 0 {
		name = "arg"
	}
	for _, p := range c.block.Probes {
		if why := c.args[p].Refuse[name]; why != "" {
			c.errorf(e.At, "%s: %s", e.Name, why)
			return Type{}
		}
		if name == "goid" && !c.args[p].GoID && c.argErr[p] == nil {
			c.errorf(e.At, "goid is the goroutine id of a Go function's probe; %s is not one", p)
			return Type{}
		}
	}
	if kinds := builtinKinds[name]; kinds != nil {
		for _, p := range c.block.Probes {
			if !slices.Contains(kinds, p.Kind) {
				c.errorf(e.At, "%s needs %s; %s is not one", e.Name, builtinNeeds[name], p)
				return Type{}
			}
		}
	}
	switch e.Name {
	case "comm":
		return StringType(16)
	case "username":
		return Type{Kind: KindUsername}
	case "probe":
		return Type{Kind: KindProbe}
	case "func":
		return Type{Kind: KindSym}
	case "ustack":
		return Type{Kind: KindStack, Size: MaxStackFrames, Perf: c.stackPerf}
	}
	if e.Arg >= 0 {
		for _, p := range c.block.Probes {
			if a, ok := c.args[p]; ok && a.Count >= 0 && e.Arg >= a.Count {
				c.errorf(e.At, "%s does not exist: %s has %d arguments", e.Name, p, a.Count)
				return Type{}
			}
		}
	}
	return uint64T
}

func (c *checker) argField(e *ArgField) Type {
	var t Type
	for i, p := range c.block.Probes {
		a := c.args[p]
		var found *NamedArg
		for j := range a.Named {
			if a.Named[j].Name == e.Name {
				found = &a.Named[j]
				break
			}
		}
		if found != nil && found.Err != "" {
			c.errorf(e.At, "%s", found.Err)
			return Type{}
		}
		if found == nil {
			switch {
			case a.Refuse["args"] != "":
				c.errorf(e.At, "args.%s: %s", e.Name, a.Refuse["args"])
			case p.Kind == ProbeProfile:
				c.errorf(e.At, "args is not available in %s: a sample interrupts whatever runs, which has no arguments", p)
			case p.Kind == ProbeUretprobe && len(a.Named) == 0:
				c.errorf(e.At, "args is not available in %s; a uretprobe has retval", p)
			case len(a.Named) == 0:
				c.errorf(e.At, "args.%s needs named arguments, and %s has none; use arg0…arg11", e.Name, p)
			default:
				names := make([]string, len(a.Named))
				for j, n := range a.Named {
					names[j] = n.Name
				}
				c.errorf(e.At, "%s has no argument %s; it has %s", p, e.Name, strings.Join(names, ", "))
			}
			return Type{}
		}
		if i == 0 {
			t = found.Type
		} else if !t.Equal(found.Type) {
			c.errorf(e.At, "args.%s is %s in %s but %s in %s", e.Name, t, c.block.Probes[0], found.Type, p)
			return Type{}
		}
	}
	return t
}

func (c *checker) call(e *Call) Type {
	switch {
	case statementCalls[e.Name]:
		c.errorf(e.At, "%s() is a statement and has no value", e.Name)
		return Type{}
	case aggByName(e.Name) != AggNone:
		c.errorf(e.At, "%s() must be assigned directly to a map, as in @x = %s(…)", e.Name, e.Name)
		return Type{}
	case unsupportedCalls[e.Name]:
		c.errorf(e.At, "%s() is not supported yet", e.Name)
		return Type{}
	}
	switch e.Name {
	case "str":
		if len(e.Args) < 1 || len(e.Args) > 2 {
			c.errorf(e.At, "str() takes an address and optionally a length: str(x) or str(x, n)")
			return Type{}
		}
		t := c.expr(e.Args[0])
		if t.Kind != KindNone && t.Kind != KindInt && t.Kind != KindString {
			c.errorf(e.Args[0].Pos(), "str() reads a string at an integer address, not %s", t)
			return Type{}
		}
		size := c.strLen
		if len(e.Args) == 2 {
			n := c.expr(e.Args[1])
			if n.Kind != KindNone && n.Kind != KindInt {
				c.errorf(e.Args[1].Pos(), "the length of str() must be an integer, not %s", n)
				return Type{}
			}
			if v, ok := constValue(e.Args[1]); ok {
				if v < 1 {
					c.errorf(e.Args[1].Pos(), "the length of str() must be 1 or more, not %d", v)
					return Type{}
				}
				// bpftrace 0.17 reads up to n characters and a NUL
				// (str(s, 3) of "alpha" prints "alp"): string[n+1].
				size = int(min(v+1, int64(c.strLen)))
			}
		}
		if t.Kind == KindNone {
			return t
		}
		return StringType(size)
	case "reg":
		// bpftrace's x86-64 register names; the back end maps them.
		for _, p := range c.block.Probes {
			if !slices.Contains(builtinKinds["reg"], p.Kind) {
				c.errorf(e.At, "reg() needs %s; %s is not one", builtinNeeds["reg"], p)
				return Type{}
			}
		}
		if len(e.Args) != 1 {
			c.errorf(e.At, "reg() takes a register name, as in reg(\"ip\")")
			return Type{}
		}
		lit, ok := e.Args[0].(*StrLit)
		if !ok || !slices.Contains(RegNames, lit.Val) {
			c.errorf(e.Args[0].Pos(), "reg() takes one of the register names %s", strings.Join(RegNames, " "))
			return Type{}
		}
		c.expr(lit)
		return uint64T
	case "ntop":
		// bpftrace's ntop([AF, ]ADDR): an IPv4 address in an integer
		// (AF 2, AF_INET, by default), or the bytes of pton("…").
		if len(e.Args) < 1 || len(e.Args) > 2 {
			c.errorf(e.At, "ntop() takes an address, and before it optionally an address family: ntop(2, x)")
			return Type{}
		}
		if len(e.Args) == 2 {
			if t := c.expr(e.Args[0]); t.Kind != KindInt {
				if t.Kind != KindNone {
					c.errorf(e.Args[0].Pos(), "ntop()'s address family must be an integer, not %s", t)
				}
				return Type{}
			}
		}
		a := e.Args[len(e.Args)-1]
		if p, ok := a.(*Call); ok && p.Name == "pton" {
			lit, ok := PtonArg(p)
			if !ok {
				c.errorf(p.At, "pton() takes an IPv4 or IPv6 address in a string literal, as in pton(\"127.0.0.1\")")
				return Type{}
			}
			c.expr(lit)
			return Type{Kind: KindInet}
		}
		if t := c.expr(a); t.Kind != KindInt {
			if t.Kind != KindNone {
				c.errorf(a.Pos(), "ntop() takes an integer address or pton(\"…\"), not %s", t)
			}
			return Type{}
		}
		return Type{Kind: KindInet}
	case "pton":
		c.errorf(e.At, "pton() is supported only as ntop()'s argument, as in ntop(2, pton(\"127.0.0.1\"))")
		return Type{}
	case "strftime":
		// bpftrace's strftime(FORMAT, ns): ns since boot, printed in
		// local time by FORMAT (C's strftime, and %f for microseconds).
		if len(e.Args) != 2 {
			c.errorf(e.At, "strftime() takes a format and a time in nanoseconds since boot: strftime(\"%%H:%%M\", nsecs)")
			return Type{}
		}
		lit, ok := e.Args[0].(*StrLit)
		if !ok {
			c.errorf(e.Args[0].Pos(), "strftime() takes a string literal as its format")
			return Type{}
		}
		c.expr(lit)
		if t := c.expr(e.Args[1]); t.Kind != KindInt {
			if t.Kind != KindNone {
				c.errorf(e.Args[1].Pos(), "strftime() takes an integer time, not %s", t)
			}
			return Type{}
		}
		return Type{Kind: KindTimestamp}
	case "strcontains":
		// bpftrace's strcontains(haystack, needle): 1 when needle is in
		// haystack, else 0.
		if len(e.Args) != 2 {
			c.errorf(e.At, "strcontains() takes two strings: strcontains(haystack, needle)")
			return Type{}
		}
		for _, a := range e.Args {
			if t := c.expr(a); t.Kind != KindNone && t.Kind != KindString {
				c.errorf(a.Pos(), "strcontains() takes strings, not %s", t)
				return Type{}
			}
		}
		return uint64T
	case "buf":
		// bpftrace's buf(x, n): n bytes at address x, or of string x,
		// at most the length str() reads.
		if len(e.Args) != 2 {
			c.errorf(e.At, "buf() takes an address or a string and a length: buf(x, n)")
			return Type{}
		}
		t := c.expr(e.Args[0])
		if t.Kind != KindNone && t.Kind != KindInt && t.Kind != KindString {
			c.errorf(e.Args[0].Pos(), "buf() reads an integer address or a string, not %s", t)
			return Type{}
		}
		n := c.expr(e.Args[1])
		if n.Kind != KindNone && n.Kind != KindInt {
			c.errorf(e.Args[1].Pos(), "the length of buf() must be an integer, not %s", n)
			return Type{}
		}
		size := c.strLen
		if v, ok := constValue(e.Args[1]); ok {
			if v < 0 {
				c.errorf(e.Args[1].Pos(), "the length of buf() must be 0 or more, not %d", v)
				return Type{}
			}
			size = int(min(v, int64(c.strLen)))
		}
		if t.Kind == KindNone || n.Kind == KindNone {
			return Type{}
		}
		return Type{Kind: KindBuf, Size: size}
	case "bswap":
		// bpftrace's bswap(x): x's bytes in reverse order, unsigned, of
		// x's width (ByteWidth; an int8 is itself).
		if len(e.Args) != 1 {
			c.errorf(e.At, "bswap() takes one integer")
			return Type{}
		}
		t := c.expr(e.Args[0])
		if t.Kind != KindInt {
			if t.Kind != KindNone {
				c.errorf(e.Args[0].Pos(), "bswap() takes an integer, not %s", t)
			}
			return Type{}
		}
		if v, ok := e.Args[0].(*Var); ok && v.Decl != nil && v.Decl.Narrow {
			c.errorf(v.At, "bswap(%s): %s was assigned a value narrower than 8 bytes, whose width bswap would not know here; cast it, as in bswap((uint16)%s)", v.Name, v.Name, v.Name)
			return Type{}
		}
		return uint64T
	case "usym":
		if len(e.Args) != 1 {
			c.errorf(e.At, "usym() takes one address")
			return Type{}
		}
		if t := c.expr(e.Args[0]); t.Kind != KindInt {
			if t.Kind != KindNone {
				c.errorf(e.Args[0].Pos(), "usym() takes an integer address, not %s", t)
			}
			return Type{}
		}
		return Type{Kind: KindUsym}
	case "strncmp":
		// bpftrace's strncmp(s1, s2, n): 0 when the strings agree in
		// their first n characters (up to a NUL), else 1.
		if len(e.Args) != 3 {
			c.errorf(e.At, "strncmp() takes two strings and a length: strncmp(s1, s2, n)")
			return Type{}
		}
		for _, a := range e.Args[:2] {
			if t := c.expr(a); t.Kind != KindNone && t.Kind != KindString {
				c.errorf(a.Pos(), "strncmp() compares strings, not %s", t)
				return Type{}
			}
		}
		c.expr(e.Args[2])
		if v, ok := constValue(e.Args[2]); !ok || v < 0 {
			c.errorf(e.Args[2].Pos(), "the length of strncmp() must be an integer constant, 0 or more")
			return Type{}
		}
		return uint64T
	case "ustack":
		for _, p := range c.block.Probes {
			if !slices.Contains(builtinKinds["ustack"], p.Kind) {
				c.errorf(e.At, "ustack needs %s; %s is not one", builtinNeeds["ustack"], p)
				return Type{}
			}
		}
		args := e.Args
		perf := c.stackPerf
		if len(args) > 0 {
			if b, ok := args[0].(*Builtin); ok && stackModes[b.Name] {
				switch b.Name {
				case "raw":
					c.errorf(b.At, "ustack(raw) is not supported yet; use ustack(perf) for addresses")
					return Type{}
				case "perf":
					perf = true
				}
				args = args[1:]
			}
		}
		if len(args) == 0 {
			return Type{Kind: KindStack, Size: MaxStackFrames, Perf: perf}
		}
		if len(args) != 1 {
			c.errorf(e.At, "ustack() takes a stack mode (perf or bpftrace), the number of frames, or both")
			return Type{}
		}
		v, ok := constValue(args[0])
		c.expr(args[0])
		if !ok {
			c.errorf(args[0].Pos(), "ustack() takes an integer constant, the number of frames")
			return Type{}
		}
		if v < 1 || v > MaxStackFrames {
			c.errorf(args[0].Pos(), "ustack() keeps 1 to %d frames, not %d", MaxStackFrames, v)
			return Type{}
		}
		return Type{Kind: KindStack, Size: int(v), Perf: perf}
	}
	c.errorf(e.At, "unknown function %s()", e.Name)
	return Type{}
}

// signal checks signal(SIG): a signal name ("SIGUSR1", "USR1") or number
// (1 to 64), sent to the process that hit the probe; unsafe, as in
// bpftrace, and refused where that process would be usdtkit's.
func (c *checker) signal(call *Call) {
	if !c.unsafe {
		c.errorf(call.At, "signal() changes the traced process: it needs --unsafe, as in bpftrace")
		return
	}
	for _, p := range c.block.Probes {
		if p.Kind == ProbeBegin || p.Kind == ProbeEnd || p.Kind == ProbeInterval {
			c.errorf(call.At, "signal() in a %s block would signal usdtkit itself", p.Kind)
			return
		}
	}
	if len(call.Args) != 1 {
		c.errorf(call.At, "signal() takes a signal, by name or number: signal(\"SIGUSR1\")")
		return
	}
	a := call.Args[0]
	c.expr(a)
	if lit, ok := a.(*StrLit); ok {
		if SignalNumber(lit.Val) == 0 {
			c.errorf(a.Pos(), "%q is not a signal name", lit.Val)
		}
		return
	}
	if v, ok := constValue(a); !ok || v < 1 || v > 64 {
		c.errorf(a.Pos(), "signal() takes a signal name or a number from 1 to 64")
	}
}

// SignalNumber returns the number of signal name ("SIGUSR1" or "USR1"),
// 0 for none.
func SignalNumber(name string) int {
	if !strings.HasPrefix(name, "SIG") {
		name = "SIG" + name
	}
	return int(unix.SignalNum(name))
}

// valueOf returns the type of an expression that reads a value of C type
// t (a field, an element, what a pointer points to): integers are 64
// bits, an array of char is a string with room for a NUL.
func (c *checker) valueOf(at Pos, t Type) Type {
	switch t.Kind {
	case KindInt:
		return Type{Kind: KindInt, Signed: t.Signed, Size: 8}
	case KindString:
		return StringType(t.Size + 1)
	case KindRecord:
		if !t.Record.Defined {
			c.errorf(at, "%s is not defined", t.Record)
			return Type{}
		}
	}
	return t
}

// field checks X.NAME and X->NAME.
func (c *checker) field(e *FieldAccess) Type {
	t := c.expr(e.X)
	if t.Kind == KindNone {
		return t
	}
	if e.Arrow {
		if t.Kind != KindPtr || t.Elem == nil || t.Elem.Kind != KindRecord {
			c.errorf(e.At, "-> needs a pointer to a struct or union, not %s", t)
			return Type{}
		}
		t = *t.Elem
	} else if t.Kind != KindRecord {
		if t.Kind == KindPtr && t.Elem != nil && t.Elem.Kind == KindRecord {
			c.errorf(e.At, "%s is a pointer: use ->%s", t, e.Name)
		} else {
			c.errorf(e.At, ".%s needs a struct or union, not %s", e.Name, t)
		}
		return Type{}
	}
	r := t.Record
	if !r.Defined {
		c.errorf(e.At, "%s is not defined", r)
		return Type{}
	}
	f := r.Field(e.Name)
	if f == nil {
		c.errorf(e.At, "%s has no field %s", r, e.Name)
		return Type{}
	}
	e.Field = f
	return c.valueOf(e.At, f.Type)
}

// index checks X[I].
func (c *checker) index(e *Index) Type {
	t := c.expr(e.X)
	it := c.expr(e.I)
	if t.Kind == KindNone || it.Kind == KindNone {
		return Type{}
	}
	if it.Kind != KindInt {
		c.errorf(e.I.Pos(), "an index must be an integer, not %s", it)
		return Type{}
	}
	switch t.Kind {
	case KindArray:
		if v, ok := constValue(e.I); ok && (v < 0 || v >= int64(t.Len)) {
			c.errorf(e.At, "the index %d is out of bounds for array of size %d", v, t.Len)
			return Type{}
		}
	case KindPtr:
		if t.Elem == nil {
			c.errorf(e.At, "a void * cannot be indexed: cast it to a pointer to a type")
			return Type{}
		}
	default:
		c.errorf(e.At, "only arrays and pointers can be indexed, not %s", t)
		return Type{}
	}
	return c.valueOf(e.At, *t.Elem)
}

// pointerOp checks a binary operation with a pointer operand: a pointer
// plus or minus an integer (scaled by the size of what it points to, as
// in C), comparisons, && and ||.
func (c *checker) pointerOp(e *Binary, a, b Type) Type {
	if a.Kind == KindNone || b.Kind == KindNone {
		return Type{}
	}
	switch e.Op {
	case "+", "-":
		switch {
		case a.Kind == KindPtr && b.Kind == KindInt:
			return a
		case e.Op == "+" && a.Kind == KindInt && b.Kind == KindPtr:
			return b
		}
	case "==", "!=", "<", "<=", ">", ">=", "&&", "||":
		if (a.Kind == KindPtr || a.Kind == KindInt) && (b.Kind == KindPtr || b.Kind == KindInt) {
			return uint64T
		}
	}
	c.errorf(e.At, "%s is not defined on %s and %s", e.Op, a, b)
	return Type{}
}

// exprCType returns the C type of the value e gives: an integer's own
// width where a cast or the memory read gives it, a tuple's elements so.
// sizeof() gives its size.
func exprCType(e Expr) Type {
	switch e := e.(type) {
	case *Cast:
		if e.Ptr {
			return e.To
		}
		return Type{Kind: KindInt, Size: e.Size, Signed: e.Signed}
	case *Deref:
		if t := e.X.Type(); t.Kind == KindPtr && t.Elem != nil {
			return *t.Elem
		}
	case *FieldAccess:
		if e.Field != nil {
			return e.Field.Type
		}
	case *Index:
		if t := e.X.Type(); (t.Kind == KindPtr || t.Kind == KindArray) && t.Elem != nil {
			return *t.Elem
		}
	case *Tuple:
		t := Type{Kind: KindTuple, Elems: make([]Type, len(e.Elems))}
		for i, x := range e.Elems {
			t.Elems[i] = exprCType(x)
		}
		return t
	case *Var:
		if e.Decl != nil && e.Decl.CType.Kind != KindNone {
			return e.Decl.CType
		}
	}
	return e.Type()
}

// ByteWidth returns the width in bytes of integer expression e as C (and
// bpftrace) types it: a cast's or a dereference's size, else 8. Integer
// values are 64-bit here; bswap reverses ByteWidth bytes. A variable is
// 8 bytes wide even when a narrower cast was assigned to it.
func ByteWidth(e Expr) int {
	if t := exprCType(e); t.Kind == KindInt && t.Size > 0 {
		return t.Size
	}
	return 8
}

// PtonArg returns the string literal of pton("ADDR") and whether it is
// an address as bpftrace reads it: IPv4 when it has a dot, else IPv6.
func PtonArg(c *Call) (*StrLit, bool) {
	if len(c.Args) != 1 {
		return nil, false
	}
	lit, ok := c.Args[0].(*StrLit)
	if !ok {
		return nil, false
	}
	a, err := netip.ParseAddr(lit.Val)
	if err != nil || a.Zone() != "" {
		return lit, false
	}
	return lit, a.Is4() == strings.Contains(lit.Val, ".")
}
