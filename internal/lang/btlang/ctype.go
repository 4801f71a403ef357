package btlang

import (
	"strconv"
	"strings"
)

// Record is a C struct or union defined in the program (struct Foo { int
// x; char c; }), laid out as the x86-64 and arm64 C ABIs lay it out:
// each field at the next offset its alignment allows, bit-fields packed
// into units of their type as GCC packs them, the size rounded up to the
// largest alignment.
type Record struct {
	// Name is the tag ("Foo"), "" for an anonymous record.
	Name   string
	Union  bool
	Fields []Field
	Size   int
	Align  int
	// Defined is false for a record only named (struct Foo *), whose
	// fields are unknown.
	Defined bool
}

// String returns "struct Foo", "union U", or "struct" for an anonymous
// record.
func (r *Record) String() string {
	kw := "struct"
	if r.Union {
		kw = "union"
	}
	if r.Name == "" {
		return kw
	}
	return kw + " " + r.Name
}

// Field returns the field named name, or nil.
func (r *Record) Field(name string) *Field {
	for i := range r.Fields {
		if r.Fields[i].Name == name {
			return &r.Fields[i]
		}
	}
	return nil
}

// Field is one field of a Record: its type as C declares it (integers of
// their own size; an array of char is a KindString of its length), its
// byte offset, and for a bit-field the bits within the unit of
// Type.Size bytes at Offset: BitOff from the least significant, Bits
// wide.
type Field struct {
	Name   string
	Type   Type
	Offset int
	BitOff int
	Bits   int
}

// CSize returns the size of a value of type t in C: an integer's own size,
// 8 for a pointer, an array's elements, a record's size; a string (an
// array of char in a record) is its length. Tuples are laid out as
// bpftrace lays them out: each element at its alignment.
func CSize(t Type) int {
	switch t.Kind {
	case KindInt, KindString:
		return t.Size
	case KindPtr:
		return 8
	case KindArray:
		if t.Elem == nil {
			return 0
		}
		return t.Len * CSize(*t.Elem)
	case KindRecord:
		if t.Record == nil {
			return 0
		}
		return t.Record.Size
	case KindTuple:
		off, align := 0, 1
		for _, e := range t.Elems {
			a := calign(e)
			off = alignUp(off, a) + CSize(e)
			align = max(align, a)
		}
		return alignUp(off, align)
	}
	return 8
}

// calign returns the alignment of type t in C.
func calign(t Type) int {
	switch t.Kind {
	case KindInt:
		return max(t.Size, 1)
	case KindString:
		return 1
	case KindArray:
		if t.Elem == nil {
			return 1
		}
		return calign(*t.Elem)
	case KindRecord:
		if t.Record == nil || t.Record.Align == 0 {
			return 1
		}
		return t.Record.Align
	case KindTuple:
		a := 1
		for _, e := range t.Elems {
			a = max(a, calign(e))
		}
		return a
	}
	return 8
}

func alignUp(n, a int) int {
	if a <= 1 {
		return n
	}
	return (n + a - 1) / a * a
}

// maxCSize bounds the size of a type defined in a program, so that
// arrays of arrays cannot overflow an int.
const maxCSize = 1 << 24

// TypeDef is a type definition at the top of a program: a struct, union
// or enum. Text is the definition in canonical form, which
// Program.String prints back.
type TypeDef struct {
	At   Pos
	Text string
	// Src is the definition as written, with its ";" if it has one.
	Src string
}

// cTypes are the types a program defines, by tag or name, which the
// definitions after them and the probe blocks use.
type cTypes struct {
	records map[string]*Record // "struct Foo", "union U"
	enums   map[string]int64   // enumerators
}

// cIntName returns the integer type a one-word name stands for:
// bpftrace's (int8 … uint64), <stdint.h>'s (int8_t … uint64_t) and the
// kernel's (__s8 … __u64, s8 … u64), bool, size_t and the like. It is a
// function, not a table, so that nothing is built at init.
func cIntName(name string) (Type, bool) {
	switch name {
	case "bool", "_Bool":
		return Type{Kind: KindInt, Size: 1}, true
	case "size_t", "uintptr_t":
		return Type{Kind: KindInt, Size: 8}, true
	case "ssize_t", "intptr_t":
		return Type{Kind: KindInt, Size: 8, Signed: true}, true
	case "pid_t":
		return Type{Kind: KindInt, Size: 4, Signed: true}, true
	}
	bits, signed := "", true
	switch {
	case strings.HasPrefix(name, "uint"):
		bits, signed = strings.TrimSuffix(name[4:], "_t"), false
	case strings.HasPrefix(name, "int"):
		bits = strings.TrimSuffix(name[3:], "_t")
	case strings.HasPrefix(name, "__u"), strings.HasPrefix(name, "__s"):
		bits, signed = name[3:], name[2] == 's'
	case strings.HasPrefix(name, "u"), strings.HasPrefix(name, "s"):
		bits, signed = name[1:], name[0] == 's'
	}
	switch bits {
	case "8", "16", "32", "64":
		n, _ := strconv.Atoi(bits)
		return Type{Kind: KindInt, Size: n / 8, Signed: signed}, true
	}
	return Type{}, false
}

// cKeyword reports whether word is one of C's integer type keywords,
// which combine in any order: unsigned long long int.
func cKeyword(word string) bool {
	switch word {
	case "char", "short", "int", "long", "signed", "unsigned":
		return true
	}
	return false
}

// startsType reports whether t starts a C type name (in a cast or sizeof).
func (p *parser) startsType(t token) bool {
	if t.kind != tIdent {
		return false
	}
	switch t.text {
	case "struct", "union", "enum", "const", "volatile", "void":
		return true
	}
	if cKeyword(t.text) {
		return true
	}
	if _, ok := cIntName(t.text); ok {
		return true
	}
	return false
}

// typeDef parses a definition at the top level: the current token is the
// probe-mode token "struct", "union" or "enum" ("typedef" is refused). It
// reads on in probe mode after the definition and its optional ";".
func (p *parser) typeDef(prog *Program) {
	t := p.tok
	p.lx.off, p.lx.line, p.lx.col = t.off, t.pos.Line, t.pos.Col
	p.next(false)
	def := &TypeDef{At: t.pos}
	if t.text == "typedef" {
		p.failf(t.pos, "typedef is not supported, as in bpftrace 0.17: name the type as struct NAME")
		return
	}
	typ, text := p.baseType(true)
	if typ.Kind == KindRecord && typ.Record.Name == "" {
		p.failf(t.pos, "a %s defined at the top of a program needs a name", t.text)
	}
	def.Text = text
	if p.err != nil {
		return
	}
	prog.Types = append(prog.Types, def)
	end := p.tok.off
	if p.tok.is(";") {
		end++
		p.next(false)
	}
	def.Src = strings.TrimSpace(p.lx.src[t.off:end])
	// Back to the top level: relex the current token in probe mode.
	p.lx.off, p.lx.line, p.lx.col = p.tok.off, p.tok.pos.Line, p.tok.pos.Col
	p.next(true)
}

// baseType parses the type specifier of a declaration or a type name: an
// integer type (bpftrace's int8…uint64, C's names, <stdint.h>'s), struct,
// union or enum with or without a body, void. It
// returns the type and its canonical text. define allows bodies.
func (p *parser) baseType(define bool) (Type, string) {
	for p.tok.kind == tIdent && (p.tok.text == "const" || p.tok.text == "volatile") {
		p.next(false)
	}
	t := p.tok
	if t.kind != tIdent {
		p.failf(t.pos, "expected a type, found %s", t.describe())
		return Type{}, ""
	}
	switch t.text {
	case "struct", "union":
		return p.recordType(define)
	case "enum":
		return p.enumType(define)
	case "void":
		p.next(false)
		return Type{}, "void"
	}
	if cKeyword(t.text) {
		return p.cIntType()
	}
	if it, ok := cIntName(t.text); ok {
		p.next(false)
		return it, it.String()
	}
	p.failf(t.pos, "unknown type %s", t.text)
	return Type{}, ""
}

// cIntType parses C's integer type names made of keywords: unsigned
// char, short int, long long, … (long is 8 bytes, as on x86-64 and
// arm64 Linux). An array of plain char is a string.
func (p *parser) cIntType() (Type, string) {
	at := p.tok.pos
	var n = map[string]int{}
	for p.tok.kind == tIdent && (cKeyword(p.tok.text) || p.tok.text == "const" || p.tok.text == "volatile") {
		n[p.tok.text]++
		p.next(false)
	}
	if n["signed"] > 0 && n["unsigned"] > 0 || n["char"] > 1 || n["short"] > 1 || n["long"] > 2 || n["int"] > 1 ||
		n["char"]+n["short"] > 1 || n["long"] > 0 && (n["char"]+n["short"]) > 0 {
		p.failf(at, "this is not a C integer type")
		return Type{}, ""
	}
	t := Type{Kind: KindInt, Size: 4, Signed: n["unsigned"] == 0}
	switch {
	case n["char"] > 0:
		t.Size = 1
		if n["signed"] == 0 && n["unsigned"] == 0 {
			return t, "char"
		}
	case n["short"] > 0:
		t.Size = 2
	case n["long"] > 0:
		t.Size = 8
	}
	return t, t.String()
}

// recordType parses struct or union, its tag and its body.
func (p *parser) recordType(define bool) (Type, string) {
	kw := p.tok
	union := kw.text == "union"
	p.next(false)
	name := ""
	if p.tok.kind == tIdent {
		name = p.tok.text
		p.next(false)
	}
	key := kw.text + " " + name
	if !p.tok.is("{") {
		if name == "" {
			p.failf(p.tok.pos, "expected a name or \"{\" after %s, found %s", kw.text, p.tok.describe())
			return Type{}, ""
		}
		r := p.types.records[key]
		if r == nil {
			r = &Record{Name: name, Union: union}
			p.types.records[key] = r
		}
		return Type{Kind: KindRecord, Record: r}, key
	}
	if !define {
		p.failf(p.tok.pos, "a type cannot be defined here")
		return Type{}, ""
	}
	r := &Record{Name: name, Union: union}
	if name != "" {
		if old := p.types.records[key]; old != nil {
			if old.Defined {
				p.failf(kw.pos, "%s is defined twice", key)
				return Type{}, ""
			}
			r = old
		}
		p.types.records[key] = r
	}
	p.next(false)
	var text strings.Builder
	text.WriteString(r.String() + " { ")
	bitPos := 0 // bits, for structs
	r.Align = 1
	for p.err == nil && !p.tok.is("}") {
		if p.tok.kind == tEOF {
			p.failf(p.tok.pos, "the definition of %s is not closed with \"}\"", r)
			break
		}
		base, baseText := p.baseType(true)
		for p.err == nil {
			fname, ft, decl := p.declarator(base, baseText, true)
			if fname == "" {
				p.failf(p.tok.pos, "expected a field name, found %s", p.tok.describe())
				break
			}
			if ft.Kind == KindNone {
				p.failf(p.tok.pos, "field %s has no type (void)", fname)
				break
			}
			if ft.Kind == KindRecord && !ft.Record.Defined {
				p.failf(p.tok.pos, "field %s has type %s, which is not defined", fname, ft.Record)
				break
			}
			if r.Field(fname) != nil {
				p.failf(p.tok.pos, "%s has two fields named %s", r, fname)
				break
			}
			f := Field{Name: fname, Type: ft}
			size, align := CSize(ft), calign(ft)
			if p.tok.is(":") {
				p.next(false)
				if p.tok.kind != tInt || ft.Kind != KindInt || p.tok.val == 0 || p.tok.val > uint64(8*ft.Size) {
					p.failf(p.tok.pos, "a bit-field's width must be 1 to the bits of its integer type")
					break
				}
				f.Bits = int(p.tok.val)
				decl += ":" + strconv.Itoa(f.Bits)
				p.next(false)
			}
			unit := 8 * size
			switch {
			case r.Union:
				f.Offset, f.BitOff = 0, 0
				r.Size = max(r.Size, size)
			case f.Bits > 0:
				// GCC: a bit-field that would cross a unit of its type
				// starts the next unit.
				if bitPos%unit+f.Bits > unit {
					bitPos = alignUp(bitPos, unit)
				}
				f.Offset = bitPos / unit * size
				f.BitOff = bitPos - 8*f.Offset
				bitPos += f.Bits
			default:
				bitPos = alignUp(bitPos, 8*align)
				f.Offset = bitPos / 8
				bitPos += 8 * size
			}
			r.Align = max(r.Align, align)
			r.Fields = append(r.Fields, f)
			text.WriteString(decl + "; ")
			if r.Size > maxCSize || bitPos > 8*maxCSize {
				p.failf(p.tok.pos, "%s is larger than %d bytes", r, maxCSize)
				break
			}
			if !p.tok.is(",") {
				break
			}
			p.next(false)
		}
		if p.tok.is(";") {
			p.next(false)
		} else if !p.tok.is("}") {
			p.failf(p.tok.pos, "expected \";\" or \"}\" after a field, found %s", p.tok.describe())
		}
	}
	if !r.Union {
		r.Size = (bitPos + 7) / 8
	}
	r.Size = alignUp(r.Size, r.Align)
	r.Defined = true
	text.WriteString("}")
	p.next(false)
	return Type{Kind: KindRecord, Record: r}, text.String()
}

// enumType parses enum, its tag and its enumerators, which become
// integer constants. An enum is a 4-byte unsigned integer.
func (p *parser) enumType(define bool) (Type, string) {
	p.next(false)
	name := ""
	if p.tok.kind == tIdent {
		name = p.tok.text
		p.next(false)
	}
	t := Type{Kind: KindInt, Size: 4}
	if !p.tok.is("{") {
		if name == "" {
			p.failf(p.tok.pos, "expected a name or \"{\" after enum, found %s", p.tok.describe())
		}
		return t, "enum " + name
	}
	if !define {
		p.failf(p.tok.pos, "a type cannot be defined here")
		return t, ""
	}
	p.next(false)
	var b strings.Builder
	b.WriteString(strings.TrimSpace("enum "+name) + " { ")
	next := int64(0)
	for p.err == nil && !p.tok.is("}") {
		if p.tok.kind != tIdent {
			p.failf(p.tok.pos, "expected an enumerator, found %s", p.tok.describe())
			break
		}
		id := p.tok
		p.next(false)
		if p.tok.is("=") {
			p.next(false)
			neg := p.tok.is("-")
			if neg {
				p.next(false)
			}
			if p.tok.kind != tInt {
				p.failf(p.tok.pos, "an enumerator's value must be an integer literal")
				break
			}
			next = int64(p.tok.val)
			if neg {
				next = -next
			}
			p.next(false)
		}
		if _, dup := p.types.enums[id.text]; dup {
			p.failf(id.pos, "enumerator %s is defined twice", id.text)
			break
		}
		p.types.enums[id.text] = next
		b.WriteString(id.text + " = " + strconv.FormatInt(next, 10) + ", ")
		next++
		if !p.tok.is(",") {
			break
		}
		p.next(false)
	}
	b.WriteString("}")
	p.expect("}", false)
	return t, b.String()
}

// declarator parses what follows a type specifier in a declaration:
// pointers, the name (optional unless named), array lengths. It returns
// the name, the declared type and the declaration's canonical text.
func (p *parser) declarator(base Type, baseText string, named bool) (string, Type, string) {
	stars := 0
	for p.tok.is("*") {
		stars++
		p.next(false)
		for p.tok.kind == tIdent && (p.tok.text == "const" || p.tok.text == "volatile" || p.tok.text == "restrict") {
			p.next(false)
		}
	}
	t := base
	for range stars {
		t = ptrTo(t)
	}
	name := ""
	if p.tok.kind == tIdent && !p.startsType(p.tok) {
		name = p.tok.text
		p.next(false)
	} else if named {
		return "", Type{}, ""
	}
	var dims []int
	for p.tok.is("[") {
		p.next(false)
		if p.tok.kind != tInt || p.tok.val > maxCSize {
			p.failf(p.tok.pos, "an array's length must be an integer literal up to %d", maxCSize)
			return "", Type{}, ""
		}
		dims = append(dims, int(p.tok.val))
		p.next(false)
		p.expect("]", false)
	}
	text := baseText + " " + strings.Repeat("*", stars) + name
	for i := len(dims) - 1; i >= 0; i-- {
		if i == len(dims)-1 && stars == 0 && baseText == "char" {
			// char name[N] is a string of N bytes.
			t = Type{Kind: KindString, Size: dims[i]}
		} else {
			elem := t
			t = Type{Kind: KindArray, Elem: &elem, Len: dims[i]}
		}
		if CSize(t) > maxCSize {
			p.failf(p.tok.pos, "%s is larger than %d bytes", name, maxCSize)
			return "", Type{}, ""
		}
	}
	for _, d := range dims {
		text += "[" + strconv.Itoa(d) + "]"
	}
	return name, t, text
}

// ptrTo returns the type of a pointer to t (void * for KindNone).
func ptrTo(t Type) Type {
	if t.Kind == KindNone {
		return Type{Kind: KindPtr, Size: 8}
	}
	e := t
	return Type{Kind: KindPtr, Size: 8, Elem: &e}
}

// typeName parses a type name in a cast or sizeof: a type specifier and
// pointers, as in (struct Foo **) or sizeof(uint8).
func (p *parser) typeName() Type {
	base, _ := p.baseType(false)
	t := base
	for p.tok.is("*") {
		t = ptrTo(t)
		p.next(false)
	}
	return t
}
