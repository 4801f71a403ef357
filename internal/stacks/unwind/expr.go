package unwind

import (
	"errors"
	"fmt"
)

// errUnsupportedOp is wrapped by evalExpr for operations it does not do.
var errUnsupportedOp = errors.New("unsupported DWARF operation")

// DWARF expression operations (DWARF 5 section 7.7.1).
const (
	opDeref      = 0x06
	opConst1u    = 0x08
	opConst1s    = 0x09
	opConst2u    = 0x0a
	opConst2s    = 0x0b
	opConst4u    = 0x0c
	opConst4s    = 0x0d
	opConst8u    = 0x0e
	opConst8s    = 0x0f
	opConstu     = 0x10
	opConsts     = 0x11
	opDup        = 0x12
	opDrop       = 0x13
	opOver       = 0x14
	opPick       = 0x15
	opSwap       = 0x16
	opAbs        = 0x19
	opAnd        = 0x1a
	opMinus      = 0x1c
	opMul        = 0x1e
	opNeg        = 0x1f
	opNot        = 0x20
	opOr         = 0x21
	opPlus       = 0x22
	opPlusUconst = 0x23
	opShl        = 0x24
	opShr        = 0x25
	opShra       = 0x26
	opXor        = 0x27
	opEq         = 0x29
	opGe         = 0x2a
	opGt         = 0x2b
	opLe         = 0x2c
	opLt         = 0x2d
	opNe         = 0x2e
	opLit0       = 0x30
	opLit31      = 0x4f
	opBreg0      = 0x70
	opBreg31     = 0x8f
	opBregx      = 0x92
	opNop        = 0x96
)

// Bounds of one evaluation: expressions in CFI are a handful of
// operations; these only keep hostile ones cheap.
const (
	maxExprStack = 64
	maxExprLen   = 1024
)

// exprEnv is what an expression may read: registers and memory.
type exprEnv interface {
	reg(r uint64) (uint64, bool)
	read(addr uint64) (uint64, bool)
}

// evalExpr evaluates a DWARF expression with push on the stack first
// (the CFA for register rules; nothing for a CFA expression when
// push is nil) and returns the top of the stack. It has no branches, so
// it runs at most len(expr) operations.
func evalExpr(expr []byte, env exprEnv, push *uint64) (uint64, error) {
	if len(expr) > maxExprLen {
		return 0, fmt.Errorf("expression of %d bytes", len(expr))
	}
	var st [maxExprStack]uint64
	n := 0
	if push != nil {
		st[0] = *push
		n = 1
	}
	in := &operands{b: expr}
	push1 := func(v uint64) error {
		if n == maxExprStack {
			return errors.New("expression stack overflow")
		}
		st[n] = v
		n++
		return nil
	}
	for !in.done() {
		at := in.pos
		op := expr[at]
		in.pos++
		var err error
		var v uint64
		switch {
		case op >= opLit0 && op <= opLit31:
			err = push1(uint64(op - opLit0))
		case op >= opBreg0 && op <= opBreg31, op == opBregx:
			r := uint64(op - opBreg0)
			if op == opBregx {
				if r, err = in.uleb(); err != nil {
					break
				}
			}
			var off int64
			if off, err = in.sleb(); err != nil {
				break
			}
			rv, ok := env.reg(r)
			if !ok {
				return 0, fmt.Errorf("register %d: %w", r, errNoRegister)
			}
			err = push1(rv + uint64(off))
		case op >= opConst1u && op <= opConst8s:
			size := 1 << ((op - opConst1u) / 2)
			if v, err = in.fixed(size, (op-opConst1u)%2 == 1); err == nil {
				err = push1(v)
			}
		case op == opConstu:
			if v, err = in.uleb(); err == nil {
				err = push1(v)
			}
		case op == opConsts:
			var s int64
			if s, err = in.sleb(); err == nil {
				err = push1(uint64(s))
			}
		case op == opNop:
		case op == opDup, op == opOver, op == opPick:
			idx := 0
			if op == opOver {
				idx = 1
			}
			if op == opPick {
				b, err := in.byte()
				if err != nil {
					return 0, fmt.Errorf("DW_OP_pick: %w", err)
				}
				idx = int(b)
			}
			if idx >= n {
				return 0, fmt.Errorf("operation %#x at %d: stack underflow", op, at)
			}
			err = push1(st[n-1-idx])
		case op == opDrop:
			if n < 1 {
				return 0, fmt.Errorf("operation %#x at %d: stack underflow", op, at)
			}
			n--
		case op == opSwap:
			if n < 2 {
				return 0, fmt.Errorf("operation %#x at %d: stack underflow", op, at)
			}
			st[n-1], st[n-2] = st[n-2], st[n-1]
		case op == opDeref, op == opAbs, op == opNeg, op == opNot, op == opPlusUconst:
			if n < 1 {
				return 0, fmt.Errorf("operation %#x at %d: stack underflow", op, at)
			}
			a := st[n-1]
			switch op {
			case opDeref:
				m, ok := env.read(a)
				if !ok {
					return 0, fmt.Errorf("read %#x: %w", a, errOutsideCopy)
				}
				a = m
			case opAbs:
				if int64(a) < 0 {
					a = -a
				}
			case opNeg:
				a = -a
			case opNot:
				a = ^a
			case opPlusUconst:
				var u uint64
				if u, err = in.uleb(); err != nil {
					break
				}
				a += u
			}
			st[n-1] = a
		case op >= opAnd && op <= opNe && op != 0x1b && op != 0x1d && op != 0x28 && op != opNeg && op != opNot && op != opPlusUconst:
			// Binary operations: a (second) op b (top). 0x1b div, 0x1d
			// mod and 0x28 bra are not among them.
			if n < 2 {
				return 0, fmt.Errorf("operation %#x at %d: stack underflow", op, at)
			}
			a, b := st[n-2], st[n-1]
			n--
			var r uint64
			switch op {
			case opAnd:
				r = a & b
			case opMinus:
				r = a - b
			case opMul:
				r = a * b
			case opOr:
				r = a | b
			case opPlus:
				r = a + b
			case opShl:
				r = a << (b & 63)
			case opShr:
				r = a >> (b & 63)
			case opShra:
				r = uint64(int64(a) >> (b & 63))
			case opXor:
				r = a ^ b
			case opEq, opGe, opGt, opLe, opLt, opNe:
				if compare(op, int64(a), int64(b)) {
					r = 1
				}
			}
			st[n-1] = r
		default:
			return 0, fmt.Errorf("operation %#x at %d: %w", op, at, errUnsupportedOp)
		}
		if err != nil {
			return 0, fmt.Errorf("operation %#x at %d: %w", op, at, err)
		}
	}
	if n == 0 {
		return 0, errors.New("expression leaves an empty stack")
	}
	return st[n-1], nil
}

// compare applies a DWARF comparison, which is signed.
func compare(op byte, a, b int64) bool {
	switch op {
	case opEq:
		return a == b
	case opGe:
		return a >= b
	case opGt:
		return a > b
	case opLe:
		return a <= b
	case opLt:
		return a < b
	}
	return a != b
}
