package btlang

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// bpftraceDump writes the tree the way "bpftrace -d" prints its AST after
// parsing (bpftrace 0.17), without the probe lines, which bpftrace prints
// resolved (libc becomes a path): one node per line, indented by depth.
// Comparing the two checks structure and precedence against bpftrace.
func bpftraceDump(p *Program) string {
	var b strings.Builder
	for _, t := range p.Types {
		// bpftrace prints its C definitions as written, each with a ";".
		line(&b, 0, t.Src+";")
	}
	for _, blk := range p.Blocks {
		if blk.Pred != nil {
			line(&b, 2, "pred")
			dumpExpr(&b, blk.Pred, 3)
		}
		for _, s := range blk.Body {
			dumpStmt(&b, s, 2)
		}
	}
	return b.String()
}

func line(b *strings.Builder, depth int, s string) {
	fmt.Fprintf(b, "%s%s\n", strings.Repeat(" ", depth), s)
}

func dumpStmts(b *strings.Builder, list []Stmt, d int) {
	for _, s := range list {
		dumpStmt(b, s, d)
	}
}

func dumpStmt(b *strings.Builder, s Stmt, d int) {
	switch s := s.(type) {
	case *ExprStmt:
		dumpExpr(b, s.X, d)
	case *Return:
		line(b, d, "return")
	case *While:
		line(b, d, "while(")
		dumpExpr(b, s.Cond, d+1)
		line(b, d+1, ")")
		dumpStmts(b, s.Body, d+2)
	case *Break:
		line(b, d, "break")
	case *Continue:
		line(b, d, "continue")
	case *Unroll:
		line(b, d, "unroll")
		dumpExpr(b, s.Count, d+1)
		line(b, d+1, "block")
		dumpStmts(b, s.Body, d+2)
	case *Assign:
		line(b, d, "=")
		dumpExpr(b, s.Target, d+1)
		if s.Op == "=" {
			dumpExpr(b, s.Value, d+1)
			return
		}
		// bpftrace's parser turns x op= v into x = x op v.
		line(b, d+1, strings.TrimSuffix(s.Op, "="))
		dumpExpr(b, s.Target, d+2)
		dumpExpr(b, s.Value, d+2)
	case *IncDec:
		if s.Prefix {
			line(b, d, s.Op)
			dumpExpr(b, s.Target, d+1)
			return
		}
		dumpExpr(b, s.Target, d)
		line(b, d+1, s.Op)
	case *If:
		if s.Ternary {
			// COND ? A : B as a statement: bpftrace keeps the ?:.
			line(b, d, "?:")
			dumpExpr(b, s.Cond, d+1)
			dumpStmts(b, s.Then, d+1)
			dumpStmts(b, s.Else, d+1)
			return
		}
		line(b, d, "if")
		dumpExpr(b, s.Cond, d+1)
		line(b, d+1, "then")
		dumpStmts(b, s.Then, d+2)
		if s.Else != nil {
			line(b, d+1, "else")
			dumpStmts(b, s.Else, d+2)
		}
	}
}

func dumpExpr(b *strings.Builder, e Expr, d int) {
	switch e := e.(type) {
	case *IntLit:
		if e.Param != "" {
			line(b, d, "param: "+e.Param)
			return
		}
		if e.Enum != "" {
			line(b, d, "identifier: "+e.Enum)
			return
		}
		line(b, d, "int: "+strconv.FormatInt(int64(e.Val), 10))
	case *StrLit:
		if e.Param != "" {
			line(b, d, "param: "+e.Param)
			return
		}
		r := strings.NewReplacer("\\", `\\`, "\"", `\"`, "\n", `\n`, "\t", `\t`)
		line(b, d, "string: "+r.Replace(e.Val))
	case *Builtin:
		line(b, d, "builtin: "+e.Name)
	case *ArgField:
		line(b, d, "args."+e.Name)
	case *Var:
		line(b, d, "variable: "+e.Name)
	case *MapRef:
		line(b, d, "map: "+e.Name)
		for _, k := range e.Keys {
			dumpExpr(b, k, d+1)
		}
	case *Call:
		line(b, d, "call: "+e.Name)
		for i, a := range e.Args {
			if m, ok := a.(*Builtin); ok && i == 0 && e.Name == "ustack" && stackModes[m.Name] {
				line(b, d+1, "stack_mode: "+m.Name)
				continue
			}
			dumpExpr(b, a, d+1)
		}
	case *IncDecExpr:
		if e.Prefix {
			line(b, d, e.Op)
			dumpExpr(b, e.Target, d+1)
			return
		}
		dumpExpr(b, e.Target, d)
		line(b, d+1, e.Op)
	case *Unary:
		if lit, ok := e.X.(*IntLit); ok && e.Op == "-" {
			// bpftrace's parser folds a negated literal.
			line(b, d, "int: "+strconv.FormatInt(-int64(lit.Val), 10))
			return
		}
		line(b, d, e.Op)
		dumpExpr(b, e.X, d+1)
	case *Cast:
		// bpftrace 0.17 prints one "*" whatever the depth.
		name := castName(e.Size, e.Signed)
		if e.Ptr {
			base := e.To
			for base.Kind == KindPtr && base.Elem != nil {
				base = *base.Elem
			}
			switch base.Kind {
			case KindRecord:
				name = base.Record.String()
			case KindInt:
				name = castName(base.Size, base.Signed)
			}
			name += "*"
		}
		line(b, d, "("+name+")")
		dumpExpr(b, e.X, d+1)
	case *FieldAccess:
		// bpftrace's parser reads a->b as (*a).b.
		line(b, d, ".")
		if e.Arrow {
			line(b, d+1, "dereference")
			dumpExpr(b, e.X, d+2)
		} else {
			dumpExpr(b, e.X, d+1)
		}
		line(b, d+1, e.Name)
	case *Index:
		line(b, d, "[]")
		dumpExpr(b, e.X, d+1)
		dumpExpr(b, e.I, d+1)
	case *Sizeof:
		line(b, d, "call: sizeof")
		if e.Of != nil {
			line(b, d+1, "identifier: "+strings.TrimSuffix(e.Of.String(), " "))
		} else {
			dumpExpr(b, e.X, d+1)
		}
	case *Deref:
		line(b, d, "dereference")
		dumpExpr(b, e.X, d+1)
	case *Binary:
		line(b, d, e.Op)
		dumpExpr(b, e.X, d+1)
		dumpExpr(b, e.Y, d+1)
	case *Ternary:
		line(b, d, "?:")
		dumpExpr(b, e.Cond, d+1)
		dumpExpr(b, e.Then, d+1)
		dumpExpr(b, e.Else, d+1)
	case *Tuple:
		line(b, d, "tuple:")
		for _, x := range e.Elems {
			dumpExpr(b, x, d+1)
		}
	case *TupleIndex:
		line(b, d, ".")
		dumpExpr(b, e.X, d+1)
		line(b, d+1, strconv.Itoa(e.Index))
	}
}

// parserDump extracts from "bpftrace -d" output the AST after parsing,
// without types, the "Program" line and the probe lines.
func parserDump(out string) (string, bool) {
	_, rest, ok := strings.Cut(out, "AST after: parser\n-------------------\n")
	if !ok {
		return "", false
	}
	rest, _, _ = strings.Cut(rest, "\n\nAST after:")
	var b strings.Builder
	for _, l := range strings.Split(rest, "\n") {
		if l == "" || l == "Program" || strings.HasPrefix(l, " ") && !strings.HasPrefix(l, "  ") {
			continue
		}
		l, _, _ = strings.Cut(l, " :: type[")
		b.WriteString(l + "\n")
	}
	return b.String(), true
}

var (
	semanticMapRE = regexp.MustCompile(`map: (@\w*) :: type\[(.*?), ctx`)
	stringSizeRE  = regexp.MustCompile(`string\[\d+\]`)
)

// semanticMaps extracts from "bpftrace -d" output each map's value type
// after semantic analysis, as bpftrace names it ("unsigned int64", "hist",
// "(int64,string[16])"), with string lengths dropped: bpftrace sizes every
// str() at 64 where btlang keeps str(x, n)'s n.
func semanticMaps(out string) map[string]string {
	_, rest, _ := strings.Cut(out, "AST after: Semantic")
	rest, _, _ = strings.Cut(rest, "AST after:")
	maps := map[string]string{}
	for _, m := range semanticMapRE.FindAllStringSubmatch(rest, -1) {
		if _, ok := maps[m[1]]; !ok {
			maps[m[1]] = stringSizeRE.ReplaceAllString(m[2], "string")
		}
	}
	return maps
}

// bpftraceMaps names each map's value type as semanticMaps does.
func bpftraceMaps(p *Program) map[string]string {
	var name func(t Type) string
	name = func(t Type) string {
		switch t.Kind {
		case KindInt:
			if t.Signed {
				return "int64"
			}
			return "unsigned int64"
		case KindString:
			return "string"
		case KindStack:
			return "ustack"
		case KindBuf:
			// bpftrace counts its length byte in the type's size.
			return "buffer[" + strconv.Itoa(t.Size+1) + "]"
		case KindPtr:
			if t.Elem != nil && t.Elem.Kind == KindInt && !t.Elem.Signed {
				return "unsigned " + t.Elem.String()[1:] + " *"
			}
		case KindTuple:
			s := make([]string, len(t.Elems))
			for i, e := range t.Elems {
				s[i] = name(e)
			}
			return "(" + strings.Join(s, ",") + ")"
		}
		return t.String()
	}
	maps := map[string]string{}
	for _, m := range p.Maps {
		if m.Agg != AggNone {
			maps[m.Name] = m.Agg.String()
		} else {
			maps[m.Name] = name(m.Value)
		}
	}
	return maps
}
