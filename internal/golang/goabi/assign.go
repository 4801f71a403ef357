package goabi

import (
	"debug/elf"
	"fmt"
	"strconv"
)

// Reg is an ABI register: the N-th register (from 0) of the integer or, if
// Float, the floating-point argument sequence of a machine. [IntRegName],
// [FloatRegName] and [PtRegsName] name it.
type Reg struct {
	Float bool
	N     int
}

// String returns "int3" or "float0": the register in ABI terms, without a
// machine.
func (r Reg) String() string {
	if r.Float {
		return "float" + strconv.Itoa(r.N)
	}
	return "int" + strconv.Itoa(r.N)
}

// Name returns the machine's name for r ("rcx", "xmm2", "x3", "v0"), or ""
// if m has no such register.
func (r Reg) Name(m elf.Machine) string {
	if r.Float {
		return FloatRegName(m, r.N)
	}
	return IntRegName(m, r.N)
}

// Piece is one register-assigned base value of a parameter or result.
type Piece struct {
	// Reg is the register that holds it.
	Reg Reg
	// Size is the number of bytes of the value in the register, at its low
	// end: 1 for a bool, 4 for an int32 or a float32, 8 for a pointer.
	Size int64
	// Offset is where the base value sits in the value's memory layout.
	Offset int64
	// Path is the selector from the value to the base value: "" for the value
	// itself, ".len" of a string or slice, ".ptr", ".cap", ".tab" and
	// ".data" of an interface, ".real" and ".imag", a struct field ".X" and
	// the element of a one-element array "[0]", combined as in ".P.X[0]".
	// A field without a name is written ".#i", i being its index.
	Path string
}

// Assignment is where one parameter or result lives: in the registers of
// Pieces, or in the stack argument area at StackOffset when Stack is set.
// A register-assigned value of size zero does not exist: zero-sized values
// are stack-assigned (with no bytes to read).
type Assignment struct {
	Pieces      []Piece
	Stack       bool
	StackOffset int64
}

// Frame is the assignment of a function's parameters and results.
type Frame struct {
	// Params and Results have one entry per value given to Assign.
	Params  []Assignment
	Results []Assignment
	// ResultsOffset is where the stack-assigned results begin in the stack
	// argument area: the end of the stack-assigned parameters rounded up to
	// PtrSize.
	ResultsOffset int64
	// StackSize is the end of the stack-assigned results rounded up to
	// PtrSize: the size of the stack argument area, without spill space.
	StackSize int64
}

// maxStack bounds the stack argument area so that offsets cannot overflow.
const maxStack = 1 << 60

// Assign assigns the parameters (receiver first, for a method) and results
// of a function with the given types to registers and the stack of machine
// m, following Go's ABIInternal.
//
// The error wraps ErrUnsupported for a machine other than EM_X86_64 and
// EM_AARCH64, and ErrInvalidType for a type that is nil or not
// self-consistent; the message names the value ("param 2.X.Y").
func Assign(m elf.Machine, params, results []*Type) (*Frame, error) {
	ni, nf := NumIntRegs(m), NumFloatRegs(m)
	if ni == 0 {
		return nil, fmt.Errorf("machine %v: %w", m, ErrUnsupported)
	}
	a := assigner{c: newChecker(), ni: ni, nf: nf}
	f := &Frame{}
	var err error
	if f.Params, err = a.list("param", params); err != nil {
		return nil, err
	}
	a.stack = alignUp(a.stack, PtrSize)
	f.ResultsOffset = a.stack
	a.i, a.f = 0, 0
	if f.Results, err = a.list("result", results); err != nil {
		return nil, err
	}
	f.StackSize = alignUp(a.stack, PtrSize)
	return f, nil
}

type assigner struct {
	c      *checker
	ni, nf int // registers of the machine
	i, f   int // next integer and float register
	stack  int64
}

func (a *assigner) list(what string, ts []*Type) ([]Assignment, error) {
	out := make([]Assignment, len(ts))
	for k, t := range ts {
		path := what + " " + strconv.Itoa(k)
		n, err := a.c.check(t, path, 0)
		if err != nil {
			return nil, err
		}
		if t.Size > 0 && n.ok && n.ints <= a.ni-a.i && n.floats <= a.nf-a.f {
			var pieces []Piece
			a.regs(&pieces, t, 0, "")
			out[k] = Assignment{Pieces: pieces}
			continue
		}
		// On the stack: the register counters are untouched, as the
		// specification's "reset I and FP" requires.
		off := alignUp(a.stack, t.Align)
		if off > maxStack-t.Size {
			return nil, fmt.Errorf("%s: stack argument area larger than %d bytes: %w", path, int64(maxStack), ErrInvalidType)
		}
		a.stack = off + t.Size
		out[k] = Assignment{Stack: true, StackOffset: off}
	}
	return out, nil
}

// regs appends the pieces of a value of type t at offset off. t has been
// checked and fits in the remaining registers, so it cannot fail. Parts
// that need no register (zero-sized or empty) are not descended into, which
// bounds the walk by the number of registers.
func (a *assigner) regs(pieces *[]Piece, t *Type, off int64, path string) {
	if n := a.c.done[t]; n.ints == 0 && n.floats == 0 {
		return
	}
	word := func(p string, o int64) {
		*pieces = append(*pieces, Piece{Reg: Reg{N: a.i}, Size: PtrSize, Offset: off + o, Path: path + p})
		a.i++
	}
	switch t.Kind {
	case Int:
		*pieces = append(*pieces, Piece{Reg: Reg{N: a.i}, Size: t.Size, Offset: off, Path: path})
		a.i++
	case Float:
		*pieces = append(*pieces, Piece{Reg: Reg{Float: true, N: a.f}, Size: t.Size, Offset: off, Path: path})
		a.f++
	case Complex:
		h := t.Size / 2
		*pieces = append(*pieces,
			Piece{Reg: Reg{Float: true, N: a.f}, Size: h, Offset: off, Path: path + ".real"},
			Piece{Reg: Reg{Float: true, N: a.f + 1}, Size: h, Offset: off + h, Path: path + ".imag"})
		a.f += 2
	case String:
		word(".ptr", 0)
		word(".len", PtrSize)
	case Slice:
		word(".ptr", 0)
		word(".len", PtrSize)
		word(".cap", 2*PtrSize)
	case Interface:
		word(".tab", 0)
		word(".data", PtrSize)
	case Struct:
		for i, f := range t.Fields {
			name := f.Name
			if name == "" {
				name = "#" + strconv.Itoa(i)
			}
			a.regs(pieces, f.Type, off+f.Offset, path+"."+name)
		}
	case Array:
		// Only one-element arrays get here: longer ones are never
		// register-assigned and empty ones need no register.
		a.regs(pieces, t.Elem, off, path+"[0]")
	}
}

func alignUp(x, a int64) int64 {
	return (x + a - 1) &^ (a - 1)
}
