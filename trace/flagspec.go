package trace

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/usdtkit/usdtkit/internal/escape"
	"github.com/usdtkit/usdtkit/internal/golang/gofunc"
	"github.com/usdtkit/usdtkit/internal/lang/btlang"
)

// Modes of Flags.
const (
	modeEvents = iota
	modeCount
	modeHist
	modeLatency
	modeFormat
)

// maxFlagArgs is one more than the highest argN a flag may name.
const maxFlagArgs = MaxArgs

// flagSpec is Flags parsed.
type flagSpec struct {
	mode int
	// stacks adds ustack to modeCount's keys (Flags.Stacks).
	stacks  bool
	by      []flagValue
	hist    flagValue
	start   string
	done    string
	filters []flagFilter
	// formats and strs are by probe name, "" for every probe.
	formats map[string]*flagFormat
	strs    map[string]uint16
	strLen  int
	// names is the first flag that names a value (a Go function's), for
	// the error when a probe it applies to is no Go function.
	names string
	// fields are Flags.Fields: Go fields events carry.
	fields []string
}

// flagValue is what a key, a histogram or a format reads: pid, tid,
// comm, argument arg (as a string when str), or a Go function's value
// by name (args.NAME).
type flagValue struct {
	builtin string
	arg     int
	str     bool
	name    string
}

// flagFilter is one Flags.Filters entry.
type flagFilter struct {
	src   string
	probe string
	lhs   flagValue
	op    string
	// num is an integer, negated when neg (never for 0); text a
	// string's bytes (isText).
	num    uint64
	neg    bool
	text   string
	isText bool
}

// flagFormat is one Flags.Formats entry: the printf format (without the
// newline) and the values its verbs print.
type flagFormat struct {
	src  string
	text string
	args []flagValue
}

// parseFlags parses f; events says f is for FlagEvents, which takes no
// Count, Hist, Latency or Formats.
func parseFlags(f *Flags, events bool) (*flagSpec, error) {
	sp := &flagSpec{strs: make(map[string]uint16), formats: make(map[string]*flagFormat), strLen: f.StrLen}
	if sp.strLen == 0 {
		sp.strLen = 64
	}
	if sp.strLen < 2 || sp.strLen > MaxStrLen {
		return nil, flagErrorf("--strlen", "%d: want 2 to %d bytes, the NUL included", f.StrLen, MaxStrLen)
	}
	modes := 0
	if f.Count {
		modes++
		sp.mode = modeCount
	}
	if f.Stacks {
		modes++
		sp.mode, sp.stacks = modeCount, true
	}
	if f.Hist != "" {
		modes++
		sp.mode = modeHist
		v, named, err := parseValue("--hist", f.Hist, false)
		if named {
			sp.names = "--hist " + f.Hist
		} else if err != nil || v.builtin != "" || v.str {
			return nil, flagErrorf("--hist", "%q: want argN, N from 0 to 11 (or the name of a Go function's value)", f.Hist)
		}
		sp.hist = v
	}
	if f.Latency != "" {
		modes++
		sp.mode = modeLatency
		start, done, ok := strings.Cut(f.Latency, ",")
		if !ok || start == "" || done == "" {
			return nil, flagErrorf("--latency", "%q: want START,DONE", f.Latency)
		}
		sp.start, sp.done = escape.Literal(start), escape.Literal(done)
	}
	if modes > 1 {
		return nil, flagErrorf("--count", "--count, --stacks, --hist and --latency exclude each other")
	}
	if len(f.Formats) > 0 {
		if modes > 0 {
			return nil, flagErrorf("--format", "--format prints events; it does not go with --count, --stacks, --hist or --latency")
		}
		sp.mode = modeFormat
	}
	if len(f.By) > 0 && sp.mode != modeCount && sp.mode != modeHist {
		return nil, flagErrorf("--by", "--by (--count-by) needs --count, --stacks or --hist")
	}
	for _, b := range f.By {
		v, named, err := parseValue("--by", b, true)
		if err != nil || named {
			return nil, flagErrorf("--by", "%q: want pid, tid, comm, argN or str(argN)", b)
		}
		sp.by = append(sp.by, v)
	}
	for _, s := range f.Strings {
		probe, num, ok := strings.Cut(s, "=")
		if !ok {
			probe, num = "", s
		}
		n, err := strconv.Atoi(num)
		if err != nil || n < 0 || n >= maxFlagArgs || (ok && !strings.Contains(probe, ":")) {
			return nil, flagErrorf("--str "+s, "want N or PROVIDER:NAME=N, N from 0 to 11")
		}
		sp.strs[escape.Literal(probe)] |= 1 << n
	}
	for _, s := range f.Filters {
		ff, named, err := parseFlagFilter(s)
		if err != nil {
			return nil, err
		}
		if named && sp.names == "" {
			sp.names = "--filter " + s
		}
		sp.filters = append(sp.filters, ff)
	}
	for _, s := range f.Formats {
		probe, text := "", s
		if i := strings.IndexByte(s, '='); i > 0 && !strings.ContainsAny(s[:i], "\"% ") && strings.Contains(s[:i], ":") {
			probe, text = escape.Literal(s[:i]), s[i+1:]
		}
		ff, named, err := parseFlagFormat(text)
		if err != nil {
			return nil, err
		}
		if named && sp.names == "" {
			sp.names = "--format " + s
		}
		if _, dup := sp.formats[probe]; dup {
			return nil, flagErrorf("--format", "two formats for %s", or(escape.Name(probe), "every probe"))
		}
		sp.formats[probe] = ff
	}
	for _, fl := range f.Fields {
		if !isName(fl) || !strings.Contains(fl, ".") {
			return nil, flagErrorf("--field "+fl, "want PARAM.FIELD[.FIELD...], a field through a pointer parameter of a Go function")
		}
		sp.fields = append(sp.fields, fl)
	}
	if events && sp.mode != modeEvents {
		return nil, flagErrorf("--count", "events are printed without --count, --hist, --latency or --format: use FlagProgram")
	}
	if !events && sp.mode == modeEvents {
		return nil, ErrNoProgram
	}
	return sp, nil
}

// parseValue parses argN, str(argN) and, with builtins, pid, tid and
// comm; without, a Go value's name (an identifier or a dotted path of
// them), which named reports. flag names s in errors.
func parseValue(flag, s string, builtins bool) (v flagValue, named bool, err error) {
	x, err := btlang.ParseExpr(flag, s, &btlang.ExprOptions{Names: !builtins})
	if err != nil {
		return v, false, err
	}
	return flagValueOf(x, builtins)
}

// flagValueOf is what a flag reads as expression x says: argN, str(argN),
// with builtins pid, tid or comm, or a Go value by name (named).
func flagValueOf(x btlang.Expr, builtins bool) (v flagValue, named bool, err error) {
	switch x := x.(type) {
	case *btlang.Builtin:
		if x.Arg >= 0 {
			return flagValue{arg: x.Arg}, false, nil
		}
		if builtins && (x.Name == "pid" || x.Name == "tid" || x.Name == "comm") {
			return flagValue{builtin: x.Name}, false, nil
		}
	case *btlang.Call:
		if x.Name != "str" {
			break
		}
		if len(x.Args) == 1 {
			if a, ok := x.Args[0].(*btlang.Builtin); ok && a.Arg >= 0 {
				return flagValue{arg: a.Arg, str: true}, false, nil
			}
		}
		return v, false, fmt.Errorf("%q: want str(argN)", btlang.ExprString(x))
	case *btlang.ArgField:
		if !x.Arrow {
			return flagValue{name: x.Name}, true, nil
		}
	}
	return v, false, fmt.Errorf("%q: want argN", btlang.ExprString(x))
}

// isName reports whether s is a Go identifier or a dotted path of them,
// and not argN.
func isName(s string) bool {
	if strings.HasPrefix(s, "arg") && strings.Trim(s[3:], "0123456789") == "" {
		return false
	}
	for _, part := range strings.Split(s, ".") {
		if part == "" || part[0] >= '0' && part[0] <= '9' {
			return false
		}
		for i := 0; i < len(part); i++ {
			c := part[i]
			if !(c == '_' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9') {
				return false
			}
		}
	}
	return true
}

// filterOps are the comparisons a filter takes.
var filterOps = map[string]bool{"==": true, "!=": true, "<": true, "<=": true, ">": true, ">=": true}

// stringHint says how strings are written, for errors in a fragment at
// or after a '"'.
const stringHint = "; a string is written \"TEXT\" with the escapes \\n \\t \\\\ \\\" \\xNN"

// fragmentError is the sentence of err, btlang's error in fragment src.
func fragmentError(err error, src string) string {
	var e *btlang.Error
	if !errors.As(err, &e) {
		return err.Error()
	}
	// The byte of src, counted from 1, at the error's line and column.
	at := e.Pos.Col
	for line, rest := 1, src; line < e.Pos.Line; line++ {
		i := strings.IndexByte(rest, '\n')
		if i < 0 {
			break
		}
		at += i + 1
		rest = rest[i+1:]
	}
	msg := fmt.Sprintf("at byte %d: %s", at, e.Msg)
	if q := strings.IndexByte(src, '"'); q >= 0 && at > q {
		msg += stringHint
	}
	return msg
}

// parseFlagFilter parses [PROVIDER:NAME=]LHS OP VALUE, LHS OP VALUE an
// expression of the language with Go values by name.
func parseFlagFilter(s string) (ff flagFilter, named bool, err error) {
	bad := func(why string) error {
		return flagErrorf("--filter "+s, "%s: want argN OP VALUE, str(argN) OP \"TEXT\" or PROVIDER:NAME=…, OP one of == != < <= > >=", why)
	}
	ff.src = s
	expr := s
	if i := strings.IndexByte(s, '='); i > 0 && s[i-1] != '!' && s[i-1] != '<' && s[i-1] != '>' && s[i-1] != '=' &&
		(i+1 == len(s) || s[i+1] != '=') && strings.Contains(s[:i], ":") && !strings.ContainsAny(s[:i], "\" (") {
		ff.probe, expr = escape.Literal(s[:i]), s[i+1:]
	}
	x, err := btlang.ParseExpr("--filter", expr, &btlang.ExprOptions{Names: true})
	if err != nil {
		return ff, false, bad(fragmentError(err, expr))
	}
	cmp, ok := x.(*btlang.Binary)
	switch {
	case !ok:
		return ff, false, bad("no operator")
	case cmp.Op == "&&":
		return ff, false, bad("one comparison per --filter (they are ANDed)")
	case !filterOps[cmp.Op]:
		return ff, false, bad(fmt.Sprintf("%s is not a comparison", cmp.Op))
	}
	v, named, err := flagValueOf(cmp.X, false)
	if err != nil {
		return ff, false, bad(err.Error())
	}
	ff.lhs, ff.op = v, cmp.Op
	if lit, ok := cmp.Y.(*btlang.StrLit); ok {
		if ff.op != "==" && ff.op != "!=" {
			return ff, false, bad("strings compare with == or != only")
		}
		if len(lit.Val) >= 64 {
			return ff, false, bad("a string to compare is at most 63 bytes")
		}
		ff.text, ff.isText = lit.Val, true
		return ff, named, nil
	}
	if v.str {
		return ff, false, bad("str(argN) compares with a \"string\"")
	}
	if ff.num, ff.neg, ok = intValue(cmp.Y); !ok {
		return ff, false, bad(fmt.Sprintf("value %q is not an integer", btlang.ExprString(cmp.Y)))
	}
	return ff, named, nil
}

// intValue returns the integer x is, a literal or a negated one from
// -2^63 (neg, never for 0).
func intValue(x btlang.Expr) (n uint64, neg, ok bool) {
	if u, isUnary := x.(*btlang.Unary); isUnary && u.Op == "-" {
		n, neg, ok = intValue(u.X)
		if !ok || neg || n > 1<<63 {
			return 0, false, false
		}
		return n, n != 0, true
	}
	lit, ok := x.(*btlang.IntLit)
	if !ok || lit.Param != "" {
		return 0, false, false
	}
	return lit.Val, false, true
}

// parseFlagFormat parses '"TEXT", argN, str(argN)...' or 'TEXT' whose
// verbs take arg0, arg1... in order, into bpftrace's printf: 64-bit
// integer verbs (%d is %lld), %s for strings.
func parseFlagFormat(s string) (ff *flagFormat, named bool, err error) {
	bad := func(why string) error { return flagErrorf("--format "+s, "%s", why) }
	ff = &flagFormat{src: s}
	text := s
	var refs []flagValue
	quoted := false
	if strings.HasPrefix(strings.TrimSpace(s), `"`) {
		quoted = true
		list, err := btlang.ParseExprList("--format", s, &btlang.ExprOptions{Names: true})
		if err != nil {
			return nil, false, bad(fragmentError(err, s))
		}
		lit, ok := list[0].(*btlang.StrLit)
		if !ok {
			return nil, false, bad(fmt.Sprintf("want \"FORMAT\", then its arguments, have %s first", btlang.ExprString(list[0])))
		}
		text = lit.Val
		for _, a := range list[1:] {
			v, isName, err := flagValueOf(a, false)
			if err != nil {
				return nil, false, bad(err.Error())
			}
			named = named || isName
			refs = append(refs, v)
		}
	}
	var b strings.Builder
	next := 0
	for len(text) > 0 {
		i := strings.IndexByte(text, '%')
		if i < 0 {
			b.WriteString(text)
			break
		}
		b.WriteString(text[:i])
		j := i + 1
		for j < len(text) && strings.IndexByte("-+# 0123456789.", text[j]) >= 0 {
			j++
		}
		if j == len(text) {
			return nil, false, bad(fmt.Sprintf("verb %q has no letter", text[i:]))
		}
		verb, flags := text[j], text[i+1:j]
		if verb == '%' && j == i+1 {
			b.WriteString("%%")
			text = text[j+1:]
			continue
		}
		if strings.ContainsAny(flags, "+# ") {
			return nil, false, bad(fmt.Sprintf("%s: printf takes the flag -, a width and a precision, not + # or a space", text[i:j+1]))
		}
		var out string
		switch verb {
		case 'd', 'i':
			out = "lld"
		case 'u', 'x', 'X', 'o':
			out = "ll" + string(verb)
		case 'p', 'c', 's':
			out = string(verb)
		default:
			return nil, false, bad(fmt.Sprintf("unknown verb %%%c", verb))
		}
		var v flagValue
		if quoted {
			if next >= len(refs) {
				return nil, false, bad("more verbs than arguments")
			}
			v = refs[next]
			if v.name == "" && v.str != (verb == 's') {
				return nil, false, bad(fmt.Sprintf("%%%c prints arg%d: %%s goes with str(argN) and only with it", verb, v.arg))
			}
		} else {
			if next >= maxFlagArgs {
				return nil, false, bad(fmt.Sprintf("more than %d verbs", maxFlagArgs))
			}
			v = flagValue{arg: next, str: verb == 's'}
		}
		next++
		ff.args = append(ff.args, v)
		b.WriteString("%" + flags + out)
		text = text[j+1:]
	}
	if quoted && next != len(refs) {
		return nil, false, bad(fmt.Sprintf("%d arguments for %d verbs", len(refs), next))
	}
	ff.text = b.String()
	return ff, named, nil
}

// checkArgs checks that every argument the flags read for p is one p
// has.
func (sp *flagSpec) checkArgs(p flagProbe) error {
	has := func(arg int, what string) error {
		if arg < p.args {
			return nil
		}
		var list string
		switch p.args {
		case 0:
			list = "no arguments"
		case 1:
			list = "1 argument (arg0)"
		default:
			list = fmt.Sprintf("%d arguments (arg0..arg%d)", p.args, p.args-1)
		}
		return fmt.Errorf("%s has %s, no arg%d to %s", escape.Name(p.name), list, arg, what)
	}
	strs := sp.strs[""] | sp.strs[p.name]
	if p.goVals != nil {
		// Go functions' strings are read by their types.
		strs = 0
	}
	for i := range maxFlagArgs {
		if strs&(1<<i) != 0 {
			if err := has(i, "read as a string"); err != nil {
				return err
			}
		}
	}
	for _, f := range sp.filters {
		if f.probe != "" && f.probe != p.name {
			continue
		}
		if f.lhs.name != "" {
			use := useNumber
			if f.isText {
				use = useText
			}
			if err := sp.checkName(p, f.lhs.name, "--filter "+f.src, use); err != nil {
				return err
			}
			continue
		}
		if err := has(f.lhs.arg, "filter on"); err != nil {
			return err
		}
		if f.isText && !f.lhs.str && strs&(1<<f.lhs.arg) == 0 {
			return flagErrorf("--filter "+f.src, "arg%d of %s compares with a string: read it as one with --str %d, or write str(arg%d)", f.lhs.arg, escape.Name(p.name), f.lhs.arg, f.lhs.arg)
		}
	}
	if sp.mode == modeHist && sp.hist.name != "" {
		if err := sp.checkName(p, sp.hist.name, "--hist "+sp.hist.name, useNumber); err != nil {
			return err
		}
	} else if sp.mode == modeHist {
		if err := has(sp.hist.arg, "make a histogram of"); err != nil {
			return err
		}
	}
	for _, v := range sp.by {
		if v.builtin == "" {
			if err := has(v.arg, "key by"); err != nil {
				return err
			}
		}
	}
	if sp.mode == modeFormat {
		f := sp.formats[p.name]
		if f == nil {
			f = sp.formats[""]
		}
		if f != nil {
			for _, v := range f.args {
				if v.name != "" {
					if err := sp.checkName(p, v.name, "--format "+f.src, usePrint); err != nil {
						return err
					}
					continue
				}
				what := "print"
				if v.str || strs&(1<<v.arg) != 0 {
					what = "read as a string"
				}
				if err := has(v.arg, what); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// Uses of a Go value by name, for checkName.
const (
	useNumber = iota // compared with an integer, or a histogram's
	useText          // compared with a string
	usePrint         // printed
)

// checkName checks that p is a Go function (at its entry or return)
// with the value name a flag reads: a parameter or result of a kind the
// use takes, or at the entry a field path through a parameter (whose
// fields Compile checks).
func (sp *flagSpec) checkName(p flagProbe, name, flag string, use int) error {
	if p.goVals == nil {
		return flagErrorf(flag, "values by name are for Go functions only (uprobe:PATH:pkg.Func, at its entry or return); %s is not one", escape.Name(p.name))
	}
	what := "parameter"
	if p.ret {
		what = "result"
	}
	root, _, isField := strings.Cut(name, ".")
	var names []string
	for _, v := range p.goVals {
		names = append(names, v.name)
		if v.name != name {
			continue
		}
		switch {
		case v.kind == gofunc.Unreadable:
			return flagErrorf(flag, "%s: %s has type %s, which a uprobe cannot read", escape.Name(p.name), name, v.typ)
		case use == useText && v.kind != gofunc.String:
			return flagErrorf(flag, "%s: %s is a %s; it compares with an integer, not a string", escape.Name(p.name), name, v.typ)
		case use == useNumber && v.kind != gofunc.Int && v.kind != gofunc.Uint && v.kind != gofunc.Bool && v.kind != gofunc.Pointer:
			return flagErrorf(flag, "%s: %s is a %s; filters and histograms take integers, bools and pointers (and strings compared with \"TEXT\")", escape.Name(p.name), name, v.typ)
		}
		return nil
	}
	if isField && !p.ret && slices.ContainsFunc(p.goVals, func(v goVal) bool { return v.name == root }) {
		if use == useText {
			return flagErrorf(flag, "%s: field %s compares with an integer, not a string", escape.Name(p.name), name)
		}
		return nil
	}
	list := "none"
	if len(names) > 0 {
		list = strings.Join(names, ", ")
	}
	return flagErrorf(flag, "%s has no %s %q (it has %s)", escape.Name(p.name), what, name, list)
}
