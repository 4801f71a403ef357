// Package btlang is the front end of usdtkit's bpftrace language: it lexes,
// parses and type-checks the user-space subset of bpftrace's language and
// hands the back end (the BPF code generator) a typed syntax tree.
//
// # Model and data flow
//
//	source ──Parse──► *Program (syntax only) ──Check(ProbeInfo)──► typed *Program
//
// A Program is a list of ProbeBlocks: PROBE[, PROBE…] [/predicate/] { body }.
// Each Probe is a usdt, uprobe, uretprobe, BEGIN, END, interval or profile probe with
// its parts unquoted (Probe.String prints it back, Probe.FullName names it as
// the probe builtin does). ParseExpr and ParseExprList read fragments of a
// program, a predicate or printf's arguments, as usdtkit trace's flags take
// them; a Program may also be built node by node and printed with String. The body is statements
// (Assign, IncDec, If, ExprStmt) over expressions (IntLit, StrLit, Builtin,
// ArgField, Var, MapRef, Call, Unary, Cast, Deref, Binary, Ternary, Tuple, TupleIndex).
//
// Check asks the back end, through the ProbeInfo interface, how many
// arguments each probe has and which it provides by name (args.NAME for Go
// functions), then resolves every expression's Type (int with sign and
// size, string with maximum length, tuple, ustack, probe, usym), every map
// (Program.Maps: key types, value type or aggregation with its argument
// type and lhist bounds) and every scratch variable (ProbeBlock.Vars). Map
// types come from all blocks, so a block may read a map that a later block
// assigns, as bpftrace allows.
//
// # Language
//
// It follows bpftrace 0.17's grammar and semantics: operator precedence as
// in C; statements separated by ";" with none after an if's "}"; integer
// literals in decimal, 0x hex, 0-prefixed octal, with "_" separators and
// e-notation (1e6); strings with \n \t \r \\ \" \xHH \NNN; // and /* */
// comments. Probes take bpftrace's aliases (u, ur, U, i, p), globs, short
// library names ("libc", resolved by the back end), "quoted" parts for
// names with other characters (C++'s "ns::f(int)"; Go's main.(*T).M may
// also go unquoted, which bpftrace refuses), uprobe offsets (FUNC+N) and
// probes with an empty path (usdt::P:N, uprobe::FUNC), which the back end
// finds in the traced processes (bpftrace 0.17 refuses uprobe::FUNC).
// Builtins: pid tid uid gid comm nsecs elapsed cpu probe func (the
// probed function's name) retval
// arg0…arg11 args.NAME (args->NAME) ustack, cpid (the PID of the command
// the tracer starts; a program that reads it needs one), and goid, the goroutine id of
// a Go function's probe (a usdtkit extension); functions str strncmp count sum avg min max stats hist lhist
// ustack(n) ustack(perf) ustack(perf, n) ustack(bpftrace, n) printf print
// delete clear zero time exit reg usym, signal (CheckOptions.Unsafe); if/else,
// while (break, continue),
// unroll, return; positional parameters $1 $2 … $#
// (ParseOptions.Params); casts (int8 … uint64) and reads of user
// memory through a pointer cast, *(int32*)X. kstack is refused (user
// space only), as is ustack(raw).
//
// profile:hz:N (p:), profile:s:N, profile:ms:N and profile:us:N sample
// every CPU, interrupting whatever task runs there: such a block reads
// pid tid uid gid comm cpu nsecs elapsed probe ("profile:hz:99") cpid and
// ustack, the interrupted task's user stack; arg0…, args, retval, func,
// goid and reg() are refused, as there is no probed function (bpftrace
// reads reg() from the interrupted registers, which may be the kernel's).
//
// Where usdtkit differs from bpftrace, it rejects: a program Check accepts
// means what it means under bpftrace. Besides what usdtkit does not compile
// yet (casts to C or struct types, str($1 + N), other probe
// types and functions, print of a tuple or a stack, printf conversions other than
// c s d u x X p o, which bpftrace would print literally), Check rejects a
// division by the constant zero and reading an aggregation, which bpftrace
// compiles to a silent zero.
//
// # Errors
//
// Every error is an *Error{Pos, Msg}: "file:line:col: one sentence". Parse
// stops at the first syntax error; Check reports up to 20 errors in source
// order. Both return them as an ErrorList, whose Unwrap lets errors.As find
// the *Error. Parse bounds the source (MaxSourceSize) and the nesting depth,
// so hostile input gives an error, never a panic or stack exhaustion; a
// printed Program parses back to an equal tree (FuzzParse checks both).
//
// # Concurrency and lifetime
//
// A Program is plain data without resources. Check writes types into the
// tree it is given; do not share a Program between goroutines while Check
// runs. After Check, the tree may be read concurrently.
//
// # Usage
//
//	prog, err := btlang.Compile("trace.bt", src, &btlang.CheckOptions{Probes: resolver})
//	for _, b := range prog.Blocks { … b.Probes, b.Pred, b.Body, b.Vars … }
//	for _, m := range prog.Maps { … m.Keys, m.Value, m.Agg … }
package btlang
