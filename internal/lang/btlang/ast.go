package btlang

// Node is any node of the syntax tree.
type Node interface {
	Pos() Pos
}

// Expr is an expression. Type is KindNone until Check has run, then the
// expression's resolved type.
type Expr interface {
	Node
	Type() Type
	exprNode()
}

// Stmt is a statement of a probe block's action.
type Stmt interface {
	Node
	stmtNode()
}

// ExprBase holds what every expression has: its position and, after Check,
// its type.
type ExprBase struct {
	At Pos
	T  Type
}

// Pos returns the expression's position: its first character, or for
// Binary, Ternary and TupleIndex its operator ("+", "?", "."), where
// errors about the operation point.
func (e *ExprBase) Pos() Pos { return e.At }

// Type returns the type Check resolved (KindNone before Check).
func (e *ExprBase) Type() Type { return e.T }

func (*ExprBase) exprNode() {}

// IntLit is an integer literal. Its type is int64, as in bpftrace, even
// when Val does not fit (18446744073709551615 is -1). A minus sign is a
// Unary.
type IntLit struct {
	ExprBase
	Val uint64
	// Param is the positional parameter ("$1", "$#") the literal stands
	// for, if any.
	Param string
	// Enum is the enumerator the literal stands for, if any: its type is
	// uint64, as in bpftrace.
	Enum string
}

// StrLit is a string literal; Val holds the bytes after escapes. Param
// is the positional parameter it stands for (str($1)), if any, and Skip
// the bytes of it str($1 + Skip) leaves out (Val is the rest).
type StrLit struct {
	ExprBase
	Val   string
	Param string
	Skip  int
}

// Builtin is a builtin variable: pid tid uid gid comm nsecs elapsed cpu
// cgroup username rand numaid cpid
// probe func retval arg0…arg11 ustack goid. Arg is N for argN and -1
// otherwise.
type Builtin struct {
	ExprBase
	Name string
	Arg  int
}

// ArgField is a named probe argument, args.NAME (Arrow: written args->NAME),
// or a field reached from one, args.NAME.FIELD or args.NAME->FIELD..., whose
// Name is then the dotted path "NAME.FIELD".
type ArgField struct {
	ExprBase
	Name  string
	Arrow bool
}

// Var is a scratch variable, $name. After Check, Decl is the block's
// variable it refers to; Decl.Type is the stored type, which may be wider
// (a longer string) than the Type at this use.
type Var struct {
	ExprBase
	Name string // with the "$"
	Decl *Variable
}

// MapRef is a map access @name or @name[k1, k2…]: a read in an expression,
// a target in Assign, IncDec, delete, clear, zero and print. After Check,
// Map describes the map; Keys are the key expressions (nil for a scalar map).
// Its Type is the value's type at this use (for a target, the assigned
// value's), which may be narrower than Map.Value, the stored type; KindNone
// for a map holding an aggregation.
type MapRef struct {
	ExprBase
	Name string // with the "@"; "@" alone is the anonymous map
	Keys []Expr
	Map  *Map
}

// Call is a function call: str, ustack(n), an aggregation (count sum avg
// min max stats hist lhist) as the value of a map assignment, or a
// statement call (printf print delete clear zero time exit).
type Call struct {
	ExprBase
	Name string
	Args []Expr
}

// Unary is -X, !X or ~X on an integer: - and ~ keep X's signedness (as
// bpftrace), ! gives uint64 0 or 1.
type Unary struct {
	ExprBase
	Op string
	X  Expr
}

// Cast is (TYPE)X. TYPE is To: an integer type (int8 … uint64, C's and
// <stdint.h>'s names), whose value cast truncates X to Size bytes and
// extends it as Signed says, or a pointer type ((int32 *)X, (struct Foo
// *)X), which makes the integer X an address (Ptr). For a pointer to an
// integer, Size and Signed describe the integer pointed to.
type Cast struct {
	ExprBase
	Size   int
	Signed bool
	Ptr    bool
	To     Type
	X      Expr
}

// Deref is *X, X a pointer: the value it points to, read from the traced
// process's memory (0 if it cannot be read, as in bpftrace).
type Deref struct {
	ExprBase
	X Expr
}

// FieldAccess is X.Name for a struct or union value X, or X->Name (Arrow)
// for a pointer to one. After Check, Field is the field.
type FieldAccess struct {
	ExprBase
	X     Expr
	Name  string
	Arrow bool
	Field *Field
}

// Index is X[I] for an array or a pointer X: the element I, read from
// where X is (the traced process's memory for a pointer or an array
// reached through one).
type Index struct {
	ExprBase
	X, I Expr
}

// Sizeof is sizeof(TYPE) (Of, a type) or sizeof(X) (X, an expression):
// the size in bytes as bpftrace gives it, Val after Check.
type Sizeof struct {
	ExprBase
	Of  *Type
	X   Expr
	Val int
}

// Binary is X Op Y for Op one of * / % + - << >> < <= > >= == != & ^ | && ||.
// On integers the result is a 64-bit integer, signed when both operands
// are (comparisons and && || give 0 or 1), as bpftrace types it; == and !=
// also compare two strings, giving uint64.
type Binary struct {
	ExprBase
	Op   string
	X, Y Expr
}

// Ternary is Cond ? Then : Else.
type Ternary struct {
	ExprBase
	Cond, Then, Else Expr
}

// Tuple is (e1, e2…), with at least two elements.
type Tuple struct {
	ExprBase
	Elems []Expr
}

// TupleIndex is X.Index for a tuple X; Index is within the tuple.
type TupleIndex struct {
	ExprBase
	X     Expr
	Index int
}

// IncDecExpr is Target++ or Target-- (Prefix: ++Target, --Target) as
// an expression, on a map or variable holding an integer: it adds or
// subtracts one and is worth the value before (postfix) or after
// (prefix). Alone as a statement it is an IncDec.
type IncDecExpr struct {
	ExprBase
	Target Expr
	Op     string // "++" or "--"
	Prefix bool
}

// ExprStmt is a call used as a statement (printf, print, delete, clear,
// zero, time, exit).
type ExprStmt struct {
	At Pos
	X  *Call
}

// Assign is Target Op Value, Target a *MapRef or *Var, Op "=" or a
// compound assignment ("+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=",
// "<<=", ">>="). For a map holding an aggregation Op is "=" and Value is
// the aggregation *Call.
type Assign struct {
	At     Pos
	Target Expr
	Op     string
	Value  Expr
}

// IncDec is Target++ or Target-- (Prefix: ++Target, --Target) on a map or
// variable holding an integer; all four add or subtract one.
type IncDec struct {
	At     Pos
	Target Expr
	Op     string // "++" or "--"
	Prefix bool
}

// Let is a declaration, let $x; let $x = Value; let $x: TYPE [= Value]
// (bpftrace 0.21 and later): a variable of the block ({ … }) it is in,
// from here to the block's end, 0 until assigned; Of is the declared type
// (an integer or pointer type), nil if none. After Check, Var.Decl is the
// variable and Init the value to store, Value converted to Of (nil for
// none).
type Let struct {
	At    Pos
	Var   *Var
	Of    *Type
	Value Expr
	Init  Expr
}

// If is if (Cond) { Then } else { Else }; "else if" is an Else holding one If.
// Ternary marks one written Cond ? CALL : CALL as a statement.
type If struct {
	At      Pos
	Cond    Expr
	Then    []Stmt
	Else    []Stmt
	Ternary bool
}

// Unroll is unroll(Count) { Body }: Body, Count times (after Check, N),
// Count an integer constant from 1 to 100.
type Unroll struct {
	At    Pos
	Count Expr
	N     int
	Body  []Stmt
}

// While is while (Cond) { Body }: Body as long as Cond is not 0, within
// what the kernel's verifier accepts (it must see that the loop ends).
type While struct {
	At   Pos
	Cond Expr
	Body []Stmt
}

// Break leaves the innermost while loop; Continue goes on with its next
// test of the condition.
type Break struct{ At Pos }

// Continue: see Break.
type Continue struct{ At Pos }

// Return ends the action at once (bpftrace's return; in a probe block).
type Return struct {
	At Pos
}

func (s *ExprStmt) Pos() Pos { return s.At }
func (s *Assign) Pos() Pos   { return s.At }
func (s *IncDec) Pos() Pos   { return s.At }
func (s *If) Pos() Pos       { return s.At }
func (s *Let) Pos() Pos      { return s.At }
func (s *Return) Pos() Pos   { return s.At }
func (s *Unroll) Pos() Pos   { return s.At }
func (s *While) Pos() Pos    { return s.At }
func (s *Break) Pos() Pos    { return s.At }
func (s *Continue) Pos() Pos { return s.At }
func (*ExprStmt) stmtNode()  {}
func (*Assign) stmtNode()    {}
func (*IncDec) stmtNode()    {}
func (*If) stmtNode()        {}
func (*Let) stmtNode()       {}
func (*Return) stmtNode()    {}
func (*Unroll) stmtNode()    {}
func (*While) stmtNode()     {}
func (*Break) stmtNode()     {}
func (*Continue) stmtNode()  {}

// ProbeBlock is PROBE[, PROBE…] [/Pred/] { Body }. After Check, Vars lists
// the block's scratch variables in order of first assignment.
type ProbeBlock struct {
	At     Pos
	Probes []*Probe
	Pred   Expr // nil when absent
	Body   []Stmt
	Vars   []*Variable
}

// Pos returns where the first probe starts.
func (b *ProbeBlock) Pos() Pos { return b.At }

// Program is a parsed program. After Check, Maps lists every map, sorted
// by name. Check writes into the tree, so a Program must not be used
// concurrently while Check runs; afterwards it may be read concurrently.
type Program struct {
	// Config holds the config = { NAME = VALUE; … } block's settings in
	// order (bpftrace 0.20 and later), Settings what Check made of them.
	Config   []*ConfigEntry
	Settings Settings
	// Types are the type definitions, in order.
	Types  []*TypeDef
	Blocks []*ProbeBlock
	Maps   []*Map
}

// ConfigEntry is one NAME = VALUE of a config block: Name as written
// (stack_mode, BPFTRACE_STACK_MODE), Value an integer (Int), a string or
// a bare word (true, perf).
type ConfigEntry struct {
	At    Pos
	Name  string
	Value string
	Int   bool
}

// Settings are the config block's settings usdtkit applies; a zero field
// was not set. Check fills them in; the environment's and the command
// line's values take precedence, as in bpftrace.
type Settings struct {
	// StrLen is max_strlen, the bytes str() reads, NUL included (as
	// CheckOptions.StrLen, which wins when not 0).
	StrLen int
	// NoExitMaps is print_maps_on_exit = false: no maps printed at exit.
	NoExitMaps bool
	// StackPerf is stack_mode = perf: ustack without a mode is
	// ustack(perf).
	StackPerf bool
	// CatBytesMax is cat_bytes_max, the most bytes cat() prints of a
	// file.
	CatBytesMax int
}

// Map describes one map as Check resolved it from all its uses.
type Map struct {
	Name string // with the "@"
	Pos  Pos    // first use
	// Keys are the key types in order, nil for a scalar map. Integers are
	// 64-bit; a string key has the longest length any use gives it.
	Keys []Type
	// Value is the stored type when Agg is AggNone.
	Value Type
	// Agg is the aggregation the map holds; AggArg is the type of the
	// aggregated value (zero for count). For lhist, LhistMin, LhistMax and
	// LhistStep are its constant bounds and step.
	Agg                           AggKind
	AggArg                        Type
	LhistMin, LhistMax, LhistStep int64
}

// Variable is a scratch variable of one probe block: its name (with "$"),
// its type, and where it is first assigned.
type Variable struct {
	Name string
	Type Type
	Pos  Pos
	// Narrow: an integer narrower than 8 bytes (ByteWidth) was assigned
	// to it, whose width bpftrace keeps and usdtkit does not.
	Narrow bool
	// CType is the C type of its first value (a tuple's elements at their
	// widths), for sizeof().
	CType Type
	// Declared is the type a let declaration gave it, if any.
	Declared *Type
}
