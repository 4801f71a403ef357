package trace

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/usdtkit/usdtkit/internal/escape"
	"github.com/usdtkit/usdtkit/internal/gofunc"
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
	// num is an integer's decimal text; text a string's bytes (isText).
	num    string
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
		v, named, err := parseValue(f.Hist, false)
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
		v, named, err := parseValue(b, true)
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

// parseArg parses argN, N from 0 to 11.
func parseArg(s string) (int, bool) {
	n, ok := strings.CutPrefix(s, "arg")
	if !ok || n == "" || len(n) > 2 || strings.Trim(n, "0123456789") != "" {
		return 0, false
	}
	i, _ := strconv.Atoi(n)
	return i, i < maxFlagArgs
}

// parseValue parses argN, str(argN) and, with builtins, pid, tid and
// comm. named reports a Go value's name (an identifier or a dotted path
// of them).
func parseValue(s string, builtins bool) (v flagValue, named bool, err error) {
	s = strings.TrimSpace(s)
	if builtins && (s == "pid" || s == "tid" || s == "comm") {
		return flagValue{builtin: s}, false, nil
	}
	if inner, ok := strings.CutPrefix(s, "str("); ok {
		inner, ok = strings.CutSuffix(inner, ")")
		n, isArg := parseArg(strings.TrimSpace(inner))
		if !ok || !isArg {
			return v, false, fmt.Errorf("%q: want str(argN)", s)
		}
		return flagValue{arg: n, str: true}, false, nil
	}
	if n, ok := parseArg(s); ok {
		return flagValue{arg: n}, false, nil
	}
	if isName(s) {
		return flagValue{name: s}, true, nil
	}
	return v, false, fmt.Errorf("%q: want argN", s)
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

// filterOps are the comparisons a filter takes, two-character ones first
// so that "<=" is not read as "<".
var filterOps = []string{"==", "!=", "<=", ">=", "<", ">"}

// parseFlagFilter parses [PROVIDER:NAME=]LHS OP VALUE.
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
	// The operator is the first one outside a quoted string.
	at, op := -1, ""
	for i := 0; i < len(expr) && at < 0; i++ {
		if expr[i] == '"' {
			break
		}
		for _, o := range filterOps {
			if strings.HasPrefix(expr[i:], o) {
				at, op = i, o
				break
			}
		}
	}
	if at < 0 {
		return ff, false, bad("no operator")
	}
	lhs, rhs := strings.TrimSpace(expr[:at]), strings.TrimSpace(expr[at+len(op):])
	v, named, err := parseValue(lhs, false)
	if err != nil {
		return ff, false, bad(err.Error())
	}
	ff.lhs, ff.op = v, op
	if strings.HasPrefix(rhs, `"`) {
		text, rest, err := unquoteFlag(rhs)
		if err != nil || strings.TrimSpace(rest) != "" {
			return ff, false, bad("a string is written \"TEXT\" with the escapes \\n \\t \\\\ \\\" \\xNN")
		}
		if op != "==" && op != "!=" {
			return ff, false, bad("strings compare with == or != only")
		}
		if len(text) >= 64 {
			return ff, false, bad("a string to compare is at most 63 bytes")
		}
		ff.text, ff.isText = text, true
		return ff, named, nil
	}
	if v.str {
		return ff, false, bad("str(argN) compares with a \"string\"")
	}
	if n, err := strconv.ParseInt(rhs, 0, 64); err == nil {
		ff.num = strconv.FormatInt(n, 10)
	} else if u, err := strconv.ParseUint(rhs, 0, 64); err == nil {
		ff.num = strconv.FormatUint(u, 10)
	} else {
		return ff, false, bad(fmt.Sprintf("value %q is not an integer", rhs))
	}
	return ff, named, nil
}

// unquoteFlag reads a double-quoted string with the escapes \n \t \\ \"
// and \xNN from the start of s and returns it with the text after the
// closing quote.
func unquoteFlag(s string) (text, rest string, err error) {
	var b strings.Builder
	for i := 1; i < len(s); i++ {
		switch c := s[i]; c {
		case '"':
			return b.String(), s[i+1:], nil
		case '\\':
			i++
			if i == len(s) {
				return "", "", fmt.Errorf("unterminated escape")
			}
			switch s[i] {
			case 'n':
				b.WriteByte('\n')
			case 't':
				b.WriteByte('\t')
			case '\\', '"':
				b.WriteByte(s[i])
			case 'x':
				if i+2 >= len(s) {
					return "", "", fmt.Errorf("\\x wants two hexadecimal digits")
				}
				v, err := strconv.ParseUint(s[i+1:i+3], 16, 8)
				if err != nil {
					return "", "", fmt.Errorf("\\x wants two hexadecimal digits")
				}
				b.WriteByte(byte(v))
				i += 2
			default:
				return "", "", fmt.Errorf("unknown escape \\%c", s[i])
			}
		default:
			b.WriteByte(c)
		}
	}
	return "", "", fmt.Errorf("missing closing quote")
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
	if t := strings.TrimSpace(s); strings.HasPrefix(t, `"`) {
		quoted = true
		var rest string
		text, rest, err = unquoteFlag(t)
		if err != nil {
			return nil, false, bad(err.Error())
		}
		rest = strings.TrimSpace(rest)
		if rest != "" {
			r, ok := strings.CutPrefix(rest, ",")
			if !ok {
				return nil, false, bad(fmt.Sprintf("want a comma after the format, have %q", rest))
			}
			for _, a := range strings.Split(r, ",") {
				v, isName, err := parseValue(a, false)
				if err != nil {
					return nil, false, bad(err.Error())
				}
				named = named || isName
				refs = append(refs, v)
			}
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

// strLit writes s as a string literal of the language: printable ASCII
// as it is, '"' and '\' escaped, every other byte as \xNN.
func strLit(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"' || c == '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case c == '\n':
			b.WriteString(`\n`)
		case c == '\t':
			b.WriteString(`\t`)
		case c < 0x20 || c >= 0x7f:
			fmt.Fprintf(&b, `\x%02x`, c)
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// flagGroup is the probes one block of a flag program runs for: the
// same per-probe flags (probe, "" for none) and kind of arg0 (ret: a
// uretprobe's arg0 is retval).
type flagGroup struct {
	probe string
	ret   bool
	specs []string
	names []string
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
	if p.specErr != nil {
		return p.specErr
	}
	g.count(p)
	if len(g.specs) == 0 || p.args < g.args {
		g.args = p.args
	}
	g.specs = append(g.specs, p.spec)
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
	seen := make(map[string]bool)
	for _, s := range sels {
		for _, p := range s.found {
			// A probe whose spec has an error is named by its
			// selector only, which lists it once.
			if !seen[p.spec] || p.specErr != nil {
				seen[p.spec] = true
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

// groups returns the blocks to write: the selectors as written when no
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
			if s.spec == "" {
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
				if len(g.specs) == 0 || p.args < g.args {
					g.args = p.args
				}
			}
			g.specs = append(g.specs, s.spec)
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

// program writes the program: one block per group (two for --latency).
func (sp *flagSpec) program(sels []*flagSelector) (string, error) {
	pr, err := sp.prepare(sels)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	if sp.mode == modeLatency {
		start, err := sp.latencyGroup(pr.all, sp.start)
		if err != nil {
			return "", err
		}
		done, err := sp.latencyGroup(pr.all, sp.done)
		if err != nil {
			return "", err
		}
		if start == nil || done == nil {
			return "", flagErrorf("--latency", "%s and %s must be among the traced probes (%s)", escape.Name(sp.start), escape.Name(sp.done), escape.Name(strings.Join(pr.names, ", ")))
		}
		// Go functions pair by goroutine, which may change threads
		// between its start and its done; goroutine ids are per
		// process, and 0 is none read.
		key, cond := "pid, goid", "goid != 0"
		for _, g := range append(start, done...) {
			if g.others > 0 {
				key, cond = "tid", ""
			}
		}
		for _, g := range start {
			sp.block(&b, g, cond, "@start["+key+"] = nsecs;")
		}
		for _, g := range done {
			sp.block(&b, g, "@start["+key+"]", "@latency_ns[probe] = hist(nsecs - @start["+key+"]); delete(@start["+key+"]);")
		}
		return b.String(), nil
	}
	groups, err := sp.groups(sels, pr)
	if err != nil {
		return "", err
	}
	for _, g := range groups {
		var action string
		switch sp.mode {
		case modeCount, modeHist:
			keys := []string{"probe"}
			for _, v := range sp.by {
				keys = append(keys, sp.expr(v, g, true))
			}
			if sp.stacks {
				keys = append(keys, "ustack")
			}
			agg := "count()"
			if sp.mode == modeHist {
				agg = "hist(" + sp.expr(sp.hist, g, false) + ")"
			}
			action = "@[" + strings.Join(keys, ", ") + "] = " + agg + ";"
		case modeFormat:
			f := sp.formats[g.probe]
			if f == nil {
				f = sp.formats[""]
			}
			if f == nil {
				action = sp.defaultPrintf(g)
				break
			}
			text := f.text
			if !strings.HasSuffix(text, "\n") {
				text += "\n"
			}
			args := []string{strLit(text)}
			for _, v := range f.args {
				args = append(args, sp.expr(v, g, false))
			}
			action = "printf(" + strings.Join(args, ", ") + ");"
		}
		sp.block(&b, g, "", action)
	}
	return b.String(), nil
}

// events returns the EventProbes of events mode: one per group.
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
		ep := EventProbe{Probe: strings.Join(g.specs, ","), Filter: strings.Join(sp.preds(g), " && ")}
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
		if len(g.specs) > 0 {
			groups = append(groups, g)
		}
	}
	return groups, nil
}

// defaultPrintf prints what a probe without a format prints among probes
// with one: its name and every argument.
func (sp *flagSpec) defaultPrintf(g *flagGroup) string {
	strs := sp.strs[""] | sp.strs[g.probe]
	// The group's probes share their per-probe flags, not their count of
	// arguments: print the ones every probe has.
	n := max(g.args, 0)
	text := "%s"
	args := []string{"probe"}
	for i := range n {
		v := flagValue{arg: i, str: strs&(1<<i) != 0}
		if v.str {
			text += " arg" + strconv.Itoa(i) + "=\"%s\""
		} else {
			text += " arg" + strconv.Itoa(i) + "=%lld"
		}
		args = append(args, sp.expr(v, g, false))
	}
	return "printf(" + strLit(text+"\n") + ", " + strings.Join(args, ", ") + ");"
}

// block writes one probe block: g's probes, the filters that apply to
// them ANDed after cond, and action.
func (sp *flagSpec) block(b *strings.Builder, g *flagGroup, cond, action string) {
	b.WriteString(strings.Join(g.specs, ",\n"))
	var preds []string
	if cond != "" {
		preds = append(preds, cond)
	}
	preds = append(preds, sp.preds(g)...)
	if len(preds) > 0 {
		b.WriteString("\n/" + strings.Join(preds, " && ") + "/")
	}
	b.WriteString("\n{ " + action + " }\n")
}

// preds returns the filters that apply to g's probes as predicates.
func (sp *flagSpec) preds(g *flagGroup) []string {
	var preds []string
	for _, f := range sp.filters {
		if f.probe != "" && f.probe != g.probe {
			continue
		}
		rhs := f.num
		if f.isText {
			rhs = strLit(f.text)
		}
		lhs := f.lhs
		if f.isText {
			lhs.str = true
		}
		preds = append(preds, sp.expr(lhs, g, false)+" "+f.op+" "+rhs)
	}
	return preds
}

// expr writes v for g's probes: a uretprobe's arg0 is retval; an
// argument --str names is read as a string.
func (sp *flagSpec) expr(v flagValue, g *flagGroup, auto bool) string {
	if v.builtin != "" {
		return v.builtin
	}
	if v.name != "" {
		return "args." + v.name
	}
	a := "arg" + strconv.Itoa(v.arg)
	if g.ret {
		a = "retval"
	}
	if v.str || auto && (sp.strs[""]|sp.strs[g.probe])&(1<<v.arg) != 0 {
		if sp.strLen == 64 {
			return "str(" + a + ")"
		}
		return "str(" + a + ", " + strconv.Itoa(sp.strLen-1) + ")"
	}
	return a
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
