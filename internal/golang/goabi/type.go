package goabi

import (
	"errors"
	"fmt"
	"strconv"
)

// ErrUnsupported is wrapped by errors for a machine other than x86-64 and
// arm64, and for DWARF types Go's ABI has no rule for.
var ErrUnsupported = errors.New("unsupported")

// ErrInvalidType is wrapped by errors for a [Type] that is not
// self-consistent.
var ErrInvalidType = errors.New("invalid type")

// PtrSize is the size and alignment of a pointer, int and uintptr on every
// machine this package supports.
const PtrSize = 8

// Kind is the class of a Go type as the ABI treats it.
type Kind uint8

const (
	// Invalid is the zero Kind; no valid Type has it.
	Invalid Kind = iota
	// Int is any integer (1, 2, 4 or 8 bytes), bool, and every
	// pointer-shaped type: pointers, uintptr, unsafe.Pointer, maps, channels
	// and funcs. It takes one integer register.
	Int
	// Float is float32 or float64 (4 or 8 bytes). It takes one float register.
	Float
	// Complex is complex64 or complex128 (8 or 16 bytes): two float
	// registers, real part first.
	Complex
	// String is a string (16 bytes): pointer and length.
	String
	// Slice is a slice (24 bytes): pointer, length and capacity.
	Slice
	// Interface is any interface (16 bytes): the type word (runtime._type for
	// the empty interface, runtime.itab otherwise) and the data word.
	Interface
	// Struct is a struct; Type.Fields lists its fields.
	Struct
	// Array is an array of Type.Len elements of Type.Elem.
	Array
)

var kindNames = [...]string{
	Invalid:   "Invalid",
	Int:       "Int",
	Float:     "Float",
	Complex:   "Complex",
	String:    "String",
	Slice:     "Slice",
	Interface: "Interface",
	Struct:    "Struct",
	Array:     "Array",
}

func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return "Kind(" + strconv.Itoa(int(k)) + ")"
}

// Type is the layout of a Go type, as much of it as the ABI needs. Size and
// Align are in bytes; Align is a power of two and Size a multiple of it.
// Types may share parts (a *Type may appear in several places) but must not
// contain themselves.
type Type struct {
	Kind  Kind
	Size  int64
	Align int64
	// Name is the Go name of the type, for messages only; it may be empty.
	Name string
	// Fields are the fields of a Struct in memory order.
	Fields []Field
	// Elem is the element type of an Array.
	Elem *Type
	// Len is the length of an Array.
	Len int64
}

// Field is one field of a struct type.
type Field struct {
	// Name is the field name; it forms the selector path of pieces.
	Name string
	// Offset is the byte offset of the field in the struct.
	Offset int64
	Type   *Type
}

// String returns the type's Name, or its kind if it has none.
func (t *Type) String() string {
	if t == nil {
		return "<nil>"
	}
	if t.Name != "" {
		return t.Name
	}
	return t.Kind.String()
}

// maxSize bounds Type.Size. The compiler's own limit (types.MaxWidth on
// 64-bit targets) is 1<<50; anything larger is not a Go type.
const maxSize = 1 << 50

// maxDepth bounds how deeply types nest by value, so that a hand-built or
// hostile type cannot exhaust the stack.
const maxDepth = 1000

// need is the number of registers a value needs. ok is false when it
// contains an array of two or more elements (reachable through structs and
// one-element arrays), which can never be register-assigned.
type need struct {
	ints, floats int
	ok           bool
}

// needCap saturates register counts (the compiler saturates at 255); no
// machine has this many.
const needCap = 1 << 16

func (n need) add(o need) need {
	return need{min(n.ints+o.ints, needCap), min(n.floats+o.floats, needCap), n.ok && o.ok}
}

// checker validates types and counts the registers they need, once per
// *Type, detecting cycles.
type checker struct {
	done map[*Type]need
	busy map[*Type]bool
}

func newChecker() *checker {
	return &checker{done: make(map[*Type]need), busy: make(map[*Type]bool)}
}

func invalid(path, format string, args ...any) error {
	if path == "" {
		path = "value"
	}
	return fmt.Errorf("%s: %s: %w", path, fmt.Sprintf(format, args...), ErrInvalidType)
}

// check validates t (reached by path) and returns what it needs.
func (c *checker) check(t *Type, path string, depth int) (need, error) {
	if t == nil {
		return need{}, invalid(path, "nil type")
	}
	if n, ok := c.done[t]; ok {
		return n, nil
	}
	if c.busy[t] {
		return need{}, invalid(path, "%s contains itself", t)
	}
	if depth > maxDepth {
		return need{}, invalid(path, "nested more than %d deep", maxDepth)
	}
	if t.Size < 0 || t.Size > maxSize {
		return need{}, invalid(path, "%s: size %d", t, t.Size)
	}
	if t.Align <= 0 || t.Align > maxSize || t.Align&(t.Align-1) != 0 || t.Size%t.Align != 0 {
		return need{}, invalid(path, "%s: alignment %d for size %d", t, t.Align, t.Size)
	}
	c.busy[t] = true
	n, err := c.checkKind(t, path, depth)
	delete(c.busy, t)
	if err != nil {
		return need{}, err
	}
	c.done[t] = n
	return n, nil
}

func (c *checker) checkKind(t *Type, path string, depth int) (need, error) {
	sizes := func(ok ...int64) error {
		for _, s := range ok {
			if t.Size == s {
				return nil
			}
		}
		return invalid(path, "%s: size %d for kind %v", t, t.Size, t.Kind)
	}
	switch t.Kind {
	case Int:
		return need{ints: 1, ok: true}, sizes(1, 2, 4, 8)
	case Float:
		return need{floats: 1, ok: true}, sizes(4, 8)
	case Complex:
		return need{floats: 2, ok: true}, sizes(8, 16)
	case String:
		return need{ints: 2, ok: true}, sizes(2 * PtrSize)
	case Slice:
		return need{ints: 3, ok: true}, sizes(3 * PtrSize)
	case Interface:
		return need{ints: 2, ok: true}, sizes(2 * PtrSize)
	case Struct:
		n := need{ok: true}
		prev := int64(0)
		for i, f := range t.Fields {
			fp := path + "." + f.Name
			if f.Name == "" {
				fp = path + ".#" + strconv.Itoa(i)
			}
			fn, err := c.check(f.Type, fp, depth+1)
			if err != nil {
				return need{}, err
			}
			if f.Offset < prev || f.Offset > t.Size || f.Type.Size > t.Size-f.Offset {
				return need{}, invalid(fp, "field at offset %d size %d outside struct %s of size %d or overlapping",
					f.Offset, f.Type.Size, t, t.Size)
			}
			if f.Offset%f.Type.Align != 0 {
				return need{}, invalid(fp, "field at offset %d misaligned for alignment %d", f.Offset, f.Type.Align)
			}
			prev = f.Offset + f.Type.Size
			n = n.add(fn)
		}
		return n, nil
	case Array:
		en, err := c.check(t.Elem, path+"[]", depth+1)
		if err != nil {
			return need{}, err
		}
		if t.Len < 0 || (t.Elem.Size != 0 && t.Len > maxSize/t.Elem.Size) || t.Len*t.Elem.Size != t.Size {
			return need{}, invalid(path, "%s: %d elements of size %d in size %d", t, t.Len, t.Elem.Size, t.Size)
		}
		switch t.Len {
		case 0:
			return need{ok: true}, nil
		case 1:
			return en, nil
		}
		return need{}, nil
	}
	return need{}, invalid(path, "%s: kind %v", t, t.Kind)
}
