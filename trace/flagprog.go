package trace

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/usdtkit/usdtkit/internal/escape"
	"github.com/usdtkit/usdtkit/internal/lang/btlang"
)

// flagGroup is the probes one block of a flag program runs for: the
// same per-probe flags (probe, "" for none) and kind of arg0 (ret: a
// uretprobe's arg0 is retval).
type flagGroup struct {
	probe  string
	ret    bool
	probes []*btlang.Probe
	names  []string
	// args is the least count of arguments of the probes.
	args int
	// gos and others count the Go functions and the other probes.
	gos, others int
}

// count counts p among the Go functions or the others.
func (g *flagGroup) count(p flagProbe) {
	if p.goVals != nil {
		g.gos++
	} else {
		g.others++
	}
}

func (g *flagGroup) add(p flagProbe) error {
	if p.probeErr != nil {
		return p.probeErr
	}
	g.count(p)
	if len(g.probes) == 0 || p.args < g.args {
		g.args = p.args
	}
	g.probes = append(g.probes, p.probe)
	g.names = append(g.names, p.name)
	return nil
}

// prepared is what program and events share: every probe once, the
// names, and the probes per-probe flags name.
type prepared struct {
	all      []flagProbe
	names    []string
	perProbe map[string]bool
}

// prepare checks the flags against the probes the selectors list.
func (sp *flagSpec) prepare(sels []*flagSelector) (*prepared, error) {
	pr := &prepared{perProbe: make(map[string]bool)}
	var seen []*btlang.Probe
	for _, s := range sels {
		for _, p := range s.found {
			// A probe no program can name is named by its selector
			// only, which lists it once.
			if p.probeErr != nil || !slices.ContainsFunc(seen, func(q *btlang.Probe) bool { return *q == *p.probe }) {
				seen = append(seen, p.probe)
				pr.all = append(pr.all, p)
			}
		}
	}
	for _, p := range pr.all {
		if !slices.Contains(pr.names, p.name) {
			pr.names = append(pr.names, p.name)
		}
	}
	check := func(probe string) error {
		if probe == "" {
			return nil
		}
		if !slices.Contains(pr.names, probe) {
			return fmt.Errorf("%s is not among the traced probes (%s)", escape.Name(probe), escape.Name(strings.Join(pr.names, ", ")))
		}
		pr.perProbe[probe] = true
		return nil
	}
	for k := range sp.strs {
		if err := check(k); err != nil {
			return nil, err
		}
	}
	for k := range sp.formats {
		if err := check(k); err != nil {
			return nil, err
		}
	}
	for _, f := range sp.filters {
		if err := check(f.probe); err != nil {
			return nil, err
		}
	}
	for _, p := range pr.all {
		if err := sp.checkArgs(p); err != nil {
			return nil, err
		}
	}
	return pr, nil
}

// groups returns the blocks to build: the selectors as written when no
// per-probe flag applies, else the probes one by one, by the per-probe
// flags that apply to them.
func (sp *flagSpec) groups(sels []*flagSelector, pr *prepared) ([]*flagGroup, error) {
	var groups []*flagGroup
	group := func(probe string, ret bool) *flagGroup {
		for _, g := range groups {
			if g.probe == probe && g.ret == ret {
				return g
			}
		}
		g := &flagGroup{probe: probe, ret: ret}
		groups = append(groups, g)
		return g
	}
	if len(pr.perProbe) == 0 {
		// The selectors as written: Compile lists each once.
		for _, s := range sels {
			if len(s.found) == 0 {
				continue
			}
			g := group("", s.kind == kindUretprobe)
			if s.probe == nil {
				// A function at an address: named by what it lists.
				for _, p := range s.found {
					if err := g.add(p); err != nil {
						return nil, err
					}
				}
				continue
			}
			for _, p := range s.found {
				g.count(p)
				if len(g.probes) == 0 || p.args < g.args {
					g.args = p.args
				}
			}
			g.probes = append(g.probes, s.probe)
			g.names = append(g.names, s.found[0].name)
		}
		return groups, nil
	}
	for _, p := range pr.all {
		key := ""
		if pr.perProbe[p.name] {
			key = p.name
		}
		if err := group(key, p.ret).add(p); err != nil {
			return nil, err
		}
	}
	return groups, nil
}

// flagTreeBuilder builds a flag program's tree. Its nodes have positions
// in flagsFile as if the program were written a line per probe, one for
// the predicate and one for the action: each probe has a position of its
// own, which the resolver's errors are keyed by.
type flagTreeBuilder struct {
	prog *btlang.Program
	line int
	// at is the position of the nodes being built.
	at btlang.Pos
}

func (t *flagTreeBuilder) nextLine() btlang.Pos {
	t.line++
	t.at = btlang.Pos{File: flagsFile, Line: t.line, Col: 1}
	return t.at
}

func (t *flagTreeBuilder) base() btlang.ExprBase { return btlang.ExprBase{At: t.at} }

func (t *flagTreeBuilder) builtin(name string) btlang.Expr {
	return &btlang.Builtin{ExprBase: t.base(), Name: name, Arg: -1}
}

func (t *flagTreeBuilder) arg(n int) btlang.Expr {
	return &btlang.Builtin{ExprBase: t.base(), Name: "arg" + strconv.Itoa(n), Arg: n}
}

func (t *flagTreeBuilder) int(n uint64) *btlang.IntLit {
	return &btlang.IntLit{ExprBase: t.base(), Val: n}
}

func (t *flagTreeBuilder) str(s string) btlang.Expr {
	return &btlang.StrLit{ExprBase: t.base(), Val: s}
}

func (t *flagTreeBuilder) call(name string, args ...btlang.Expr) *btlang.Call {
	return &btlang.Call{ExprBase: t.base(), Name: name, Args: args}
}

func (t *flagTreeBuilder) binary(op string, x, y btlang.Expr) btlang.Expr {
	return &btlang.Binary{ExprBase: t.base(), Op: op, X: x, Y: y}
}

// mapRef is NAME[KEYS…]; keys are built afresh at each use, as the
// checker types each node of the tree once.
func (t *flagTreeBuilder) mapRef(name string, keys func() []btlang.Expr) *btlang.MapRef {
	return &btlang.MapRef{ExprBase: t.base(), Name: name, Keys: keys()}
}

func (t *flagTreeBuilder) assign(target *btlang.MapRef, value btlang.Expr) btlang.Stmt {
	return &btlang.Assign{At: t.at, Target: target, Op: "=", Value: value}
}

func (t *flagTreeBuilder) stmt(c *btlang.Call) btlang.Stmt { return &btlang.ExprStmt{At: t.at, X: c} }

// block adds one probe block: g's probes, the filters that apply to them
// ANDed after cond (if not nil), and the statements action builds.
func (t *flagTreeBuilder) block(sp *flagSpec, g *flagGroup, cond func() btlang.Expr, action func() []btlang.Stmt) {
	b := &btlang.ProbeBlock{}
	for i, p := range g.probes {
		q := *p
		q.At = t.nextLine()
		if i == 0 {
			b.At = q.At
		}
		b.Probes = append(b.Probes, &q)
	}
	var preds []btlang.Expr
	if cond != nil || slices.ContainsFunc(sp.filters, func(f flagFilter) bool { return f.probe == "" || f.probe == g.probe }) {
		t.nextLine()
	}
	if cond != nil {
		preds = append(preds, cond())
	}
	preds = append(preds, sp.preds(t, g)...)
	b.Pred = t.and(preds)
	t.nextLine()
	b.Body = action()
	t.prog.Blocks = append(t.prog.Blocks, b)
}

// and is preds ANDed from the left, as a && b && c parses; nil for none.
func (t *flagTreeBuilder) and(preds []btlang.Expr) btlang.Expr {
	var x btlang.Expr
	for _, p := range preds {
		if x == nil {
			x = p
		} else {
			x = t.binary("&&", x, p)
		}
	}
	return x
}

// program builds the program: one block per group (two for --latency).
func (sp *flagSpec) program(sels []*flagSelector) (*btlang.Program, error) {
	pr, err := sp.prepare(sels)
	if err != nil {
		return nil, err
	}
	t := &flagTreeBuilder{prog: &btlang.Program{}}
	if sp.mode == modeLatency {
		start, err := sp.latencyGroup(pr.all, sp.start)
		if err != nil {
			return nil, err
		}
		done, err := sp.latencyGroup(pr.all, sp.done)
		if err != nil {
			return nil, err
		}
		if start == nil || done == nil {
			return nil, flagErrorf("--latency", "%s and %s must be among the traced probes (%s)", escape.Name(sp.start), escape.Name(sp.done), escape.Name(strings.Join(pr.names, ", ")))
		}
		// Go functions pair by goroutine, which may change threads
		// between its start and its done; goroutine ids are per
		// process, and 0 is none read.
		key := func() []btlang.Expr { return []btlang.Expr{t.builtin("pid"), t.builtin("goid")} }
		cond := func() btlang.Expr { return t.binary("!=", t.builtin("goid"), t.int(0)) }
		for _, g := range append(start, done...) {
			if g.others > 0 {
				key = func() []btlang.Expr { return []btlang.Expr{t.builtin("tid")} }
				cond = nil
			}
		}
		for _, g := range start {
			// @start[KEY] = nsecs
			t.block(sp, g, cond, func() []btlang.Stmt {
				return []btlang.Stmt{t.assign(t.mapRef("@start", key), t.builtin("nsecs"))}
			})
		}
		for _, g := range done {
			// /@start[KEY]/ { @latency_ns[probe] = hist(nsecs - @start[KEY]); delete(@start[KEY]) }
			started := func() btlang.Expr { return t.mapRef("@start", key) }
			t.block(sp, g, started, func() []btlang.Stmt {
				probe := func() []btlang.Expr { return []btlang.Expr{t.builtin("probe")} }
				elapsed := t.binary("-", t.builtin("nsecs"), t.mapRef("@start", key))
				return []btlang.Stmt{
					t.assign(t.mapRef("@latency_ns", probe), t.call("hist", elapsed)),
					t.stmt(t.call("delete", t.mapRef("@start", key))),
				}
			})
		}
		return t.prog, nil
	}
	groups, err := sp.groups(sels, pr)
	if err != nil {
		return nil, err
	}
	for _, g := range groups {
		t.block(sp, g, nil, func() []btlang.Stmt { return []btlang.Stmt{sp.action(t, g)} })
	}
	return t.prog, nil
}

// action is what g's block does in count, hist and format modes.
func (sp *flagSpec) action(t *flagTreeBuilder, g *flagGroup) btlang.Stmt {
	if sp.mode == modeCount || sp.mode == modeHist {
		// @[probe, BY…, ustack] = count() or hist(VALUE)
		keys := func() []btlang.Expr {
			keys := []btlang.Expr{t.builtin("probe")}
			for _, v := range sp.by {
				keys = append(keys, sp.expr(t, v, g, true))
			}
			if sp.stacks {
				keys = append(keys, t.builtin("ustack"))
			}
			return keys
		}
		agg := t.call("count")
		if sp.mode == modeHist {
			agg = t.call("hist", sp.expr(t, sp.hist, g, false))
		}
		return t.assign(t.mapRef("@", keys), agg)
	}
	f := sp.formats[g.probe]
	if f == nil {
		f = sp.formats[""]
	}
	if f == nil {
		return sp.defaultPrintf(t, g)
	}
	text := f.text
	if !strings.HasSuffix(text, "\n") {
		text += "\n"
	}
	args := []btlang.Expr{t.str(text)}
	for _, v := range f.args {
		args = append(args, sp.expr(t, v, g, false))
	}
	return t.stmt(t.call("printf", args...))
}

// events returns the EventProbes of events mode: one per group, its
// probes and filter printed by the language's printer.
func (sp *flagSpec) events(sels []*flagSelector) ([]EventProbe, error) {
	pr, err := sp.prepare(sels)
	if err != nil {
		return nil, err
	}
	groups, err := sp.groups(sels, pr)
	if err != nil {
		return nil, err
	}
	var eps []EventProbe
	for _, g := range groups {
		t := &flagTreeBuilder{}
		var probes []string
		for _, p := range g.probes {
			probes = append(probes, p.String())
		}
		ep := EventProbe{Probe: strings.Join(probes, ",")}
		if pred := t.and(sp.preds(t, g)); pred != nil {
			ep.Filter = btlang.ExprString(pred)
		}
		if sp.strLen != DefaultStrLen {
			ep.StrLen = sp.strLen
		}
		if g.gos > 0 && !g.ret {
			ep.Fields = sp.fields
		}
		strs := sp.strs[""] | sp.strs[g.probe]
		if g.others == 0 {
			// Go functions' strings are read by their types.
			strs = 0
		}
		for i := range maxFlagArgs {
			// An argument a probe lacks is not read: events carry
			// the arguments each site has.
			if strs&(1<<i) != 0 {
				ep.Strings = append(ep.Strings, i)
			}
		}
		eps = append(eps, ep)
	}
	return eps, nil
}

// latencyGroup returns the groups of the probes name means: NAME or
// PROVIDER:NAME of a USDT probe, or a function as uprobe:FUNC; nil if
// none.
func (sp *flagSpec) latencyGroup(all []flagProbe, name string) ([]*flagGroup, error) {
	var groups []*flagGroup
	for _, ret := range []bool{false, true} {
		g := &flagGroup{ret: ret}
		for _, p := range all {
			_, short, _ := strings.Cut(p.name, ":")
			if p.ret == ret && (p.name == name || short == name) {
				if err := g.add(p); err != nil {
					return nil, err
				}
			}
		}
		if len(g.probes) > 0 {
			groups = append(groups, g)
		}
	}
	return groups, nil
}

// defaultPrintf prints what a probe without a format prints among probes
// with one: its name and every argument.
func (sp *flagSpec) defaultPrintf(t *flagTreeBuilder, g *flagGroup) btlang.Stmt {
	strs := sp.strs[""] | sp.strs[g.probe]
	// The group's probes share their per-probe flags, not their count of
	// arguments: print the ones every probe has.
	n := max(g.args, 0)
	text := "%s"
	args := []btlang.Expr{t.builtin("probe")}
	for i := range n {
		v := flagValue{arg: i, str: strs&(1<<i) != 0}
		if v.str {
			text += " arg" + strconv.Itoa(i) + "=\"%s\""
		} else {
			text += " arg" + strconv.Itoa(i) + "=%lld"
		}
		args = append(args, sp.expr(t, v, g, false))
	}
	return t.stmt(t.call("printf", append([]btlang.Expr{t.str(text + "\n")}, args...)...))
}

// preds returns the filters that apply to g's probes as predicates.
func (sp *flagSpec) preds(t *flagTreeBuilder, g *flagGroup) []btlang.Expr {
	var preds []btlang.Expr
	for _, f := range sp.filters {
		if f.probe != "" && f.probe != g.probe {
			continue
		}
		lhs := f.lhs
		var rhs btlang.Expr
		switch {
		case f.isText:
			lhs.str = true
			rhs = t.str(f.text)
		case f.neg:
			rhs = &btlang.Unary{ExprBase: t.base(), Op: "-", X: t.int(f.num)}
		default:
			rhs = t.int(f.num)
		}
		preds = append(preds, t.binary(f.op, sp.expr(t, lhs, g, false), rhs))
	}
	return preds
}

// expr is v for g's probes: a uretprobe's arg0 is retval; an argument
// --str names is read as a string.
func (sp *flagSpec) expr(t *flagTreeBuilder, v flagValue, g *flagGroup, auto bool) btlang.Expr {
	if v.builtin != "" {
		return t.builtin(v.builtin)
	}
	if v.name != "" {
		return &btlang.ArgField{ExprBase: t.base(), Name: v.name}
	}
	a := t.arg(v.arg)
	if g.ret {
		a = t.builtin("retval")
	}
	if v.str || auto && (sp.strs[""]|sp.strs[g.probe])&(1<<v.arg) != 0 {
		if sp.strLen == 64 {
			return t.call("str", a)
		}
		return t.call("str", a, t.int(uint64(sp.strLen-1)))
	}
	return a
}
