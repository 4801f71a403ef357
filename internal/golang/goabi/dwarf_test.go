package goabi

import (
	"debug/dwarf"
	"debug/elf"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/go-delve/delve/pkg/dwarf/godwarf"
)

func common(name string, size int64) godwarf.CommonType {
	return godwarf.CommonType{Name: name, ByteSize: size}
}

func basic(name string, size int64) godwarf.BasicType {
	return godwarf.BasicType{CommonType: common(name, size)}
}

func dStruct(name string, size int64, fields ...*godwarf.StructField) *godwarf.StructType {
	return &godwarf.StructType{CommonType: common(name, size), StructName: name, Kind: "struct", Field: fields}
}

func dField(name string, off int64, t godwarf.Type) *godwarf.StructField {
	return &godwarf.StructField{Name: name, ByteOffset: off, Type: t}
}

// describe writes a Type as "Kind size/align name {parts}".
func describe(t *Type, depth int) string {
	if t == nil {
		return "nil"
	}
	if depth > 8 {
		return "..."
	}
	s := fmt.Sprintf("%v %d/%d %s", t.Kind, t.Size, t.Align, t.Name)
	switch t.Kind {
	case Struct:
		var fs []string
		for _, f := range t.Fields {
			fs = append(fs, fmt.Sprintf("%s@%d %s", f.Name, f.Offset, describe(f.Type, depth+1)))
		}
		s += " {" + strings.Join(fs, "; ") + "}"
	case Array:
		s += fmt.Sprintf(" [%d](%s)", t.Len, describe(t.Elem, depth+1))
	}
	return s
}

func TestFromDWARF(t *testing.T) {
	dInt := &godwarf.IntType{BasicType: basic("int", 8)}
	dI8 := &godwarf.IntType{BasicType: basic("int8", 1)}
	dI32 := &godwarf.IntType{BasicType: basic("int32", 4)}
	dU16 := &godwarf.UintType{BasicType: basic("uint16", 2)}
	dF64 := &godwarf.FloatType{BasicType: basic("float64", 8)}
	dEmpty := dStruct("struct {}", 0)

	// A linked list node: cyclic through a pointer, which is fine.
	node := dStruct("main.Node", 16)
	node.Field = []*godwarf.StructField{
		dField("Next", 0, &godwarf.PtrType{CommonType: common("*main.Node", 8), Type: node}),
		dField("V", 8, dInt),
	}
	shared := dStruct("main.P", 16, dField("X", 0, dF64), dField("Y", 8, dF64))

	tests := []struct {
		name string
		in   godwarf.Type
		want string
	}{
		{"int", dInt, "Int 8/8 int"},
		{"uint16", dU16, "Int 2/2 uint16"},
		{"bool", &godwarf.BoolType{BasicType: basic("bool", 1)}, "Int 1/1 bool"},
		{"uint8 char", &godwarf.UcharType{BasicType: basic("uint8", 1)}, "Int 1/1 uint8"},
		{"float32", &godwarf.FloatType{BasicType: basic("float32", 4)}, "Float 4/4 float32"},
		{"complex64", &godwarf.ComplexType{BasicType: basic("complex64", 8)}, "Complex 8/4 complex64"},
		{"complex128", &godwarf.ComplexType{BasicType: basic("complex128", 16)}, "Complex 16/8 complex128"},
		{"pointer", &godwarf.PtrType{CommonType: common("*int", 8), Type: dInt}, "Int 8/8 *int"},
		{"unsafe.Pointer", &godwarf.PtrType{CommonType: common("unsafe.Pointer", 8), Type: &godwarf.VoidType{}}, "Int 8/8 unsafe.Pointer"},
		{"func", &godwarf.FuncType{CommonType: common("func(int)", 8), ParamType: []godwarf.Type{dInt}}, "Int 8/8 func(int)"},
		{"map", &godwarf.MapType{TypedefType: godwarf.TypedefType{CommonType: common("map[int]int", 8)}, KeyType: dInt, ElemType: dInt},
			"Int 8/8 map[int]int"},
		{"chan", &godwarf.ChanType{TypedefType: godwarf.TypedefType{CommonType: common("chan int", 8)}, ElemType: dInt}, "Int 8/8 chan int"},
		{"string", &godwarf.StringType{StructType: *dStruct("string", 16)}, "String 16/8 string"},
		{"slice", &godwarf.SliceType{StructType: *dStruct("[]int", 24), ElemType: dInt}, "Slice 24/8 []int"},
		{"error", &godwarf.InterfaceType{TypedefType: godwarf.TypedefType{CommonType: common("error", 16),
			Type: dStruct("runtime.iface", 16)}}, "Interface 16/8 error"},
		{"typedef chain", &godwarf.TypedefType{CommonType: common("main.ID", 8),
			Type: &godwarf.TypedefType{CommonType: common("main.Base", 8), Type: dInt}}, "Int 8/8 main.ID"},
		{"qualifier", &godwarf.QualType{CommonType: common("", 4), Qual: "const", Type: dI32}, "Int 4/4 int32"},
		{"shape", &godwarf.ParametricType{TypedefType: godwarf.TypedefType{CommonType: common("T", 8), Type: dInt}}, "Int 8/8 T"},
		{"enum", &godwarf.EnumType{CommonType: common("E", 4)}, "Int 4/4 E"},
		{"self through pointer", node, "Struct 16/8 main.Node {Next@0 Int 8/8 *main.Node; V@8 Int 8/8 int}"},
		{"struct alignment", dStruct("main.S", 8, dField("A", 0, dI8), dField("B", 4, dI32)),
			"Struct 8/4 main.S {A@0 Int 1/1 int8; B@4 Int 4/4 int32}"},
		{"empty struct", dEmpty, "Struct 0/1 struct {} {}"},
		{"shared parts", dStruct("main.L", 32, dField("A", 0, shared), dField("B", 16, shared)),
			"Struct 32/8 main.L {A@0 Struct 16/8 main.P {X@0 Float 8/8 float64; Y@8 Float 8/8 float64}; " +
				"B@16 Struct 16/8 main.P {X@0 Float 8/8 float64; Y@8 Float 8/8 float64}}"},
		{"array", &godwarf.ArrayType{CommonType: common("[3]int", 24), Type: dInt, Count: 3, StrideBitSize: 64},
			"Array 24/8 [3]int [3](Int 8/8 int)"},
		{"array of arrays", &godwarf.ArrayType{CommonType: common("[1][2]uint16", 4), Count: 1,
			Type: &godwarf.ArrayType{CommonType: common("[2]uint16", 4), Type: dU16, Count: 2}},
			"Array 4/2 [1][2]uint16 [1](Array 4/2 [2]uint16 [2](Int 2/2 uint16))"},
		// godwarf sets Count to 0 for a zero-width array field; the name
		// keeps the length.
		{"zeroed array of empty structs", &godwarf.ArrayType{CommonType: common("[2]struct {}", 0), Type: dEmpty, Count: 0},
			"Array 0/1 [2]struct {} [2](Struct 0/1 struct {} {})"},
		{"empty array", &godwarf.ArrayType{CommonType: common("[0]int", 0), Type: dInt, Count: 0},
			"Array 0/8 [0]int [0](Int 8/8 int)"},
		{"nameless zeroed array", &godwarf.ArrayType{CommonType: common("", 0), Type: dEmpty, Count: 0},
			"Array 0/1  [0](Struct 0/1 struct {} {})"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			have, err := FromDWARF(tc.in)
			if err != nil {
				t.Fatal(err)
			}
			if s := describe(have, 0); s != tc.want {
				t.Errorf("have %s\nwant %s", s, tc.want)
			}
			// Every converted type is valid input for Assign.
			if _, err := Assign(elf.EM_X86_64, []*Type{have}, []*Type{have}); err != nil {
				t.Errorf("Assign: %v", err)
			}
		})
	}
}

func TestFromDWARFErrors(t *testing.T) {
	dInt := &godwarf.IntType{BasicType: basic("int", 8)}
	byValue := dStruct("main.Loop", 8)
	byValue.Field = []*godwarf.StructField{dField("L", 0, byValue)}
	typedefLoop := &godwarf.TypedefType{CommonType: common("main.T", 8)}
	typedefLoop.Type = typedefLoop
	arrayLoop := &godwarf.ArrayType{CommonType: common("[1]main.A", 8), Count: 1}
	arrayLoop.Type = arrayLoop
	var deep godwarf.Type = dInt
	for range maxDepth + 1 {
		deep = &godwarf.TypedefType{CommonType: common("", 8), Type: deep}
	}
	union := dStruct("U", 8, dField("A", 0, dInt))
	union.Kind = "union"
	incomplete := dStruct("I", 8)
	incomplete.Incomplete = true
	bits := dStruct("B", 8, &godwarf.StructField{Name: "A", Type: dInt, BitSize: 3})

	tests := []struct {
		name string
		in   godwarf.Type
		want error
	}{
		{"nil", nil, ErrInvalidType},
		{"typed nil", (*godwarf.IntType)(nil), ErrInvalidType},
		{"typed nil inside", &godwarf.PtrType{CommonType: common("*T", 8)}, nil}, // pointers are not followed
		{"nil struct field", dStruct("S", 8, nil), ErrInvalidType},
		{"nil field type", dStruct("S", 8, dField("A", 0, nil)), ErrInvalidType},
		{"nil typedef", &godwarf.TypedefType{CommonType: common("T", 8)}, ErrInvalidType},
		{"struct contains itself", byValue, ErrInvalidType},
		{"typedef of itself", typedefLoop, ErrInvalidType},
		{"array of itself", arrayLoop, ErrInvalidType},
		{"too deep", deep, ErrInvalidType},
		{"unknown length", &godwarf.ArrayType{CommonType: common("[]int", 0), Type: dInt, Count: -1}, ErrInvalidType},
		{"odd stride", &godwarf.ArrayType{CommonType: common("[2]int", 16), Type: dInt, Count: 2, StrideBitSize: 3}, ErrUnsupported},
		{"union", union, ErrUnsupported},
		{"incomplete", incomplete, ErrUnsupported},
		{"bit field", bits, ErrUnsupported},
		{"void", &godwarf.VoidType{}, ErrUnsupported},
		{"dotdotdot", &godwarf.DotDotDotType{}, ErrUnsupported},
		{"unspecified", &godwarf.UnspecifiedType{BasicType: basic("x", 0)}, ErrUnsupported},
		{"unsupported tag", &godwarf.UnsupportedType{CommonType: common("x", 0), Tag: dwarf.TagRestrictType}, ErrUnsupported},
		{"in field", dStruct("S", 8, dField("V", 0, &godwarf.VoidType{})), ErrUnsupported},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			have, err := FromDWARF(tc.in)
			if tc.want == nil {
				if err != nil {
					t.Errorf("have %v, want no error", err)
				}
				return
			}
			if !errors.Is(err, tc.want) || have != nil {
				t.Errorf("have %v, %v, want error wrapping %v", have, err, tc.want)
			}
		})
	}
}
