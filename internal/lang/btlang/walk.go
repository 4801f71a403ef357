package btlang

// Inspect walks the tree rooted at n in source order, calling f for each
// node: probe blocks, probes, statements and expressions. When f returns
// false, Inspect skips the node's children. A nil n is ignored.
func Inspect(n Node, f func(Node) bool) {
	if n == nil || !f(n) {
		return
	}
	switch n := n.(type) {
	case *ProbeBlock:
		for _, p := range n.Probes {
			Inspect(p, f)
		}
		if n.Pred != nil {
			Inspect(n.Pred, f)
		}
		inspectStmts(n.Body, f)
	case *ExprStmt:
		Inspect(n.X, f)
	case *Assign:
		Inspect(n.Target, f)
		Inspect(n.Value, f)
	case *Let:
		Inspect(n.Var, f)
		if n.Value != nil {
			Inspect(n.Value, f)
		}
	case *IncDec:
		Inspect(n.Target, f)
	case *IncDecExpr:
		Inspect(n.Target, f)
	case *If:
		Inspect(n.Cond, f)
		inspectStmts(n.Then, f)
		inspectStmts(n.Else, f)
	case *Unroll:
		Inspect(n.Count, f)
		inspectStmts(n.Body, f)
	case *While:
		Inspect(n.Cond, f)
		inspectStmts(n.Body, f)
	case *MapRef:
		inspectExprs(n.Keys, f)
	case *Call:
		inspectExprs(n.Args, f)
	case *Unary:
		Inspect(n.X, f)
	case *Cast:
		Inspect(n.X, f)
	case *Deref:
		Inspect(n.X, f)
	case *FieldAccess:
		Inspect(n.X, f)
	case *Index:
		Inspect(n.X, f)
		Inspect(n.I, f)
	case *Sizeof:
		if n.X != nil {
			Inspect(n.X, f)
		}
	case *Binary:
		Inspect(n.X, f)
		Inspect(n.Y, f)
	case *Ternary:
		Inspect(n.Cond, f)
		Inspect(n.Then, f)
		Inspect(n.Else, f)
	case *Tuple:
		inspectExprs(n.Elems, f)
	case *TupleIndex:
		Inspect(n.X, f)
	}
}

func inspectStmts(list []Stmt, f func(Node) bool) {
	for _, s := range list {
		Inspect(s, f)
	}
}

func inspectExprs(list []Expr, f func(Node) bool) {
	for _, e := range list {
		Inspect(e, f)
	}
}
