package btgen

import (
	"debug/elf"
	"math"
	"strings"

	"github.com/cilium/ebpf/asm"

	"github.com/usdtkit/usdtkit/internal/bpf/argread"
	"github.com/usdtkit/usdtkit/internal/lang/btlang"
)

// storeImm64 is *(u64 *)(dst + off) = v sign-extended (BPF_ST|BPF_DW,
// which asm.StoreImm does not build).
func storeImm64(dst asm.Register, off int16, v int32) asm.Instruction {
	return asm.Instruction{OpCode: asm.StoreImmOp(asm.DWord), Dst: dst, Offset: off, Constant: int64(v)}
}

// loadConst sets reg to v.
func (g *gen) loadConst(reg asm.Register, v int64) {
	if v >= math.MinInt32 && v <= math.MaxInt32 {
		g.emit(asm.Mov.Imm(reg, int32(v)))
		return
	}
	g.emit(asm.LoadImm(reg, v, asm.DWord))
}

// strBuf is a string value: a zero-padded buffer of size bytes at scratch
// offset off.
type strBuf struct{ off, size int }

// intExpr emits e, an integer expression, leaving its value in R0.
func (g *gen) intExpr(e btlang.Expr) {
	if t := e.Type(); t.Kind != btlang.KindInt && t.Kind != btlang.KindPtr {
		g.fail(internal(e.Pos(), "a %s value here", t))
		return
	}
	switch e := e.(type) {
	case *btlang.IntLit:
		g.loadConst(asm.R0, int64(e.Val))
	case *btlang.Builtin:
		g.builtin(e)
	case *btlang.ArgField:
		g.argFieldInt(e)
	case *btlang.Var:
		loc, ok := g.vars[e.Decl]
		if !ok {
			g.fail(internal(e.At, "variable %s", e.Name))
			return
		}
		g.emit(asm.LoadMem(asm.R0, asm.R10, loc.stack, asm.DWord))
	case *btlang.MapRef:
		g.mapReadInt(e)
	case *btlang.Unary:
		g.intExpr(e.X)
		switch e.Op {
		case "-":
			g.emit(asm.Neg.Imm(asm.R0, 0))
		case "~":
			g.emit(asm.Xor.Imm(asm.R0, -1))
		case "!":
			g.boolOf(asm.JEq, 0)
		default:
			g.fail(internal(e.At, "operator %s", e.Op))
		}
	case *btlang.Binary:
		g.binary(e)
	case *btlang.Cast:
		g.intExpr(e.X)
		if !e.Ptr {
			g.extend(e.Size, e.Signed)
		}
	case *btlang.Deref, *btlang.FieldAccess, *btlang.Index:
		g.placeInt(e)
	case *btlang.Sizeof:
		g.loadConst(asm.R0, int64(e.Val))
	case *btlang.Call:
		if e.Name == "reg" {
			g.reg(e)
			return
		}
		if e.Name == "bswap" {
			g.intExpr(e.Args[0])
			// To big endian from the host's little endian: the bytes
			// reversed, the upper ones zeroed (unsigned). An int8 is
			// its byte.
			switch btlang.ByteWidth(e.Args[0]) {
			case 1:
				g.emit(asm.And.Imm(asm.R0, 0xff))
			case 2:
				g.emit(asm.HostTo(asm.BE, asm.R0, asm.Half))
			case 4:
				g.emit(asm.HostTo(asm.BE, asm.R0, asm.Word))
			case 8:
				g.emit(asm.HostTo(asm.BE, asm.R0, asm.DWord))
			}
			return
		}
		if e.Name == "strcontains" {
			// Two literals (Support refuses the others): a constant.
			a, _ := e.Args[0].(*btlang.StrLit)
			b, _ := e.Args[1].(*btlang.StrLit)
			if a == nil || b == nil {
				g.fail(internal(e.At, "strcontains() here"))
				return
			}
			v := int64(0)
			if strings.Contains(a.Val, b.Val) {
				v = 1
			}
			g.loadConst(asm.R0, v)
			return
		}
		if e.Name != "strncmp" {
			g.fail(internal(e.At, "%s() here", e.Name))
			return
		}
		n, _ := btlang.ConstValue(e.Args[2])
		a := g.strExpr(e.Args[0])
		b := g.strExpr(e.Args[1])
		g.strPrefixDiffers(a, b, n)
	case *btlang.TupleIndex:
		b := g.tupleExpr(e)
		g.emit(asm.LoadMem(asm.R0, asm.R7, int16(b.off), asm.DWord))
	case *btlang.IncDecExpr:
		g.incDec(e)
	case *btlang.Ternary:
		g.ternary(e, "", g.intExpr)
	default:
		g.fail(internal(e.Pos(), "this expression (%s)", btlang.ExprString(e)))
	}
}

// boolOf sets R0 to 1 when R0 op imm holds, else 0.
func (g *gen) boolOf(op asm.JumpOp, imm int32) {
	yes, end := g.newLabel("true"), g.newLabel("bool")
	g.emit(
		op.Imm(asm.R0, imm, yes),
		asm.Mov.Imm(asm.R0, 0),
		asm.Ja.Label(end),
	)
	g.label(yes)
	g.emit(asm.Mov.Imm(asm.R0, 1))
	g.label(end)
}

func (g *gen) builtin(e *btlang.Builtin) {
	switch {
	case e.Arg >= 0:
		g.emit(asm.LoadMem(asm.R0, asm.R7, int16(argsOff+8*e.Arg), asm.DWord))
		return
	}
	switch e.Name {
	case "retval":
		g.emit(asm.LoadMem(asm.R0, asm.R7, retOff, asm.DWord))
	case "goid":
		g.goid(e)
	case "pid":
		g.emit(asm.FnGetCurrentPidTgid.Call(), asm.RSh.Imm(asm.R0, 32))
	case "tid":
		g.emit(asm.FnGetCurrentPidTgid.Call(), asm.Mov.Reg32(asm.R0, asm.R0))
	case "uid":
		g.emit(asm.FnGetCurrentUidGid.Call(), asm.Mov.Reg32(asm.R0, asm.R0))
	case "gid":
		g.emit(asm.FnGetCurrentUidGid.Call(), asm.RSh.Imm(asm.R0, 32))
	case "nsecs":
		g.emit(asm.FnKtimeGetNs.Call())
	case "cpu":
		g.emit(asm.FnGetSmpProcessorId.Call())
	case "rand":
		g.emit(asm.FnGetPrandomU32.Call())
	case "numaid":
		g.emit(asm.FnGetNumaNodeId.Call())
	case "cgroup":
		// The cgroup v2 id of the task that hit the probe.
		g.emit(asm.FnGetCurrentCgroupId.Call())
	case "elapsed":
		// nsecs minus the runner's start, which it writes in MapStart
		// (CLOCK_MONOTONIC, as bpf_ktime_get_ns) before attaching.
		g.startSlot(0)
		g.emit(
			asm.StoreMem(asm.R10, -16, asm.R1, asm.DWord),
			asm.FnKtimeGetNs.Call(),
			asm.LoadMem(asm.R1, asm.R10, -16, asm.DWord),
			asm.Sub.Reg(asm.R0, asm.R1),
		)
	case "cpid":
		// The command's PID, which the runner writes in MapStart's
		// second slot before attaching (Program.CPID).
		g.out.CPID = true
		g.startSlot(1)
		g.emit(asm.Mov.Reg(asm.R0, asm.R1))
	default:
		g.fail(internal(e.At, "builtin %s", e.Name))
	}
}

var aluOps = map[string]asm.ALUOp{
	"+": asm.Add, "-": asm.Sub, "*": asm.Mul, "/": asm.Div, "%": asm.Mod,
	"<<": asm.LSh, ">>": asm.RSh, "&": asm.And, "|": asm.Or, "^": asm.Xor,
}

// cmpOps maps a comparison to its jump: unsigned, then signed.
var cmpOps = map[string][2]asm.JumpOp{
	"==": {asm.JEq, asm.JEq}, "!=": {asm.JNE, asm.JNE},
	"<": {asm.JLT, asm.JSLT}, "<=": {asm.JLE, asm.JSLE},
	">": {asm.JGT, asm.JSGT}, ">=": {asm.JGE, asm.JSGE},
}

func (g *gen) binary(e *btlang.Binary) {
	switch e.Op {
	case "&&", "||":
		end := g.newLabel("logic")
		g.intExpr(e.X)
		g.boolOf(asm.JNE, 0)
		if e.Op == "&&" {
			g.emit(asm.JEq.Imm(asm.R0, 0, end))
		} else {
			g.emit(asm.JNE.Imm(asm.R0, 0, end))
		}
		g.intExpr(e.Y)
		g.boolOf(asm.JNE, 0)
		g.label(end)
		g.emit(nop())
		return
	}
	if e.X.Type().Kind == btlang.KindBuf {
		a := g.bufExpr(e.X)
		b := g.bufExpr(e.Y)
		g.bufEqual(a, b)
		if e.Op == "!=" {
			g.emit(asm.Xor.Imm(asm.R0, 1))
		}
		return
	}
	if e.X.Type().Kind == btlang.KindArray {
		a := g.valueBuf(e.X)
		b := g.valueBuf(e.Y)
		g.bytesEqual(a, b, btlang.CSize(e.X.Type()))
		if e.Op == "!=" {
			g.emit(asm.Xor.Imm(asm.R0, 1))
		}
		return
	}
	if e.X.Type().Kind == btlang.KindString {
		if e.Op != "==" && e.Op != "!=" {
			g.fail(internal(e.At, "string operator %s", e.Op))
			return
		}
		a := g.strExpr(e.X)
		b := g.strExpr(e.Y)
		g.strEqual(a, b)
		if e.Op == "!=" {
			g.emit(asm.Xor.Imm(asm.R0, 1))
		}
		return
	}
	// Integers: X is spilled while Y is computed.
	g.intExpr(e.X)
	slot := g.push()
	g.emit(asm.StoreMem(asm.R10, slot, asm.R0, asm.DWord))
	g.intExpr(e.Y)
	g.emit(asm.LoadMem(asm.R1, asm.R10, slot, asm.DWord))
	g.pop()
	if e.Type().Kind == btlang.KindPtr {
		// C's pointer arithmetic: the integer counts elements.
		if e.X.Type().Kind == btlang.KindPtr {
			g.scale(asm.R0, ptrScale(e.X.Type()))
		} else {
			g.scale(asm.R1, ptrScale(e.Y.Type()))
		}
	}
	if op, ok := aluOps[e.Op]; ok {
		// bpftrace 0.17 divides, takes remainders and shifts right
		// unsigned (LLVM udiv, urem, lshr) whatever the operands' signs;
		// BPF's division by zero gives 0 as there.
		g.emit(op.Reg(asm.R1, asm.R0), asm.Mov.Reg(asm.R0, asm.R1))
		return
	}
	ops, ok := cmpOps[e.Op]
	if !ok {
		g.fail(internal(e.At, "operator %s", e.Op))
		return
	}
	op := ops[0]
	if e.X.Type().Signed && e.Y.Type().Signed {
		op = ops[1]
	}
	yes, end := g.newLabel("cmp"), g.newLabel("cmpend")
	g.emit(
		op.Reg(asm.R1, asm.R0, yes),
		asm.Mov.Imm(asm.R0, 0),
		asm.Ja.Label(end),
	)
	g.label(yes)
	g.emit(asm.Mov.Imm(asm.R0, 1))
	g.label(end)
}

// strEqual sets R0 to 1 when the strings in a and b are equal. Both
// buffers are zero-padded, so comparing the bytes the shorter buffer holds
// decides: its NUL is among them.
func (g *gen) strEqual(a, b strBuf) {
	g.wordsEqual(a.off, b.off, min(round8(a.size), round8(b.size)), "str")
}

// wordsEqual sets R0 to 1 when the n bytes (a multiple of 8) at scratch
// a and b are equal; what names the labels (what+"ne", what+"eq").
func (g *gen) wordsEqual(a, b, n int, what string) {
	ne, end := g.newLabel(what+"ne"), g.newLabel(what+"eq")
	for k := 0; k < n; k += 8 {
		g.emit(
			asm.LoadMem(asm.R1, asm.R7, int16(a+k), asm.DWord),
			asm.LoadMem(asm.R2, asm.R7, int16(b+k), asm.DWord),
			asm.JNE.Reg(asm.R1, asm.R2, ne),
		)
	}
	g.emit(asm.Mov.Imm(asm.R0, 1), asm.Ja.Label(end))
	g.label(ne)
	g.emit(asm.Mov.Imm(asm.R0, 0))
	g.label(end)
}

// ternary emits e: arm(e.Then) when its condition holds, else
// arm(e.Else); prefix names the labels (prefix+"else", prefix+"fi"),
// the second left pending.
func (g *gen) ternary(e *btlang.Ternary, prefix string, arm func(btlang.Expr)) {
	els, end := g.newLabel(prefix+"else"), g.newLabel(prefix+"fi")
	g.intExpr(e.Cond)
	g.emit(asm.JEq.Imm(asm.R0, 0, els))
	arm(e.Then)
	g.emit(asm.Ja.Label(end))
	g.label(els)
	arm(e.Else)
	g.label(end)
}

// startSlot loads slot key of MapStart (0: the runner's start time, 1:
// cpid) into R1, 0 if it cannot be read.
func (g *gen) startSlot(key int32) {
	none := g.newLabel("nostart")
	g.lookupAt(MapStart, key)
	g.emit(
		asm.Mov.Imm(asm.R1, 0),
		asm.JEq.Imm(asm.R0, 0, none),
		asm.LoadMem(asm.R1, asm.R0, 0, asm.DWord),
	)
	g.label(none)
}

// reg loads into R0 the register reg(NAME) names, from the probe's
// context (R6): x86-64 only, as bpftrace's names are.
func (g *gen) reg(e *btlang.Call) {
	lit, _ := e.Args[0].(*btlang.StrLit)
	if lit == nil || g.opts.Machine != elf.EM_X86_64 || g.special != 0 {
		g.fail(internal(e.At, "reg() here"))
		return
	}
	name := lit.Val
	switch name {
	case "flags":
		name = "eflags"
	case "orig_ax":
		name = "orig_rax"
	case "cs", "ss", "r8", "r9", "r10", "r11", "r12", "r13", "r14", "r15":
	default:
		name = "r" + name
	}
	off, err := argread.PtRegs(elf.EM_X86_64, name)
	if err != nil {
		g.fail(&btlang.Error{Pos: e.At, Msg: err.Error()})
		return
	}
	g.emit(asm.LoadMem(asm.R0, asm.R6, off, asm.DWord))
}

// extend truncates R0 to its low size bytes and extends them to 64 bits,
// with the sign if signed.
func (g *gen) extend(size int, signed bool) {
	if size >= 8 {
		return
	}
	if shift := int32(64 - 8*size); signed {
		g.emit(asm.LSh.Imm(asm.R0, shift), asm.ArSh.Imm(asm.R0, shift))
	} else if size == 4 {
		g.emit(asm.Mov.Reg32(asm.R0, asm.R0))
	} else {
		g.emit(asm.And.Imm(asm.R0, int32(1)<<(8*size)-1))
	}
}

// strPrefixDiffers sets R0 to 0 when the strings in a and b agree in
// their first n bytes, else 1 (strncmp). Both buffers are zero-padded:
// bytes past a string's NUL are 0 in both when the strings agree, and
// the shorter buffer holds its NUL, so its bytes decide.
func (g *gen) strPrefixDiffers(a, b strBuf, n int64) {
	l := int(min(n, int64(min(round8(a.size), round8(b.size)))))
	if l == 0 {
		g.emit(asm.Mov.Imm(asm.R0, 0))
		return
	}
	ne, end := g.newLabel("strncmp_ne"), g.newLabel("strncmp_end")
	for k := 0; k < l; k += 8 {
		g.emit(
			asm.LoadMem(asm.R1, asm.R7, int16(a.off+k), asm.DWord),
			asm.LoadMem(asm.R2, asm.R7, int16(b.off+k), asm.DWord),
		)
		if r := l - k; r < 8 {
			// The last bytes alone (little endian: the low ones).
			g.emit(
				asm.Xor.Reg(asm.R1, asm.R2),
				asm.LoadImm(asm.R2, int64(1)<<(8*r)-1, asm.DWord),
				asm.And.Reg(asm.R1, asm.R2),
				asm.JNE.Imm(asm.R1, 0, ne),
			)
			continue
		}
		g.emit(asm.JNE.Reg(asm.R1, asm.R2, ne))
	}
	g.emit(asm.Mov.Imm(asm.R0, 0), asm.Ja.Label(end))
	g.label(ne)
	g.emit(asm.Mov.Imm(asm.R0, 1))
	g.label(end)
}

// strExpr emits e, a string expression, and returns its buffer.
func (g *gen) strExpr(e btlang.Expr) strBuf {
	t := e.Type()
	if t.Kind != btlang.KindString {
		g.fail(internal(e.Pos(), "a %s value here", t))
		return strBuf{off: zeroOff, size: 8}
	}
	switch e := e.(type) {
	case *btlang.StrLit:
		b := strBuf{off: g.alloc(t.Size), size: t.Size}
		var buf [8]byte
		for k := 0; k < round8(t.Size); k += 8 {
			clear(buf[:])
			if k < len(e.Val) {
				copy(buf[:], e.Val[k:])
			}
			var w int64
			for j := 7; j >= 0; j-- { // little endian
				w = w<<8 | int64(buf[j])
			}
			if w >= math.MinInt32 && w <= math.MaxInt32 {
				g.emit(storeImm64(asm.R7, int16(b.off+k), int32(w)))
			} else {
				g.emit(asm.LoadImm(asm.R1, w, asm.DWord), asm.StoreMem(asm.R7, int16(b.off+k), asm.R1, asm.DWord))
			}
		}
		return b
	case *btlang.Builtin:
		if e.Name != "comm" {
			break
		}
		b := strBuf{off: g.alloc(16), size: 16}
		g.zero(b.off, 16)
		g.emit(
			asm.Mov.Reg(asm.R1, asm.R7),
			asm.Add.Imm(asm.R1, int32(b.off)),
			asm.Mov.Imm(asm.R2, 16),
			asm.FnGetCurrentComm.Call(),
		)
		return b
	case *btlang.Var:
		loc, ok := g.vars[e.Decl]
		if !ok {
			break
		}
		return strBuf{off: loc.off, size: loc.size}
	case *btlang.Call:
		if e.Name != "str" {
			break
		}
		b := strBuf{off: g.alloc(t.Size), size: t.Size}
		_, literal := e.Args[len(e.Args)-1].(*btlang.IntLit)
		variable := len(e.Args) == 2 && !literal
		if e.Args[0].Type().Kind == btlang.KindString {
			if variable {
				g.fail(internal(e.Args[1].Pos(), "a length of str() of a string that is not a literal"))
			}
			src := g.strExpr(e.Args[0])
			g.copyStr(b, src)
			return b
		}
		var lenSlot int16
		if variable {
			// n characters and a NUL, at most the buffer: min(n+1, size)
			// compared unsigned, so a negative n reads the whole buffer.
			g.intExpr(e.Args[1])
			lenSlot = g.push()
			defer g.pop()
			ok := g.newLabel("strlen")
			g.emit(
				asm.Add.Imm(asm.R0, 1),
				asm.JLE.Imm(asm.R0, int32(b.size), ok),
				asm.Mov.Imm(asm.R0, int32(b.size)),
			)
			g.label(ok)
			g.emit(asm.StoreMem(asm.R10, lenSlot, asm.R0, asm.DWord))
		}
		g.intExpr(e.Args[0])
		g.zero(b.off, b.size)
		// A fault leaves an empty string, as in bpftrace.
		g.emit(
			asm.Mov.Reg(asm.R3, asm.R0),
			asm.Mov.Reg(asm.R1, asm.R7),
			asm.Add.Imm(asm.R1, int32(b.off)),
			asm.Mov.Imm(asm.R2, int32(b.size)),
		)
		if variable {
			g.emit(asm.LoadMem(asm.R2, asm.R10, lenSlot, asm.DWord))
		}
		g.readUserStr()
		return b
	case *btlang.Ternary:
		b := strBuf{off: g.alloc(t.Size), size: t.Size}
		g.ternary(e, "s", func(x btlang.Expr) { g.copyStr(b, g.strExpr(x)) })
		g.emit(nop())
		return b
	case *btlang.MapRef:
		return g.mapReadStr(e)
	case *btlang.ArgField:
		return g.argFieldStr(e)
	case *btlang.TupleIndex:
		b := g.tupleExpr(e)
		if b.t.Kind != btlang.KindString {
			break
		}
		return strBuf{off: b.off, size: b.t.Size}
	case *btlang.Deref, *btlang.FieldAccess, *btlang.Index:
		return g.placeStr(e)
	}
	g.fail(internal(e.Pos(), "this string expression (%s)", btlang.ExprString(e)))
	return strBuf{off: zeroOff, size: 8}
}

// copyStr copies the string in src into dst, cut to dst.size-1 bytes, the
// rest of dst zeroed.
func (g *gen) copyStr(dst, src strBuf) {
	g.copyStrFrom(asm.R7, src.off, src.size, asm.R7, dst.off, dst.size)
}

// copyStrFrom copies a zero-padded string of srcSize bytes at from+srcOff
// to to+dstOff, a buffer of dstSize bytes, cutting and zero-padding.
func (g *gen) copyStrFrom(from asm.Register, srcOff, srcSize int, to asm.Register, dstOff, dstSize int) {
	for k := 0; k < round8(dstSize); k += 8 {
		if k < round8(srcSize) {
			g.emit(
				asm.LoadMem(asm.R1, from, int16(srcOff+k), asm.DWord),
				asm.StoreMem(to, int16(dstOff+k), asm.R1, asm.DWord),
			)
		} else {
			g.emit(storeImm64(to, int16(dstOff+k), 0))
		}
	}
	if srcSize > dstSize {
		// Cut: NUL at dstSize-1, zeros after it.
		for k := dstSize - 1; k < round8(dstSize); k++ {
			g.emit(asm.StoreImm(to, int16(dstOff+k), 0, asm.Byte))
		}
	}
}

// nop is "ja +0": a place for labels that changes nothing.
func nop() asm.Instruction {
	return asm.Instruction{OpCode: asm.OpCode(asm.JumpClass).SetJumpOp(asm.Ja)}
}
