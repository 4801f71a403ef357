package goabi

import (
	"debug/elf"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/usdtkit/usdtkit/internal/bpf/argread"
)

// Types of the tests, laid out as the Go spec's "Memory layout" says.
var (
	tBool    = &Type{Kind: Int, Size: 1, Align: 1, Name: "bool"}
	tU8      = &Type{Kind: Int, Size: 1, Align: 1, Name: "uint8"}
	tI16     = &Type{Kind: Int, Size: 2, Align: 2, Name: "int16"}
	tI32     = &Type{Kind: Int, Size: 4, Align: 4, Name: "int32"}
	tInt     = &Type{Kind: Int, Size: 8, Align: 8, Name: "int"}
	tPtr     = &Type{Kind: Int, Size: 8, Align: 8, Name: "*int"}
	tF32     = &Type{Kind: Float, Size: 4, Align: 4, Name: "float32"}
	tF64     = &Type{Kind: Float, Size: 8, Align: 8, Name: "float64"}
	tC64     = &Type{Kind: Complex, Size: 8, Align: 4, Name: "complex64"}
	tC128    = &Type{Kind: Complex, Size: 16, Align: 8, Name: "complex128"}
	tString  = &Type{Kind: String, Size: 16, Align: 8, Name: "string"}
	tSlice   = &Type{Kind: Slice, Size: 24, Align: 8, Name: "[]byte"}
	tIface   = &Type{Kind: Interface, Size: 16, Align: 8, Name: "error"}
	tEmpty   = &Type{Kind: Struct, Size: 0, Align: 1, Name: "struct{}"}
	tPoint   = structOf("Point", "X", tF64, "Y", tF64)
	tUintptr = &Type{Kind: Int, Size: 8, Align: 8, Name: "uintptr"}
)

// structOf lays out a struct of (name, type) pairs following the sequence
// rule of abi-internal.md, including the padding byte after a final
// zero-sized field.
func structOf(name string, nameTypes ...any) *Type {
	t := &Type{Kind: Struct, Align: 1, Name: name}
	off := int64(0)
	for i := 0; i < len(nameTypes); i += 2 {
		ft := nameTypes[i+1].(*Type)
		off = alignUp(off, ft.Align)
		t.Fields = append(t.Fields, Field{Name: nameTypes[i].(string), Offset: off, Type: ft})
		off += ft.Size
		t.Align = max(t.Align, ft.Align)
	}
	if n := len(t.Fields); n > 0 && t.Fields[n-1].Type.Size == 0 && off > 0 {
		off++
	}
	t.Size = alignUp(off, t.Align)
	return t
}

func arrayOf(n int64, elem *Type) *Type {
	return &Type{Kind: Array, Size: n * elem.Size, Align: elem.Align, Elem: elem, Len: n,
		Name: fmt.Sprintf("[%d]%s", n, elem)}
}

func repeat(n int, t *Type) []*Type {
	return slices.Repeat([]*Type{t}, n)
}

func join(ts ...[]*Type) []*Type {
	return slices.Concat(ts...)
}

// format writes an assignment as "stack+16" or as its pieces, each
// "path=reg", followed by ":size" when the piece is not 8 bytes and by
// "@offset" when its offset in the value is not 0.
func format(m elf.Machine, a Assignment) string {
	if a.Stack {
		if len(a.Pieces) != 0 {
			return "stack with pieces!"
		}
		return fmt.Sprintf("stack+%d", a.StackOffset)
	}
	var b strings.Builder
	for i, p := range a.Pieces {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(p.Path + "=" + p.Reg.Name(m))
		if p.Size != 8 {
			fmt.Fprintf(&b, ":%d", p.Size)
		}
		if p.Offset != 0 {
			fmt.Fprintf(&b, "@%d", p.Offset)
		}
	}
	return b.String()
}

func formatAll(m elf.Machine, as []Assignment) []string {
	out := make([]string, len(as))
	for i, a := range as {
		out[i] = format(m, a)
	}
	return out
}

func numbered(prefix string, from, to int) []string {
	var out []string
	for i := from; i < to; i++ {
		out = append(out, fmt.Sprintf("%s%d", prefix, i))
	}
	return out
}

var assignTests = []struct {
	name            string
	m               elf.Machine
	params, results []*Type
	wantParams      []string
	wantResults     []string
	wantResultsOff  int64
	wantStackSize   int64
}{
	{
		// abi-internal.md "Example": func f(a1 uint8, a2 [2]uintptr,
		// a3 uint8) (r1 struct { x uintptr; y [2]uintptr }, r2 string).
		name:        "spec example",
		m:           elf.EM_X86_64,
		params:      []*Type{tU8, arrayOf(2, tUintptr), tU8},
		results:     []*Type{structOf("", "x", tUintptr, "y", arrayOf(2, tUintptr)), tString},
		wantParams:  []string{"=rax:1", "stack+0", "=rbx:1"},
		wantResults: []string{"stack+16", ".ptr=rax .len=rbx@8"},
		// a2 is 16 bytes; r1 (24 bytes) follows it.
		wantResultsOff: 16, wantStackSize: 40,
	},
	{
		name:   "ints fill amd64",
		m:      elf.EM_X86_64,
		params: join(repeat(9, tInt), []*Type{tInt, tF64, tI32}),
		wantParams: []string{"=rax", "=rbx", "=rcx", "=rdi", "=rsi", "=r8", "=r9", "=r10", "=r11",
			"stack+0", "=xmm0", "stack+8"},
		wantResultsOff: 16, wantStackSize: 16,
	},
	{
		name:           "ints fill arm64",
		m:              elf.EM_AARCH64,
		params:         join(repeat(16, tPtr), []*Type{tBool, tF32}),
		wantParams:     append(numberedEq("", numbered("x", 0, 16)), "stack+0", "=v0:4"),
		wantResultsOff: 8, wantStackSize: 8,
	},
	{
		// A string needs two registers but only r11 is left: the whole
		// string goes to the stack and r11 stays free for the int after it.
		name:           "out of registers mid-value",
		m:              elf.EM_X86_64,
		params:         join(repeat(8, tInt), []*Type{tString, tInt}),
		wantParams:     append(numberedEq("", []string{"rax", "rbx", "rcx", "rdi", "rsi", "r8", "r9", "r10"}), "stack+0", "=r11"),
		wantResultsOff: 16, wantStackSize: 16,
	},
	{
		name: "out of registers mid-struct",
		m:    elf.EM_X86_64,
		params: join(repeat(7, tInt), []*Type{
			structOf("S", "A", tU8, "B", tPoint, "C", tString), // 3 ints: only 2 left
			tI16, tF64,
		}),
		wantParams: append(numberedEq("", []string{"rax", "rbx", "rcx", "rdi", "rsi", "r8", "r9"}),
			"stack+0", "=r10:2", "=xmm0"),
		wantResultsOff: 40, wantStackSize: 40,
	},
	{
		name:   "floats mixed with ints",
		m:      elf.EM_X86_64,
		params: []*Type{tInt, tF64, tF32, tU8, tC128, tC64, tPoint},
		wantParams: []string{"=rax", "=xmm0", "=xmm1:4", "=rbx:1",
			".real=xmm2 .imag=xmm3@8", ".real=xmm4:4 .imag=xmm5:4@4", ".X=xmm6 .Y=xmm7@8"},
	},
	{
		name:   "floats mixed with ints arm64",
		m:      elf.EM_AARCH64,
		params: []*Type{tInt, tF64, tF32, tU8, tC128, tPoint},
		wantParams: []string{"=x0", "=v0", "=v1:4", "=x1:1",
			".real=v2 .imag=v3@8", ".X=v4 .Y=v5@8"},
	},
	{
		name: "out of float registers",
		m:    elf.EM_X86_64,
		// 14 floats leave xmm14: a Point needs two, a float64 after it
		// still gets xmm14 and an int after that rax.
		params: join(repeat(14, tF64), []*Type{tPoint, tF64, tInt, tF32}),
		wantParams: append(numberedEq("", numbered("xmm", 0, 14)),
			"stack+0", "=xmm14", "=rax", "stack+16"),
		wantResultsOff: 24, wantStackSize: 24,
	},
	{
		name: "nested structs and trivial arrays",
		m:    elf.EM_X86_64,
		params: []*Type{structOf("Mixed",
			"A", tU8,
			"P", tPoint,
			"B", arrayOf(1, tI32),
			"Z", arrayOf(0, tInt),
			"S", tString,
			"C", tC64,
		)},
		wantParams: []string{".A=rax:1 .P.X=xmm0@8 .P.Y=xmm1@16 .B[0]=rbx:4@24 .S.ptr=rcx@32 .S.len=rdi@40 " +
			".C.real=xmm2:4@48 .C.imag=xmm3:4@52"},
	},
	{
		name: "arrays",
		m:    elf.EM_X86_64,
		params: []*Type{
			arrayOf(1, tString),
			arrayOf(1, arrayOf(1, tPoint)),
			arrayOf(0, tInt),
			arrayOf(2, tU8),
			structOf("WithArray", "N", tInt, "A", arrayOf(2, tInt)),
			arrayOf(1, arrayOf(2, tU8)),
			tInt,
		},
		wantParams: []string{"[0].ptr=rax [0].len=rbx@8", "[0][0].X=xmm0 [0][0].Y=xmm1@8", "stack+0",
			"stack+0", "stack+8", "stack+32", "=rcx"},
		wantResultsOff: 40, wantStackSize: 40,
	},
	{
		// [2]struct{} is zero-sized but not a trivial array: the compiler
		// (types.CalcArraySize) gives it 255 registers, so a struct with
		// it goes to the stack.
		name:           "zero-sized non-trivial array in a struct",
		m:              elf.EM_X86_64,
		params:         []*Type{structOf("WithEmptyPair", "E", arrayOf(2, tEmpty), "N", tInt), tInt},
		wantParams:     []string{"stack+0", "=rax"},
		wantResultsOff: 8, wantStackSize: 8,
	},
	{
		name: "zero-sized values",
		m:    elf.EM_X86_64,
		params: []*Type{
			arrayOf(3, tU8), tEmpty, arrayOf(0, tInt), arrayOf(3, tU8),
			structOf("", "A", tEmpty, "B", arrayOf(0, tF64)), tInt,
			structOf("", "A", tEmpty, "N", tI32, "Z", tEmpty),
		},
		// The empty struct takes offset 3 without moving it; [0]int and
		// the empty struct with a [0]float64 align the offset to 8.
		wantParams:     []string{"stack+0", "stack+3", "stack+8", "stack+8", "stack+16", "=rax", ".N=rbx:4"},
		wantResultsOff: 16, wantStackSize: 16,
	},
	{
		name:        "strings slices interfaces",
		m:           elf.EM_X86_64,
		params:      []*Type{tString, tSlice, tIface, tBool},
		wantParams:  []string{".ptr=rax .len=rbx@8", ".ptr=rcx .len=rdi@8 .cap=rsi@16", ".tab=r8 .data=r9@8", "=r10:1"},
		results:     []*Type{tIface, tBool},
		wantResults: []string{".tab=rax .data=rbx@8", "=rcx:1"},
	},
	{
		name:        "results start from register 0",
		m:           elf.EM_AARCH64,
		params:      join(repeat(16, tInt), repeat(16, tF64)),
		results:     []*Type{tInt, tF32, tString},
		wantParams:  append(numberedEq("", numbered("x", 0, 16)), numberedEq("", numbered("v", 0, 16))...),
		wantResults: []string{"=x0", "=v0:4", ".ptr=x1 .len=x2@8"},
	},
	{
		name:           "stack results after stack params",
		m:              elf.EM_X86_64,
		params:         []*Type{arrayOf(3, tU8), tInt},
		results:        []*Type{arrayOf(2, tI32), tU8, arrayOf(3, tI16)},
		wantParams:     []string{"stack+0", "=rax"},
		wantResults:    []string{"stack+8", "=rax:1", "stack+16"},
		wantResultsOff: 8, wantStackSize: 24,
	},
	{
		name:        "results fill",
		m:           elf.EM_X86_64,
		params:      []*Type{tString},
		results:     join(repeat(5, tString)),
		wantParams:  []string{".ptr=rax .len=rbx@8"},
		wantResults: []string{".ptr=rax .len=rbx@8", ".ptr=rcx .len=rdi@8", ".ptr=rsi .len=r8@8", ".ptr=r9 .len=r10@8", "stack+0"},
		// The results area starts at 0: there are no stack parameters.
		wantResultsOff: 0, wantStackSize: 16,
	},
	{
		name:       "unnamed fields",
		m:          elf.EM_X86_64,
		params:     []*Type{structOf("", "", tInt, "_", tU8)},
		wantParams: []string{".#0=rax ._=rbx:1@8"},
	},
	{
		name: "no values",
		m:    elf.EM_AARCH64,
	},
}

// numberedEq prefixes each register name with "=" (a whole-value piece).
func numberedEq(path string, regs []string) []string {
	out := make([]string, len(regs))
	for i, r := range regs {
		out[i] = path + "=" + r
	}
	return out
}

func TestAssign(t *testing.T) {
	for _, tc := range assignTests {
		t.Run(tc.name, func(t *testing.T) {
			f, err := Assign(tc.m, tc.params, tc.results)
			if err != nil {
				t.Fatal(err)
			}
			if have := formatAll(tc.m, f.Params); !slices.Equal(have, orEmpty(tc.wantParams)) {
				t.Errorf("params:\nhave %q\nwant %q", have, tc.wantParams)
			}
			if have := formatAll(tc.m, f.Results); !slices.Equal(have, orEmpty(tc.wantResults)) {
				t.Errorf("results:\nhave %q\nwant %q", have, tc.wantResults)
			}
			if f.ResultsOffset != tc.wantResultsOff || f.StackSize != tc.wantStackSize {
				t.Errorf("have ResultsOffset %d, StackSize %d, want %d, %d",
					f.ResultsOffset, f.StackSize, tc.wantResultsOff, tc.wantStackSize)
			}
			for i, a := range slices.Concat(f.Params, f.Results) {
				for _, p := range a.Pieces {
					if name, ok := PtRegsName(tc.m, p.Reg); ok == p.Reg.Float || (ok && name != p.Reg.Name(tc.m)) {
						t.Errorf("value %d piece %s: PtRegsName %q, %v", i, p.Path, name, ok)
					}
				}
			}
		})
	}
}

func orEmpty(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func TestAssignErrors(t *testing.T) {
	self := &Type{Kind: Struct, Size: 8, Align: 8, Name: "Self"}
	self.Fields = []Field{{Name: "S", Type: self}}
	deep := tInt
	for range maxDepth + 1 {
		deep = structOf("", "D", deep)
	}
	tests := []struct {
		name   string
		m      elf.Machine
		params []*Type
		want   error
	}{
		{"machine", elf.EM_386, []*Type{tInt}, ErrUnsupported},
		{"riscv", elf.EM_RISCV, nil, ErrUnsupported},
		{"nil", elf.EM_X86_64, []*Type{nil}, ErrInvalidType},
		{"kind", elf.EM_X86_64, []*Type{{Kind: Kind(99), Size: 8, Align: 8}}, ErrInvalidType},
		{"zero kind", elf.EM_X86_64, []*Type{{Size: 8, Align: 8}}, ErrInvalidType},
		{"int size", elf.EM_X86_64, []*Type{{Kind: Int, Size: 3, Align: 1}}, ErrInvalidType},
		{"int128", elf.EM_X86_64, []*Type{{Kind: Int, Size: 16, Align: 8}}, ErrInvalidType},
		{"float size", elf.EM_X86_64, []*Type{{Kind: Float, Size: 2, Align: 2}}, ErrInvalidType},
		{"string size", elf.EM_X86_64, []*Type{{Kind: String, Size: 8, Align: 8}}, ErrInvalidType},
		{"negative size", elf.EM_X86_64, []*Type{{Kind: Struct, Size: -8, Align: 8}}, ErrInvalidType},
		{"huge size", elf.EM_X86_64, []*Type{{Kind: Struct, Size: 1 << 62, Align: 8}}, ErrInvalidType},
		{"align 0", elf.EM_X86_64, []*Type{{Kind: Int, Size: 8}}, ErrInvalidType},
		{"align 3", elf.EM_X86_64, []*Type{{Kind: Struct, Size: 6, Align: 3}}, ErrInvalidType},
		{"size not multiple of align", elf.EM_X86_64, []*Type{{Kind: Struct, Size: 12, Align: 8}}, ErrInvalidType},
		{"self", elf.EM_X86_64, []*Type{self}, ErrInvalidType},
		{"too deep", elf.EM_X86_64, []*Type{deep}, ErrInvalidType},
		{"field outside", elf.EM_X86_64, []*Type{{Kind: Struct, Size: 8, Align: 8,
			Fields: []Field{{Name: "A", Offset: 8, Type: tInt}}}}, ErrInvalidType},
		{"field overflow", elf.EM_X86_64, []*Type{{Kind: Struct, Size: 8, Align: 8,
			Fields: []Field{{Name: "A", Offset: 1<<63 - 1, Type: tInt}}}}, ErrInvalidType},
		{"fields overlap", elf.EM_X86_64, []*Type{{Kind: Struct, Size: 16, Align: 8,
			Fields: []Field{{Name: "A", Offset: 8, Type: tInt}, {Name: "B", Offset: 0, Type: tInt}}}}, ErrInvalidType},
		{"field misaligned", elf.EM_X86_64, []*Type{{Kind: Struct, Size: 16, Align: 8,
			Fields: []Field{{Name: "A", Offset: 4, Type: tInt}}}}, ErrInvalidType},
		{"nil field", elf.EM_X86_64, []*Type{{Kind: Struct, Size: 8, Align: 8,
			Fields: []Field{{Name: "A"}}}}, ErrInvalidType},
		{"nil elem", elf.EM_X86_64, []*Type{{Kind: Array, Size: 8, Align: 8, Len: 1}}, ErrInvalidType},
		{"array size", elf.EM_X86_64, []*Type{{Kind: Array, Size: 8, Align: 8, Len: 2, Elem: tInt}}, ErrInvalidType},
		{"array negative", elf.EM_X86_64, []*Type{{Kind: Array, Size: 0, Align: 8, Len: -1, Elem: tInt}}, ErrInvalidType},
		{"array overflow", elf.EM_X86_64, []*Type{{Kind: Array, Size: 0, Align: 8, Len: 1 << 61, Elem: tInt}}, ErrInvalidType},
		{"stack overflow", elf.EM_X86_64, repeat(1<<12, arrayOf(1<<49/8, tInt)), ErrInvalidType},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f, err := Assign(tc.m, tc.params, nil)
			if !errors.Is(err, tc.want) || f != nil {
				t.Errorf("have %v, %v, want error wrapping %v", f, err, tc.want)
			}
		})
	}
	// Results are checked as well, and named as results.
	_, err := Assign(elf.EM_X86_64, []*Type{tInt}, []*Type{tInt, {Kind: Int, Size: 5, Align: 1}})
	if !errors.Is(err, ErrInvalidType) || !strings.HasPrefix(err.Error(), "result 1") {
		t.Errorf("have %v, want an invalid-type error about result 1", err)
	}
}

// TestAssignShared checks that types whose parts are shared many times over
// (a DAG with 2^60 paths) are assigned without walking every path: it would
// not finish otherwise.
func TestAssignShared(t *testing.T) {
	zero, word := tEmpty, tInt
	for range 60 {
		zero = structOf("", "A", zero, "B", zero)
	}
	for range 40 {
		word = structOf("", "A", word, "B", word)
	}
	f, err := Assign(elf.EM_X86_64, []*Type{zero, word, structOf("", "Z", zero, "I", tInt)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if have, want := formatAll(elf.EM_X86_64, f.Params), []string{"stack+0", "stack+0", ".I=rax"}; !slices.Equal(have, want) {
		t.Errorf("have %q, want %q", have, want)
	}
}

func TestRegNames(t *testing.T) {
	tests := []struct {
		m            elf.Machine
		ni, nf       int
		ints, floats []string
		g, closure   string
		stackArgs    int64
	}{
		{elf.EM_X86_64, 9, 15,
			[]string{"rax", "rbx", "rcx", "rdi", "rsi", "r8", "r9", "r10", "r11"}, numbered("xmm", 0, 15),
			"r14", "rdx", 8},
		{elf.EM_AARCH64, 16, 16, numbered("x", 0, 16), numbered("v", 0, 16), "x28", "x26", 8},
		{elf.EM_386, 0, 0, []string{}, []string{}, "", "", -1},
	}
	for _, tc := range tests {
		t.Run(tc.m.String(), func(t *testing.T) {
			if have, want := [2]int{NumIntRegs(tc.m), NumFloatRegs(tc.m)}, [2]int{tc.ni, tc.nf}; have != want {
				t.Errorf("registers: have %v, want %v", have, want)
			}
			ints, floats := []string{}, []string{}
			for n := -1; n <= 32; n++ {
				if s := IntRegName(tc.m, n); s != "" {
					ints = append(ints, s)
				}
				if s := FloatRegName(tc.m, n); s != "" {
					floats = append(floats, s)
				}
			}
			if !slices.Equal(ints, tc.ints) || !slices.Equal(floats, tc.floats) {
				t.Errorf("have %q %q, want %q %q", ints, floats, tc.ints, tc.floats)
			}
			if have := [2]string{GRegister(tc.m), ClosureRegister(tc.m)}; have != [2]string{tc.g, tc.closure} {
				t.Errorf("have g, closure %q, want %q, %q", have, tc.g, tc.closure)
			}
			// Every integer register, g and the closure register are
			// readable from the uprobe context under these names.
			if tc.ni > 0 {
				for _, name := range append(ints, tc.g, tc.closure) {
					if _, err := argread.PtRegs(tc.m, name); err != nil {
						t.Errorf("argread.PtRegs(%q): %v", name, err)
					}
				}
			}
			if have := StackArgsOffset(tc.m); have != tc.stackArgs {
				t.Errorf("StackArgsOffset: have %d, want %d", have, tc.stackArgs)
			}
		})
	}
}

func TestKindString(t *testing.T) {
	for _, tc := range []struct {
		k    Kind
		want string
	}{{Int, "Int"}, {Array, "Array"}, {Invalid, "Invalid"}, {Kind(42), "Kind(42)"}} {
		if have := tc.k.String(); have != tc.want {
			t.Errorf("have %q, want %q", have, tc.want)
		}
	}
	if have := (Reg{Float: true, N: 3}).String(); have != "float3" {
		t.Errorf("have %q, want float3", have)
	}
}
