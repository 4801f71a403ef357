package btlang

import (
	"strconv"
	"strings"
)

// String returns the program in canonical form: one probe block after the
// other, statements one per line, tabs for indentation, and parentheses
// around every operand that is itself an operation. Parsing the result gives
// a Program equal to p but for positions and types.
func (p *Program) String() string {
	var w printer
	if p.Config != nil {
		w.WriteString("config = {")
		for _, e := range p.Config {
			v := e.Value
			if !e.Int && !isWord(v) {
				v = quoteString(v)
			}
			w.WriteString(" " + e.Name + " = " + v + ";")
		}
		w.WriteString(" }\n")
	}
	for _, t := range p.Types {
		w.WriteString(t.Text + ";\n")
	}
	for i, b := range p.Blocks {
		if i > 0 {
			w.WriteByte('\n')
		}
		w.block(b)
	}
	return w.String()
}

// ExprString returns e in the canonical form Program.String uses.
func ExprString(e Expr) string {
	var w printer
	w.expr(e)
	return w.String()
}

type printer struct {
	strings.Builder
	indent int
}

func (w *printer) block(b *ProbeBlock) {
	for i, p := range b.Probes {
		if i > 0 {
			w.WriteString(", ")
		}
		w.WriteString(p.String())
	}
	if b.Pred != nil {
		w.WriteString(" /")
		w.expr(b.Pred)
		w.WriteString("/")
	}
	w.WriteString(" ")
	w.stmts(b.Body)
	w.WriteByte('\n')
}

func (w *printer) stmts(list []Stmt) {
	if len(list) == 0 {
		w.WriteString("{ }")
		return
	}
	w.WriteString("{\n")
	w.indent++
	for i, s := range list {
		w.WriteString(strings.Repeat("\t", w.indent))
		w.stmt(s)
		switch s.(type) {
		case *If, *Unroll, *While:
			// Block statements end in "}".
		default:
			if i < len(list)-1 {
				w.WriteByte(';')
			}
		}
		w.WriteByte('\n')
	}
	w.indent--
	w.WriteString(strings.Repeat("\t", w.indent))
	w.WriteByte('}')
}

func (w *printer) stmt(s Stmt) {
	switch s := s.(type) {
	case *ExprStmt:
		w.expr(s.X)
	case *Return:
		w.WriteString("return")
	case *Unroll:
		w.loop("unroll", s.Count, s.Body)
	case *While:
		w.loop("while", s.Cond, s.Body)
	case *Break:
		w.WriteString("break")
	case *Continue:
		w.WriteString("continue")
	case *Assign:
		w.expr(s.Target)
		w.WriteString(" " + s.Op + " ")
		w.expr(s.Value)
	case *Let:
		w.WriteString("let " + s.Var.Name)
		if s.Of != nil {
			w.WriteString(": " + strings.TrimSuffix(s.Of.String(), " "))
		}
		if s.Value != nil {
			w.WriteString(" = ")
			w.expr(s.Value)
		}
	case *IncDec:
		if s.Prefix {
			w.WriteString(s.Op)
			w.expr(s.Target)
		} else {
			w.expr(s.Target)
			w.WriteString(s.Op)
		}
	case *If:
		if s.Ternary && len(s.Then) == 1 && len(s.Else) == 1 {
			a, aok := s.Then[0].(*ExprStmt)
			b, bok := s.Else[0].(*ExprStmt)
			if aok && bok {
				w.operand(s.Cond)
				w.WriteString(" ? ")
				w.expr(a.X)
				w.WriteString(" : ")
				w.expr(b.X)
				break
			}
		}
		w.WriteString("if (")
		w.expr(s.Cond)
		w.WriteString(") ")
		w.stmts(s.Then)
		if s.Else != nil {
			w.WriteString(" else ")
			if len(s.Else) == 1 {
				if elif, ok := s.Else[0].(*If); ok {
					w.stmt(elif)
					return
				}
			}
			w.stmts(s.Else)
		}
	}
}

// operand prints e, in parentheses when it is an operation.
func (w *printer) operand(e Expr) {
	switch e.(type) {
	case *Unary, *Binary, *Ternary, *Cast, *Deref:
		w.WriteByte('(')
		w.expr(e)
		w.WriteByte(')')
	default:
		w.expr(e)
	}
}

func (w *printer) list(es []Expr) {
	for i, e := range es {
		if i > 0 {
			w.WriteString(", ")
		}
		w.expr(e)
	}
}

func (w *printer) expr(e Expr) {
	switch e := e.(type) {
	case *IntLit:
		if e.Param != "" || e.Enum != "" {
			w.WriteString(e.Param + e.Enum)
			break
		}
		w.WriteString(strconv.FormatUint(e.Val, 10))
	case *StrLit:
		if e.Param != "" {
			w.WriteString(e.Param)
			if e.Skip > 0 {
				w.WriteString(" + " + strconv.Itoa(e.Skip))
			}
			break
		}
		w.WriteString(quoteString(e.Val))
	case *Builtin:
		w.WriteString(e.Name)
	case *ArgField:
		if e.Arrow {
			w.WriteString("args->" + e.Name)
		} else {
			w.WriteString("args." + e.Name)
		}
	case *Var:
		w.WriteString(e.Name)
	case *MapRef:
		w.WriteString(e.Name)
		if e.Keys != nil {
			w.WriteByte('[')
			w.list(e.Keys)
			w.WriteByte(']')
		}
	case *Call:
		w.WriteString(e.Name + "(")
		w.list(e.Args)
		w.WriteByte(')')
	case *Unary:
		w.WriteString(e.Op)
		w.operand(e.X)
	case *Cast:
		w.WriteString("(" + strings.TrimSuffix(e.To.String(), " ") + ")")
		w.operand(e.X)
	case *Deref:
		w.WriteByte('*')
		w.operand(e.X)
	case *FieldAccess:
		w.operand(e.X)
		if e.Arrow {
			w.WriteString("->" + e.Name)
		} else {
			w.WriteString("." + e.Name)
		}
	case *Index:
		w.operand(e.X)
		w.WriteByte('[')
		w.expr(e.I)
		w.WriteByte(']')
	case *Sizeof:
		w.WriteString("sizeof(")
		if e.Of != nil {
			w.WriteString(strings.TrimSuffix(e.Of.String(), " "))
		} else {
			w.expr(e.X)
		}
		w.WriteByte(')')
	case *Binary:
		w.operand(e.X)
		w.WriteString(" " + e.Op + " ")
		w.operand(e.Y)
	case *Ternary:
		w.operand(e.Cond)
		w.WriteString(" ? ")
		w.operand(e.Then)
		w.WriteString(" : ")
		w.operand(e.Else)
	case *Tuple:
		w.WriteByte('(')
		w.list(e.Elems)
		w.WriteByte(')')
	case *TupleIndex:
		w.operand(e.X)
		w.WriteString("." + strconv.Itoa(e.Index))
	case *IncDecExpr:
		w.WriteString("(")
		if e.Prefix {
			w.WriteString(e.Op)
			w.expr(e.Target)
		} else {
			w.expr(e.Target)
			w.WriteString(e.Op)
		}
		w.WriteString(")")
	}
}

// quoteString writes s as a string literal with the escapes the lexer reads.
func quoteString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"' || c == '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case c == '\n':
			b.WriteString(`\n`)
		case c == '\t':
			b.WriteString(`\t`)
		case c == '\r':
			b.WriteString(`\r`)
		case c < 0x20 || c >= 0x7f:
			// Three octal digits, so that a following digit is not read
			// as part of the escape.
			b.WriteString(`\` + strconv.FormatUint(uint64(c)>>6, 8) + strconv.FormatUint(uint64(c)>>3&7, 8) + strconv.FormatUint(uint64(c)&7, 8))
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// loop prints KEYWORD (x) { body }: unroll and while.
func (w *printer) loop(keyword string, x Expr, body []Stmt) {
	w.WriteString(keyword + " (")
	w.expr(x)
	w.WriteString(") ")
	w.stmts(body)
}

// TypesString returns what Check resolved, one line each: every map with
// its key and value types (or its aggregation and the aggregated type),
// then each block's variables. It is empty before Check.
func (p *Program) TypesString() string {
	var b strings.Builder
	for _, m := range p.Maps {
		b.WriteString(m.Name)
		if m.Keys != nil {
			b.WriteByte('[')
			for i, k := range m.Keys {
				if i > 0 {
					b.WriteString(", ")
				}
				b.WriteString(k.String())
			}
			b.WriteByte(']')
		}
		b.WriteString(": ")
		switch m.Agg {
		case AggNone:
			b.WriteString(m.Value.String())
		case AggCount:
			b.WriteString("count()")
		case AggLhist:
			b.WriteString("lhist(" + m.AggArg.String() + ", " + strconv.FormatInt(m.LhistMin, 10) + ", " +
				strconv.FormatInt(m.LhistMax, 10) + ", " + strconv.FormatInt(m.LhistStep, 10) + ")")
		default:
			b.WriteString(m.Agg.String() + "(" + m.AggArg.String() + ")")
		}
		b.WriteByte('\n')
	}
	for i, blk := range p.Blocks {
		for _, v := range blk.Vars {
			b.WriteString("block " + strconv.Itoa(i) + " " + v.Name + ": " + v.Type.String() + "\n")
		}
	}
	return b.String()
}

// isWord reports whether s lexes as one identifier.
func isWord(s string) bool {
	if s == "" || !isLetter(s[0]) {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !isLetter(s[i]) && !isDigit(s[i]) {
			return false
		}
	}
	return true
}
