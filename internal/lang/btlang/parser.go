package btlang

import (
	"strconv"
	"strings"
)

// MaxSourceSize is the largest program Parse accepts, in bytes.
const MaxSourceSize = 1 << 20

// maxDepth bounds the depth of the tree (nested operations, calls and
// blocks), and maxRecursion the parser's recursion (parentheses nest
// without adding nodes), so that hostile input cannot exhaust the stack.
// A printed tree of depth maxDepth parenthesises each level, which costs
// the parser two levels of recursion, so maxRecursion leaves room for it.
const (
	maxDepth     = 1000
	maxRecursion = 4 * maxDepth
)

// Parse parses a program in bpftrace's language. file names the source in
// positions ("-e" programs conventionally use "stdin"). It stops at the first
// syntax error and returns it as an ErrorList holding one *Error. The
// returned Program has no types yet; Check resolves them.
func Parse(file string, src []byte) (*Program, error) {
	return ParseWith(file, src, nil)
}

// ParseOptions are what ParseWith needs besides the source.
type ParseOptions struct {
	// Params are the positional parameters $1, $2… (bpftrace's arguments
	// after the program). As in bpftrace, $N is the integer Params[N-1]
	// spells (decimal, or 0x hex, 0 octal, optionally negative), an error
	// if it spells none (even ""); str($N) is its text; $# is
	// len(Params); a parameter not given is 0, or "" in str().
	Params []string
}

// ParseWith parses src as Parse does, with opts (nil: none).
func ParseWith(file string, src []byte, opts *ParseOptions) (*Program, error) {
	if len(src) > MaxSourceSize {
		return nil, ErrorList{errorf(Pos{File: file, Line: 1, Col: 1}, "the program is larger than %d bytes", MaxSourceSize)}
	}
	p := &parser{lx: lexer{file: file, src: string(src), line: 1, col: 1}, types: newCTypes()}
	if opts != nil {
		p.params = opts.Params
	}
	prog, err := p.program()
	if err != nil {
		return nil, ErrorList{err}
	}
	return prog, nil
}

// ExprOptions are what ParseExpr and ParseExprList need besides the
// source.
type ExprOptions struct {
	// Names reads a bare identifier that is not argN, and a dotted path
	// of them, as a probe argument by name: n is args.n and s.hits is
	// args.s.hits, builtins' names (pid, comm…) and args included. A
	// name followed by "(" stays a call. usdtkit trace's flags take Go
	// functions' values so.
	Names bool
}

// ParseExpr parses src as one expression, a fragment of a program such as
// a predicate; file names it in positions (line 1, the column its byte).
// Errors are an ErrorList holding one *Error. The Expr has no type yet.
func ParseExpr(file, src string, opts *ExprOptions) (Expr, error) {
	list, err := parseExprs(file, src, opts, false)
	if err != nil {
		return nil, err
	}
	return list[0], nil
}

// ParseExprList parses src as expressions separated by commas (at least
// one), as the arguments of a call such as printf's, with ParseExpr's
// positions and errors.
func ParseExprList(file, src string, opts *ExprOptions) ([]Expr, error) {
	return parseExprs(file, src, opts, true)
}

func parseExprs(file, src string, opts *ExprOptions, list bool) ([]Expr, error) {
	start := Pos{File: file, Line: 1, Col: 1}
	if len(src) > MaxSourceSize {
		return nil, ErrorList{errorf(start, "the expression is larger than %d bytes", MaxSourceSize)}
	}
	p := &parser{lx: lexer{file: file, src: src, line: 1, col: 1}, types: newCTypes()}
	if opts != nil {
		p.names = opts.Names
	}
	p.next(false)
	var es []Expr
	for p.err == nil {
		es = append(es, p.expr())
		if !list || !p.tok.is(",") {
			break
		}
		p.next(false)
	}
	if p.err == nil && p.tok.kind != tEOF {
		want := "the end of the expression"
		if list {
			want = "\",\" or the end of the list"
		}
		p.failf(p.tok.pos, "expected %s, found %s", want, p.tok.describe())
	}
	if p.err != nil {
		return nil, ErrorList{p.err}
	}
	for _, e := range es {
		if pos, deep := tooDeep(e, 0); deep {
			return nil, ErrorList{errorf(pos, "the expression nests deeper than %d levels", maxDepth)}
		}
	}
	return es, nil
}

// Compile parses src and checks it: Parse, then Check with opts. On error
// the Program is nil; errors in the program come as an ErrorList.
func Compile(file string, src []byte, opts *CheckOptions) (*Program, error) {
	prog, err := Parse(file, src)
	if err != nil {
		return nil, err
	}
	if err := Check(prog, opts); err != nil {
		return nil, err
	}
	return prog, nil
}

// parser is a recursive-descent parser. The first error is kept in err and
// turns the token stream into end of input, so every loop ends and the
// descent unwinds without panics; callers get placeholder nodes meanwhile.
type parser struct {
	lx     lexer
	tok    token
	depth  int
	err    *Error
	params []string
	// loops counts the while loops the parser is in.
	loops int
	// names reads bare identifiers as argument names (ExprOptions.Names).
	names bool
	// types are the types the program has defined so far.
	types cTypes
}

func newCTypes() cTypes {
	return cTypes{records: map[string]*Record{}, enums: map[string]int64{}}
}

func (p *parser) fail(err *Error) {
	if p.err == nil {
		p.err = err
	}
	p.tok = token{kind: tEOF, pos: err.Pos}
}

func (p *parser) failf(pos Pos, format string, args ...any) { p.fail(errorf(pos, format, args...)) }

// next reads the next token; probeMode selects the top-level lexer.
func (p *parser) next(probeMode bool) {
	if p.err != nil {
		return
	}
	t, err := p.lx.next(probeMode)
	if err != nil {
		p.fail(err)
	}
	p.tok = t
}

func (p *parser) expect(punct string, probeMode bool) token {
	t := p.tok
	if !t.is(punct) {
		p.failf(t.pos, "expected %q, found %s", punct, t.describe())
	}
	p.next(probeMode)
	return t
}

func (p *parser) enter() {
	p.depth++
	if p.depth > maxRecursion {
		p.failf(p.tok.pos, "the program nests deeper than %d levels", maxDepth)
	}
}

func (p *parser) program() (*Program, *Error) {
	prog := &Program{}
	p.next(true)
	if p.tok.kind == tEOF {
		p.failf(p.tok.pos, "the program has no probes")
	}
	for p.tok.kind != tEOF {
		if p.tok.kind == tProbe {
			switch p.tok.text {
			case "struct", "union", "enum", "typedef":
				p.typeDef(prog)
				continue
			case "config":
				if len(prog.Blocks) > 0 || prog.Config != nil {
					p.failf(p.tok.pos, "a config block must come first, before the probes (and only once)")
					continue
				}
				p.config(prog)
				continue
			}
		}
		prog.Blocks = append(prog.Blocks, p.block())
	}
	if p.err == nil && len(prog.Blocks) == 0 {
		p.failf(p.tok.pos, "the program has no probes")
	}
	if p.err != nil {
		return nil, p.err
	}
	for _, b := range prog.Blocks {
		if pos, deep := tooDeep(b, 0); deep {
			return nil, errorf(pos, "the program nests deeper than %d levels", maxDepth)
		}
	}
	return prog, nil
}

func (p *parser) probe() *Probe {
	t := p.tok
	if t.kind != tProbe {
		if strings.HasPrefix(p.lx.src[t.off:], "#") {
			p.failf(t.pos, "preprocessor directives are not supported")
		}
		p.failf(t.pos, "expected a probe, found %s", t.describe())
		return &Probe{}
	}
	switch t.text {
	case "struct", "union", "enum", "typedef":
		p.failf(t.pos, "a type definition must come before or between probe blocks, not in a list of probes")
	case "config":
		p.failf(t.pos, "a config block must come first, before the probes, as config = { NAME = VALUE; … }")
	case "macro", "fn":
		p.failf(t.pos, "%s definitions are not supported", t.text)
	}
	if strings.HasPrefix(t.text, "#") {
		p.failf(t.pos, "preprocessor directives are not supported")
	}
	if strings.Contains(t.text, "$") {
		t.text = p.probeParams(t)
	}
	pr, err := parseProbe(t)
	if err != nil {
		p.fail(err)
		return &Probe{}
	}
	p.next(true)
	return pr
}

// config parses config = { NAME = VALUE; … }; the current token is the
// probe-mode token "config". It reads on in probe mode after the "}".
func (p *parser) config(prog *Program) {
	p.next(false)
	p.expect("=", false)
	p.expect("{", false)
	prog.Config = []*ConfigEntry{}
	for p.err == nil && !p.tok.is("}") {
		if p.tok.kind != tIdent {
			p.failf(p.tok.pos, "expected the name of a config option, found %s", p.tok.describe())
			return
		}
		e := &ConfigEntry{At: p.tok.pos, Name: p.tok.text}
		p.next(false)
		p.expect("=", false)
		switch v := p.tok; v.kind {
		case tInt:
			e.Value, e.Int = strconv.FormatUint(v.val, 10), true
		case tString, tIdent:
			e.Value = v.text
		default:
			p.failf(v.pos, "expected the value of %s, a number, a string or a word, found %s", e.Name, v.describe())
			return
		}
		p.next(false)
		prog.Config = append(prog.Config, e)
		if p.tok.is(";") {
			p.next(false)
		} else if !p.tok.is("}") {
			p.failf(p.tok.pos, "expected \";\" or \"}\" after %s's value, found %s", e.Name, p.tok.describe())
		}
	}
	p.next(true)
}

func (p *parser) block() *ProbeBlock {
	b := &ProbeBlock{At: p.tok.pos}
	b.Probes = append(b.Probes, p.probe())
	for p.tok.is(",") {
		p.next(true)
		b.Probes = append(b.Probes, p.probe())
	}
	if p.tok.is("/") {
		p.next(false)
		b.Pred = p.expr()
		if p.tok.kind != tEndPred {
			p.failf(p.tok.pos, "expected \"/\" and \"{\" after the predicate, found %s", p.tok.describe())
		}
		p.next(false)
	}
	if !p.tok.is("{") {
		p.failf(p.tok.pos, "expected \"{\" to start the action, found %s", p.tok.describe())
	}
	b.Body = p.stmts(true)
	return b
}

// stmts parses { stmt; stmt; … }. As in bpftrace, statements are separated
// by ";", the last one may have one, and an if needs none after its "}".
// After the closing "}" it reads on in probe mode when top is set.
func (p *parser) stmts(top bool) []Stmt {
	p.enter()
	defer func() { p.depth-- }()
	p.expect("{", false)
	var list []Stmt
	for p.err == nil && !p.tok.is("}") {
		if p.tok.kind == tEOF {
			p.failf(p.tok.pos, "the block is not closed with \"}\"")
			break
		}
		s, blockStmt := p.stmt()
		list = append(list, s)
		if blockStmt || p.tok.is("}") {
			continue
		}
		if !p.tok.is(";") {
			p.failf(p.tok.pos, "expected \";\" or \"}\" after the statement, found %s", p.tok.describe())
		}
		p.next(false)
	}
	p.next(top)
	return list
}

var unsupportedStmts = map[string]string{
	"for": "for loops are not supported yet",
}

var assignOps = map[string]bool{
	"=": true, "+=": true, "-=": true, "*=": true, "/=": true, "%=": true,
	"&=": true, "|=": true, "^=": true, "<<=": true, ">>=": true,
}

// stmt parses one statement; blockStmt reports an if, which ends in "}".
func (p *parser) stmt() (s Stmt, blockStmt bool) {
	t := p.tok
	if t.kind == tIdent {
		if msg, ok := unsupportedStmts[t.text]; ok {
			p.failf(t.pos, "%s", msg)
		}
		if t.text == "if" {
			return p.ifStmt(), true
		}
		if t.text == "let" {
			return p.let(), false
		}
		if t.text == "while" {
			p.next(false)
			// bpftrace 0.2x takes a condition without parentheses too;
			// with them it is a parenthesised expression.
			w := &While{At: t.pos, Cond: p.expr()}
			p.enter()
			p.loops++
			w.Body = p.stmts(false)
			p.loops--
			p.depth--
			return w, true
		}
		if t.text == "break" || t.text == "continue" {
			if p.loops == 0 {
				p.failf(t.pos, "%s is only allowed in a while loop", t.text)
			}
			p.next(false)
			if t.text == "break" {
				return &Break{At: t.pos}, false
			}
			return &Continue{At: t.pos}, false
		}
		if t.text == "unroll" {
			p.next(false)
			p.expect("(", false)
			u := &Unroll{At: t.pos, Count: p.expr()}
			p.expect(")", false)
			p.enter()
			u.Body = p.stmts(false)
			p.depth--
			return u, true
		}
		if t.text == "return" {
			p.next(false)
			if !p.tok.is(";") && !p.tok.is("}") {
				p.failf(p.tok.pos, "return takes no value in a probe's action")
			}
			return &Return{At: t.pos}, false
		}
	}
	if t.is("++") || t.is("--") {
		p.next(false)
		target := p.unary()
		checkTarget(p, target, t.text)
		return &IncDec{At: t.pos, Target: target, Op: t.text, Prefix: true}, false
	}
	if t.kind == tPunct && !t.is("(") && !t.is("-") && !t.is("!") && !t.is("~") {
		p.failf(t.pos, "unexpected %s at the start of a statement", t.describe())
	}
	x := p.expr()
	switch {
	case p.tok.kind == tPunct && assignOps[p.tok.text]:
		op := p.tok.text
		checkTarget(p, x, op)
		p.next(false)
		return &Assign{At: t.pos, Target: x, Op: op, Value: p.expr()}, false
	case p.tok.is("++") || p.tok.is("--"):
		op := p.tok.text
		checkTarget(p, x, op)
		p.next(false)
		return &IncDec{At: t.pos, Target: x, Op: op}, false
	}
	if e, ok := x.(*IncDecExpr); ok {
		// $x++ alone: the statement.
		return &IncDec{At: t.pos, Target: e.Target, Op: e.Op, Prefix: e.Prefix}, false
	}
	if tern, ok := x.(*Ternary); ok {
		// cond ? printf(…) : printf(…): bpftrace takes a ternary of
		// calls without a value as a statement, which is an if.
		a, aok := tern.Then.(*Call)
		b, bok := tern.Else.(*Call)
		if aok && bok {
			return &If{At: t.pos, Cond: tern.Cond, Then: []Stmt{&ExprStmt{At: a.At, X: a}}, Else: []Stmt{&ExprStmt{At: b.At, X: b}}, Ternary: true}, false
		}
	}
	c, ok := x.(*Call)
	if !ok {
		p.failf(x.Pos(), "this expression is not a statement; assign it or pass it to a function")
	}
	return &ExprStmt{At: t.pos, X: c}, false
}

// let parses let $x [: TYPE] [= VALUE]; the current token is "let".
func (p *parser) let() *Let {
	s := &Let{At: p.tok.pos}
	p.next(false)
	if p.tok.kind != tVar {
		if p.tok.kind == tMap {
			p.failf(p.tok.pos, "let declares a $variable; map declarations (let @m = hash(N)) are not supported")
		} else {
			p.failf(p.tok.pos, "expected a $variable after let, found %s", p.tok.describe())
		}
		return s
	}
	s.Var = &Var{ExprBase: ExprBase{At: p.tok.pos}, Name: p.tok.text}
	p.next(false)
	if p.tok.is(":") {
		p.next(false)
		at := p.tok.pos
		if !p.startsType(p.tok) {
			p.failf(at, "expected a type after %s:, found %s", s.Var.Name, p.tok.describe())
			return s
		}
		to := p.typeName()
		if to.Kind != KindInt && to.Kind != KindPtr && p.err == nil {
			p.failf(at, "a declared type is an integer or a pointer type, not %s", to)
		}
		s.Of = &to
	}
	if p.tok.is("=") {
		p.next(false)
		s.Value = p.expr()
	}
	return s
}

func checkTarget(p *parser, x Expr, op string) {
	switch x.(type) {
	case *MapRef, *Var:
		return
	}
	p.failf(x.Pos(), "%s needs a map or a $variable on its left", op)
}

func (p *parser) ifStmt() *If {
	s := &If{At: p.tok.pos}
	p.next(false)
	// As while's, the condition may go without parentheses.
	s.Cond = p.expr()
	s.Then = p.stmts(false)
	if p.tok.kind == tIdent && p.tok.text == "else" {
		p.next(false)
		if p.tok.kind == tIdent && p.tok.text == "if" {
			p.enter()
			s.Else = []Stmt{p.ifStmt()}
			p.depth--
		} else {
			s.Else = p.stmts(false)
		}
	}
	return s
}

// binaryPrec gives each binary operator's precedence, higher binds tighter,
// as in bpftrace's grammar (which follows C).
var binaryPrec = map[string]int{
	"||": 1, "&&": 2, "|": 3, "^": 4, "&": 5,
	"==": 6, "!=": 6, "<": 7, "<=": 7, ">": 7, ">=": 7,
	"<<": 8, ">>": 8, "+": 9, "-": 9, "*": 10, "/": 10, "%": 10,
}

func (p *parser) expr() Expr {
	p.enter()
	defer func() { p.depth-- }()
	cond := p.binary(1)
	if !p.tok.is("?") {
		return cond
	}
	q := p.tok
	p.next(false)
	then := p.expr()
	p.expect(":", false)
	els := p.expr()
	return &Ternary{ExprBase: ExprBase{At: q.pos}, Cond: cond, Then: then, Else: els}
}

func (p *parser) binary(minPrec int) Expr {
	x := p.unary()
	for {
		op := p.tok
		prec, ok := binaryPrec[op.text]
		if op.kind != tPunct || !ok || prec < minPrec {
			return x
		}
		p.next(false)
		p.enter()
		y := p.binary(prec + 1)
		p.depth--
		x = &Binary{ExprBase: ExprBase{At: op.pos}, Op: op.text, X: x, Y: y}
	}
}

func (p *parser) unary() Expr {
	t := p.tok
	switch {
	case t.is("-") || t.is("!") || t.is("~"):
		p.next(false)
		p.enter()
		x := p.unary()
		p.depth--
		return &Unary{ExprBase: ExprBase{At: t.pos}, Op: t.text, X: x}
	case t.is("*"):
		p.next(false)
		p.enter()
		x := p.unary()
		p.depth--
		return &Deref{ExprBase: ExprBase{At: t.pos}, X: x}
	case t.is("&"):
		p.failf(t.pos, "the address-of operator (&) is not supported")
	case t.is("++") || t.is("--"):
		p.next(false)
		p.enter()
		x := p.unary()
		p.depth--
		checkTarget(p, x, t.text)
		return &IncDecExpr{ExprBase: ExprBase{At: t.pos}, Target: x, Op: t.text, Prefix: true}
	}
	return p.postfix(p.primary())
}

func (p *parser) postfix(x Expr) Expr {
	for {
		t := p.tok
		switch {
		case t.is(".") || t.is("->"):
			p.next(false)
			if t.is(".") && p.tok.kind == tInt {
				if p.tok.val > 1<<16 {
					p.failf(p.tok.pos, "tuple index %d is too large", p.tok.val)
				}
				x = &TupleIndex{ExprBase: ExprBase{At: t.pos}, X: x, Index: int(p.tok.val)}
				p.next(false)
				break
			}
			if p.tok.kind != tIdent {
				p.failf(p.tok.pos, "expected a field name after %q, found %s", t.text, p.tok.describe())
			}
			x = &FieldAccess{ExprBase: ExprBase{At: t.pos}, X: x, Name: p.tok.text, Arrow: t.is("->")}
			p.next(false)
		case t.is("["):
			p.next(false)
			p.enter()
			i := p.expr()
			p.depth--
			p.expect("]", false)
			x = &Index{ExprBase: ExprBase{At: t.pos}, X: x, I: i}
		case t.is("++") || t.is("--"):
			switch x.(type) {
			case *Var, *MapRef:
			default:
				return x
			}
			p.next(false)
			x = &IncDecExpr{ExprBase: ExprBase{At: x.Pos()}, Target: x, Op: t.text}
		default:
			return x
		}
	}
}

// builtins are the builtin variables usdtkit supports (plus arg0…arg11).
var builtins = map[string]bool{
	"pid": true, "tid": true, "uid": true, "gid": true, "comm": true, "nsecs": true,
	"elapsed": true, "cpu": true, "probe": true, "func": true, "retval": true, "ustack": true,
	"goid": true, "cpid": true, "rand": true, "numaid": true, "cgroup": true, "username": true,
}

// unsupportedBuiltins are bpftrace builtins usdtkit does not offer.
var unsupportedBuiltins = map[string]string{
	"kstack":  "kstack is not supported: usdtkit traces user space only (use ustack)",
	"curtask": "the curtask builtin is not supported",
	"ctx":     "the ctx builtin is not supported",
	"jiffies": "the jiffies builtin is not supported",
}

func (p *parser) primary() Expr {
	t := p.tok
	switch t.kind {
	case tInt:
		p.next(false)
		return &IntLit{ExprBase: ExprBase{At: t.pos}, Val: t.val}
	case tString:
		p.next(false)
		return &StrLit{ExprBase: ExprBase{At: t.pos}, Val: t.text}
	case tVar:
		p.next(false)
		return &Var{ExprBase: ExprBase{At: t.pos}, Name: t.text}
	case tParam:
		p.next(false)
		return p.param(t)
	case tMap:
		p.next(false)
		m := &MapRef{ExprBase: ExprBase{At: t.pos}, Name: t.text}
		if p.tok.is("[") {
			p.next(false)
			if p.tok.is("]") {
				p.failf(p.tok.pos, "the map key is empty")
			}
			m.Keys = p.exprList("]")
		}
		return m
	case tIdent:
		return p.ident()
	case tPunct:
		if t.is("(") {
			p.next(false)
			if p.startsType(p.tok) {
				return p.cast(t)
			}
			first := p.expr()
			if p.tok.is(")") {
				p.next(false)
				return first
			}
			if !p.tok.is(",") {
				p.failf(p.tok.pos, "expected \",\" or \")\", found %s", p.tok.describe())
			}
			p.next(false)
			elems := append([]Expr{first}, p.exprList(")")...)
			return &Tuple{ExprBase: ExprBase{At: t.pos}, Elems: elems}
		}
	}
	p.failf(t.pos, "expected an expression, found %s", t.describe())
	return &IntLit{ExprBase: ExprBase{At: t.pos}}
}

// probeParams returns probe spec t's text with each positional
// parameter outside "quoted" parts replaced by its text, as in bpftrace:
// uprobe:/bin/app:$1.
func (p *parser) probeParams(t token) string {
	var b strings.Builder
	quoted := false
	for i := 0; i < len(t.text); i++ {
		c := t.text[i]
		if c == '"' {
			quoted = !quoted
		}
		if c != '$' || quoted || i+1 >= len(t.text) || !isDigit(t.text[i+1]) {
			b.WriteByte(c)
			continue
		}
		j := i + 1
		for j < len(t.text) && isDigit(t.text[j]) {
			j++
		}
		b.WriteString(p.paramText(token{text: t.text[i:j], pos: t.pos}))
		i = j - 1
	}
	return b.String()
}

// paramText returns the text of positional parameter t ($N), "" if not
// given.
func (p *parser) paramText(t token) string {
	n, err := strconv.Atoi(t.text[1:])
	if err != nil || n < 1 {
		p.failf(t.pos, "positional parameters are numbered from $1")
		return ""
	}
	if n > len(p.params) {
		return ""
	}
	return p.params[n-1]
}

// param returns positional parameter t as an integer literal: $# the
// number of parameters, $N the integer its text spells (0 if not given).
func (p *parser) param(t token) Expr {
	lit := &IntLit{ExprBase: ExprBase{At: t.pos}, Param: t.text}
	if t.text == "$#" {
		lit.Val = uint64(len(p.params))
		return lit
	}
	text := p.paramText(t)
	if n, _ := strconv.Atoi(t.text[1:]); n > len(p.params) {
		return lit
	}
	digits, neg := strings.CutPrefix(text, "-")
	v, err := strconv.ParseUint(digits, 0, 64)
	if err != nil || digits == "" || digits[0] == '+' {
		p.failf(t.pos, "%s is used as a number but is %q: write str(%s) for its text", t.text, text, t.text)
		return lit
	}
	if neg {
		// An int64 literal holds -v as its two's complement.
		v = -v
	}
	lit.Val = v
	return lit
}

// castName is the name of the cast type of size bytes and sign.
func castName(size int, signed bool) string {
	s := "int" + strconv.Itoa(8*size)
	if !signed {
		s = "u" + s
	}
	return s
}

// cast parses the rest of a cast whose "(" is open and whose type starts
// at the current token: the type name, ")", and the operand, a unary
// expression.
func (p *parser) cast(open token) Expr {
	at := p.tok.pos
	to := p.typeName()
	p.expect(")", false)
	p.enter()
	x := p.unary()
	p.depth--
	c := &Cast{ExprBase: ExprBase{At: open.pos}, To: to, X: x}
	switch {
	case to.Kind == KindInt:
		c.Size, c.Signed = to.Size, to.Signed
	case to.Kind == KindPtr:
		c.Ptr = true
		if to.Elem != nil && to.Elem.Kind == KindInt {
			c.Size, c.Signed = to.Elem.Size, to.Elem.Signed
		}
	case p.err == nil:
		p.failf(at, "a cast is to an integer or a pointer type, not %s", to)
	}
	return c
}

// exprList parses e1, e2… up to and including the closing punctuation.
func (p *parser) exprList(closing string) []Expr {
	var list []Expr
	for p.err == nil {
		list = append(list, p.expr())
		if p.tok.is(closing) {
			p.next(false)
			return list
		}
		if !p.tok.is(",") {
			p.failf(p.tok.pos, "expected \",\" or %q, found %s", closing, p.tok.describe())
		}
		p.next(false)
	}
	return list
}

func (p *parser) ident() Expr {
	t := p.tok
	p.next(false)
	if _, isArg := argIndex(t.text); p.names && !isArg && !p.tok.is("(") {
		return p.namePath(t)
	}
	if t.text == "sizeof" {
		return p.sizeof(t)
	}
	if p.tok.is("(") {
		p.next(false)
		c := &Call{ExprBase: ExprBase{At: t.pos}, Name: t.text}
		if p.tok.is(")") {
			p.next(false)
		} else if t.text == "ustack" && p.tok.kind == tIdent && stackModes[p.tok.text] {
			// A stack mode: ustack(perf), ustack(bpftrace, 5).
			c.Args = append(c.Args, &Builtin{ExprBase: ExprBase{At: p.tok.pos}, Name: p.tok.text, Arg: -1})
			p.next(false)
			if p.tok.is(",") {
				p.next(false)
				c.Args = append(c.Args, p.exprList(")")...)
			} else if p.tok.is(")") {
				p.next(false)
			} else {
				p.failf(p.tok.pos, "expected \",\" or \")\", found %s", p.tok.describe())
			}
		} else if t.text == "str" && p.tok.kind == tParam && p.tok.text != "$#" {
			// str($N): the parameter's text.
			lit := &StrLit{ExprBase: ExprBase{At: p.tok.pos}, Val: p.paramText(p.tok), Param: p.tok.text}
			c.Args = append(c.Args, lit)
			p.next(false)
			if p.tok.is("+") {
				// str($N + K): the text from its byte K on, as
				// bpftrace's pointer into the parameter.
				p.next(false)
				k := p.tok
				if k.kind != tInt {
					p.failf(k.pos, "str(%s + K) takes an integer literal K, the bytes to skip", lit.Param)
				}
				p.next(false)
				if k.val > uint64(len(lit.Val)) {
					p.failf(k.pos, "str(%s + %d) skips past the end of %s, which has %d bytes", lit.Param, k.val, lit.Param, len(lit.Val))
				} else {
					lit.Val, lit.Skip = lit.Val[k.val:], int(k.val)
				}
			}
			if p.tok.is(",") {
				p.next(false)
				c.Args = append(c.Args, p.exprList(")")...)
			} else {
				p.expect(")", false)
			}
		} else {
			c.Args = p.exprList(")")
		}
		return c
	}
	if t.text == "args" {
		arrow := p.tok.is("->")
		if !arrow && !p.tok.is(".") {
			p.failf(t.pos, "args must be followed by .NAME, the name of an argument")
		}
		p.next(false)
		if p.tok.kind != tIdent {
			p.failf(p.tok.pos, "expected an argument name after args%s, found %s", map[bool]string{true: "->", false: "."}[arrow], p.tok.describe())
		}
		f := &ArgField{ExprBase: ExprBase{At: t.pos}, Name: p.tok.text, Arrow: arrow}
		p.next(false)
		// A field through a pointer (or of a struct): args.s.hits,
		// args.s->next->hits; the name is the dotted path.
		for p.tok.is(".") || p.tok.is("->") {
			sep := p.tok.text
			p.next(false)
			if p.tok.kind != tIdent {
				p.failf(p.tok.pos, "expected a field name after args.%s%s, found %s", f.Name, sep, p.tok.describe())
			}
			f.Name += "." + p.tok.text
			p.next(false)
		}
		return f
	}
	if builtins[t.text] {
		return &Builtin{ExprBase: ExprBase{At: t.pos}, Name: t.text, Arg: -1}
	}
	if n, ok := argIndex(t.text); ok {
		if n > 11 {
			p.failf(t.pos, "%s does not exist: probes have at most 12 arguments, arg0 to arg11", t.text)
		}
		return &Builtin{ExprBase: ExprBase{At: t.pos}, Name: t.text, Arg: n}
	}
	if msg, ok := unsupportedBuiltins[t.text]; ok {
		p.failf(t.pos, "%s", msg)
	}
	if strings.HasPrefix(t.text, "sarg") {
		p.failf(t.pos, "%s (stack arguments) is not supported yet", t.text)
	}
	switch t.text {
	case "perf", "bpftrace", "raw":
		p.failf(t.pos, "%s is a stack mode: it is only the first argument of ustack()", t.text)
	case "if", "else":
		p.failf(t.pos, "%s cannot appear in an expression", t.text)
	case "offsetof":
		p.failf(t.pos, "%s is not supported", t.text)
	}
	if v, ok := p.types.enums[t.text]; ok {
		return &IntLit{ExprBase: ExprBase{At: t.pos}, Val: uint64(v), Enum: t.text}
	}
	if p.startsType(t) {
		p.failf(t.pos, "%s is a type: cast with (%s)X, or read memory with *(%s*)X", t.text, t.text, t.text)
	}
	p.failf(t.pos, "unknown identifier %s", t.text)
	return &IntLit{ExprBase: ExprBase{At: t.pos}}
}

// sizeof parses sizeof(TYPE) or sizeof(X); t is "sizeof".
func (p *parser) sizeof(t token) Expr {
	e := &Sizeof{ExprBase: ExprBase{At: t.pos}}
	p.expect("(", false)
	if p.startsType(p.tok) {
		to := p.typeName()
		e.Of = &to
	} else {
		p.enter()
		e.X = p.expr()
		p.depth--
	}
	p.expect(")", false)
	return e
}

// namePath parses the rest of a bare name whose first identifier is t
// (ExprOptions.Names): .IDENT…, an argument's fields.
func (p *parser) namePath(t token) Expr {
	f := &ArgField{ExprBase: ExprBase{At: t.pos}, Name: t.text}
	for p.tok.is(".") {
		p.next(false)
		if p.tok.kind != tIdent {
			p.failf(p.tok.pos, "expected a field name after %s., found %s", f.Name, p.tok.describe())
			break
		}
		f.Name += "." + p.tok.text
		p.next(false)
	}
	return f
}

// stackModes are the modes ustack() takes as its first argument
// (bpftrace's raw mode is refused by the checker).
var stackModes = map[string]bool{"perf": true, "bpftrace": true, "raw": true}

// argIndex returns N for "argN".
func argIndex(name string) (int, bool) {
	rest, ok := strings.CutPrefix(name, "arg")
	if !ok || rest == "" || len(rest) > 3 || rest[0] == '0' && len(rest) > 1 {
		return 0, false
	}
	n, err := strconv.Atoi(rest)
	return n, err == nil
}

// tooDeep reports the position of a node deeper than maxDepth in the tree
// under n, which is at depth d. It stops descending there, so its own
// recursion is bounded.
func tooDeep(n Node, d int) (Pos, bool) {
	if d > maxDepth {
		return n.Pos(), true
	}
	var pos Pos
	deep := false
	first := true
	Inspect(n, func(c Node) bool {
		if deep {
			return false
		}
		if first {
			first = false
			return true
		}
		pos, deep = tooDeep(c, d+1)
		return false
	})
	return pos, deep
}
