package goabi

import (
	"fmt"
	"reflect"
	"strconv"
	"strings"

	"github.com/go-delve/delve/pkg/dwarf/godwarf"
)

// FromDWARF converts a Go type read from DWARF by delve's godwarf package to
// a Type. Typedefs, qualifiers and generic shape types are resolved to their
// underlying type (keeping the outermost name). Integers of every width,
// bool, enums, and pointer-shaped types (pointers, unsafe.Pointer, maps,
// channels, funcs) become Int; Go strings, slices and interfaces their own
// kinds; structs and arrays are converted recursively. Parts shared in the
// DWARF type are shared in the result.
//
// Types Go's ABI has no rule for (unions, bit fields, void, C "...",
// incomplete types, types delve could not read) give an error wrapping
// ErrUnsupported; a DWARF type that is inconsistent (a nil part, an array of
// unknown length, a struct that contains itself) one wrapping
// ErrInvalidType. Cyclic DWARF types are handled: cycles through pointers
// are not followed, and a by-value cycle is an error.
//
// godwarf reports a length of 0 for arrays of zero-sized elements that are
// struct fields (see zeroSizedLen); FromDWARF takes their length from the
// type's Go name instead, as the ABI treats [2]struct{} unlike [0]struct{}.
func FromDWARF(t godwarf.Type) (*Type, error) {
	c := dwarfConv{done: make(map[godwarf.Type]*Type), busy: make(map[godwarf.Type]bool)}
	return c.conv(t, 0)
}

type dwarfConv struct {
	done map[godwarf.Type]*Type
	busy map[godwarf.Type]bool
}

func isNil(t godwarf.Type) bool {
	if t == nil {
		return true
	}
	v := reflect.ValueOf(t)
	return v.Kind() == reflect.Pointer && v.IsNil()
}

func (c *dwarfConv) conv(t godwarf.Type, depth int) (*Type, error) {
	if isNil(t) {
		return nil, fmt.Errorf("nil DWARF type: %w", ErrInvalidType)
	}
	if r, ok := c.done[t]; ok {
		return r, nil
	}
	if depth > maxDepth {
		return nil, fmt.Errorf("DWARF type nested more than %d deep: %w", maxDepth, ErrInvalidType)
	}
	if c.busy[t] {
		return nil, fmt.Errorf("DWARF type at %#x contains itself: %w", t.Common().Offset, ErrInvalidType)
	}
	c.busy[t] = true
	r, err := c.convKind(t, depth)
	delete(c.busy, t)
	if err != nil {
		return nil, err
	}
	c.done[t] = r
	return r, nil
}

func (c *dwarfConv) convKind(t godwarf.Type, depth int) (*Type, error) {
	name := t.Common().Name
	size := t.Common().ByteSize
	basic := func(k Kind, align int64) (*Type, error) {
		return &Type{Kind: k, Size: size, Align: align, Name: name}, nil
	}
	pointer := func() (*Type, error) {
		return &Type{Kind: Int, Size: PtrSize, Align: PtrSize, Name: name}, nil
	}
	switch t := t.(type) {
	case *godwarf.IntType, *godwarf.UintType, *godwarf.CharType, *godwarf.UcharType,
		*godwarf.BoolType, *godwarf.AddrType, *godwarf.EnumType:
		return basic(Int, max(size, 1))
	case *godwarf.FloatType:
		return basic(Float, max(size, 1))
	case *godwarf.ComplexType:
		return basic(Complex, max(size/2, 1))
	case *godwarf.PtrType, *godwarf.FuncType, *godwarf.MapType, *godwarf.ChanType:
		return pointer()
	case *godwarf.StringType:
		return &Type{Kind: String, Size: 2 * PtrSize, Align: PtrSize, Name: name}, nil
	case *godwarf.SliceType:
		return &Type{Kind: Slice, Size: 3 * PtrSize, Align: PtrSize, Name: name}, nil
	case *godwarf.InterfaceType:
		return &Type{Kind: Interface, Size: 2 * PtrSize, Align: PtrSize, Name: name}, nil
	case *godwarf.TypedefType:
		return c.named(t.Type, name, depth)
	case *godwarf.QualType:
		return c.named(t.Type, name, depth)
	case *godwarf.ParametricType:
		return c.named(t.Type, name, depth)
	case *godwarf.ArrayType:
		if t.Count < 0 {
			return nil, fmt.Errorf("array %s at %#x of unknown length: %w", name, t.Offset, ErrInvalidType)
		}
		elem, err := c.conv(t.Type, depth+1)
		if err != nil {
			return nil, fmt.Errorf("array %s: %w", name, err)
		}
		count := t.Count
		if count == 0 && elem.Size == 0 {
			count = zeroSizedLen(name)
		}
		// Go states the stride (DW_AT_byte_stride) of every array; it is
		// always the element size.
		if t.StrideBitSize > 0 && t.StrideBitSize != 8*elem.Size {
			return nil, fmt.Errorf("array %s at %#x with a stride of %d bits: %w", name, t.Offset, t.StrideBitSize, ErrUnsupported)
		}
		return &Type{Kind: Array, Size: size, Align: elem.Align, Name: name, Elem: elem, Len: count}, nil
	case *godwarf.StructType:
		if t.Kind != "struct" || t.Incomplete {
			return nil, fmt.Errorf("%s %s at %#x: %w", t.Kind, name, t.Offset, ErrUnsupported)
		}
		r := &Type{Kind: Struct, Size: size, Align: 1, Name: name, Fields: make([]Field, 0, len(t.Field))}
		for _, f := range t.Field {
			if f == nil {
				return nil, fmt.Errorf("struct %s at %#x: nil field: %w", name, t.Offset, ErrInvalidType)
			}
			if f.BitSize != 0 {
				return nil, fmt.Errorf("struct %s field %s: bit field: %w", name, f.Name, ErrUnsupported)
			}
			ft, err := c.conv(f.Type, depth+1)
			if err != nil {
				return nil, fmt.Errorf("struct %s field %s: %w", name, f.Name, err)
			}
			r.Align = max(r.Align, ft.Align)
			r.Fields = append(r.Fields, Field{Name: f.Name, Offset: f.ByteOffset, Type: ft})
		}
		return r, nil
	}
	return nil, fmt.Errorf("DWARF type %T %q: %w", t, name, ErrUnsupported)
}

// named converts the type a typedef or qualifier refers to, giving the
// result the typedef's name. The result is a copy when the underlying type
// has a name of its own, so that shared parts keep theirs.
func (c *dwarfConv) named(under godwarf.Type, name string, depth int) (*Type, error) {
	r, err := c.conv(under, depth+1)
	if err != nil || name == "" || r.Name == name {
		return r, err
	}
	cp := *r
	cp.Name = name
	return &cp, nil
}

// zeroSizedLen returns the length of an array of zero-sized elements from
// the name Go gives its DWARF type ("[2]struct {}"), or 0.
//
// godwarf, like debug/dwarf, follows a C convention: a struct field that
// takes no space and is an array is taken for a flexible array member, and
// the Count of its (shared, cached) ArrayType is set to 0. For Go that loses
// the length of arrays like [2]struct{}, which matters: such an array is not
// trivial, so a struct holding it goes to the stack. The name still has it.
func zeroSizedLen(name string) int64 {
	rest, ok := strings.CutPrefix(name, "[")
	if !ok {
		return 0
	}
	digits, _, ok := strings.Cut(rest, "]")
	if !ok {
		return 0
	}
	n, err := strconv.ParseInt(digits, 10, 64)
	if err != nil || n < 0 {
		return 0
	}
	return n
}
