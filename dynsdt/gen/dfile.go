package gen

// Parsing DTrace provider (.d) files.
//
// A provider file declares probes by their C prototypes:
//
//	provider myapp {
//		probe request__start(const char *path, int n);
//		probe request__done(int);
//	};
//	#pragma D attributes Evolving/Evolving/Common provider myapp provider
//
// ParseD accepts the subset that Python (Include/pydtrace.d), PostgreSQL
// (src/backend/utils/probes.d) and Node (src/node_provider.d, without its
// translators) use: any number of providers, probes with optional parameter
// names, "(void)", Node's translated argument lists after ':' (ignored),
// comments, and the preprocessor lines described in dfile_lex.go. It
// rejects translator, inline and typedef declarations, which describe the
// D side of a probe and have no meaning for a USDT note, with an error that
// says so. Each C type becomes an ArgType by its size and signedness on an
// LP64 target (see argType); char pointers become String, any other
// pointer Pointer.

import (
	"fmt"
	"io"
	"strings"

	"github.com/usdtkit/usdtkit/dynsdt"
)

// ParseError is a syntax or type error in a .d file, at a 1-based line and
// byte column.
type ParseError struct {
	File string
	Line int
	Col  int
	Msg  string
}

func (e *ParseError) Error() string {
	file := e.File
	if file == "" {
		file = "<input>"
	}
	return fmt.Sprintf("%s:%d:%d: %s", file, e.Line, e.Col, e.Msg)
}

// ParseD reads a DTrace provider file and returns its providers in file
// order; filename is used only in errors. Every returned spec passes
// Validate. All errors are *ParseError, except those of reading r, which
// are wrapped. A file without any provider is an error.
func ParseD(r io.Reader, filename string) ([]dynsdt.ProviderSpec, error) {
	src, err := io.ReadAll(io.LimitReader(r, maxDSize+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", filename, err)
	}
	if len(src) > maxDSize {
		return nil, &ParseError{File: filename, Line: 1, Col: 1, Msg: fmt.Sprintf("file larger than %d bytes", maxDSize)}
	}
	raw, err := dlex(filename, src)
	if err != nil {
		return nil, err
	}
	toks, err := dpreprocess(filename, raw)
	if err != nil {
		return nil, err
	}
	p := &dparser{file: filename, toks: toks}
	provs, err := p.file_()
	if err != nil {
		return nil, err
	}
	return provs, nil
}

type dparser struct {
	file string
	toks []dtoken // ends with tokEOF
	pos  int
}

func (p *dparser) peek() dtoken { return p.toks[p.pos] }

func (p *dparser) next() dtoken {
	t := p.toks[p.pos]
	if t.kind != tokEOF {
		p.pos++
	}
	return t
}

func (p *dparser) errorf(t dtoken, format string, args ...any) error {
	return &ParseError{File: p.file, Line: t.line, Col: t.col, Msg: fmt.Sprintf(format, args...)}
}

func ddescribe(t dtoken) string {
	if t.kind == tokEOF {
		return "end of file"
	}
	return fmt.Sprintf("%q", t.text)
}

// expect consumes the punctuation s.
func (p *dparser) expect(s, context string) (dtoken, error) {
	t := p.next()
	if t.kind != tokPunct || t.text != s {
		return t, p.errorf(t, "expected '%s' %s, found %s", s, context, ddescribe(t))
	}
	return t, nil
}

func (p *dparser) accept(s string) bool {
	if t := p.peek(); t.kind == tokPunct && t.text == s {
		p.pos++
		return true
	}
	return false
}

func (p *dparser) file_() ([]dynsdt.ProviderSpec, error) {
	var provs []dynsdt.ProviderSpec
	where := make(map[string]dtoken)
	for {
		t := p.peek()
		switch {
		case t.kind == tokEOF:
			if len(provs) == 0 {
				return nil, p.errorf(t, "no provider declared")
			}
			return provs, nil
		case t.kind == tokPunct && t.text == ";":
			p.next()
		case t.kind == tokIdent && t.text == "provider":
			prov, err := p.provider()
			if err != nil {
				return nil, err
			}
			if first, dup := where[prov.Name]; dup {
				return nil, p.errorf(t, "provider %s declared twice (first at line %d)", prov.Name, first.line)
			}
			where[prov.Name] = t
			if err := prov.Validate(); err != nil {
				// provider() checks what Validate does; this is a backstop.
				return nil, p.errorf(t, "%v", err)
			}
			provs = append(provs, prov)
		case t.kind == tokIdent && (t.text == "translator" || t.text == "inline" || t.text == "typedef"):
			return nil, p.errorf(t, "%s declarations are not supported: they describe D types, which USDT probes lack; keep only the provider (name types with #define)", t.text)
		default:
			return nil, p.errorf(t, "expected provider declaration, found %s", ddescribe(t))
		}
	}
}

func (p *dparser) provider() (dynsdt.ProviderSpec, error) {
	p.next() // "provider"
	name := p.next()
	if name.kind != tokIdent {
		return dynsdt.ProviderSpec{}, p.errorf(name, "expected provider name, found %s", ddescribe(name))
	}
	if _, err := p.expect("{", "after provider name"); err != nil {
		return dynsdt.ProviderSpec{}, err
	}
	prov := dynsdt.ProviderSpec{Name: name.text}
	where := make(map[string]dtoken)
	for !p.accept("}") {
		t := p.next()
		switch {
		case t.kind == tokPunct && t.text == ";":
			continue
		case t.kind == tokIdent && t.text == "probe":
		default:
			return dynsdt.ProviderSpec{}, p.errorf(t, "expected probe declaration or '}' in provider %s, found %s", prov.Name, ddescribe(t))
		}
		pname := p.next()
		if pname.kind != tokIdent {
			return dynsdt.ProviderSpec{}, p.errorf(pname, "expected probe name, found %s", ddescribe(pname))
		}
		if first, dup := where[pname.text]; dup {
			return dynsdt.ProviderSpec{}, p.errorf(pname, "probe %s declared twice in provider %s (first at line %d)", pname.text, prov.Name, first.line)
		}
		where[pname.text] = pname
		args, err := p.params(pname.text)
		if err != nil {
			return dynsdt.ProviderSpec{}, err
		}
		if len(args) > dynsdt.MaxArgs {
			return dynsdt.ProviderSpec{}, p.errorf(pname, "probe %s has %d arguments, at most %d", pname.text, len(args), dynsdt.MaxArgs)
		}
		// Node writes the D view of the arguments after a colon:
		// "probe x(conn_t *c) : (node_connection_t *c);". It only
		// matters to translators, which USDT has not.
		if p.accept(":") {
			if err := p.skipParens(); err != nil {
				return dynsdt.ProviderSpec{}, err
			}
		}
		if _, err := p.expect(";", "after probe "+pname.text); err != nil {
			return dynsdt.ProviderSpec{}, err
		}
		prov.Probes = append(prov.Probes, dynsdt.ProbeSpec{Name: pname.text, Args: args})
	}
	// dtrace requires "};"; we accept a missing ';' as systemtap's dtrace does.
	p.accept(";")
	return prov, nil
}

func (p *dparser) skipParens() error {
	open, err := p.expect("(", "before translated arguments")
	if err != nil {
		return err
	}
	for depth := 1; depth > 0; {
		t := p.next()
		switch {
		case t.kind == tokEOF:
			return p.errorf(open, "'(' not closed")
		case t.kind == tokPunct && t.text == "(":
			depth++
		case t.kind == tokPunct && t.text == ")":
			depth--
		}
	}
	return nil
}

// params parses "(T1 [name], T2 [name], ...)", "()" or "(void)".
func (p *dparser) params(probe string) ([]dynsdt.ArgType, error) {
	if _, err := p.expect("(", "after probe name "+probe); err != nil {
		return nil, err
	}
	if p.accept(")") {
		return nil, nil
	}
	if t, after := p.peek(), p.toks[min(p.pos+1, len(p.toks)-1)]; t.kind == tokIdent && t.text == "void" && after.kind == tokPunct && after.text == ")" {
		p.pos += 2
		return nil, nil
	}
	var args []dynsdt.ArgType
	for {
		a, err := p.param(probe, len(args))
		if err != nil {
			return nil, err
		}
		args = append(args, a)
		if p.accept(")") {
			return args, nil
		}
		if _, err := p.expect(",", "or ')' between arguments of probe "+probe); err != nil {
			return nil, err
		}
	}
}

// cType collects the declaration specifiers of one parameter.
type cType struct {
	first                               dtoken
	signed, unsigned, short, long, char int
	int_, bool_, void, float            int
	named                               string // a typedef-like name: uint32_t, string
	tag                                 string // "struct foo", "enum bar"
	words                               []string
	pointers                            int
}

func (c *cType) String() string {
	s := strings.Join(c.words, " ")
	if c.pointers > 0 {
		s += " " + strings.Repeat("*", c.pointers)
	}
	return s
}

// counter returns the count of the type keyword word, or nil.
func (c *cType) counter(word string) *int {
	switch word {
	case "signed":
		return &c.signed
	case "unsigned":
		return &c.unsigned
	case "short":
		return &c.short
	case "long":
		return &c.long
	case "char":
		return &c.char
	case "int":
		return &c.int_
	case "bool", "_Bool":
		return &c.bool_
	case "void":
		return &c.void
	case "float", "double":
		return &c.float
	}
	return nil
}

// hasBase reports whether a word that names a complete type has been seen,
// after which an identifier is the parameter's name.
func (c *cType) hasBase() bool {
	return c.signed+c.unsigned+c.short+c.long+c.char+c.int_+c.bool_+c.void+c.float > 0 || c.named != "" || c.tag != ""
}

func (p *dparser) param(probe string, index int) (dynsdt.ArgType, error) {
	c := cType{first: p.peek()}
specifiers:
	for {
		t := p.peek()
		if t.kind != tokIdent {
			break
		}
		word := t.text
		counter := c.counter(word)
		switch {
		case word == "const" || word == "volatile" || word == "restrict":
		case counter != nil:
			*counter++
		case word == "struct" || word == "union" || word == "enum":
			p.next()
			tag := p.peek()
			if tag.kind != tokIdent {
				return 0, p.errorf(tag, "expected %s tag, found %s", word, ddescribe(tag))
			}
			if c.hasBase() {
				return 0, p.errorf(t, "%s after another type in argument %d of probe %s", word, index, probe)
			}
			c.tag = word + " " + tag.text
			word = c.tag
		case word == "translator" || word == "inline" || word == "typedef" || word == "provider" || word == "probe":
			return 0, p.errorf(t, "unexpected %q in argument %d of probe %s", word, index, probe)
		case !c.hasBase():
			c.named = word
		default:
			// The parameter's name, as in "unsigned n"; a name after
			// pointers ("char *path") is taken below.
			break specifiers
		}
		c.words = append(c.words, word)
		p.next()
	}
	for {
		t := p.peek()
		switch {
		case t.kind == tokPunct && t.text == "*":
			if !c.hasBase() {
				return 0, p.errorf(t, "'*' without a type in argument %d of probe %s", index, probe)
			}
			c.pointers++
		case t.kind == tokIdent && (t.text == "const" || t.text == "volatile" || t.text == "restrict"):
		default:
			if !c.hasBase() {
				return 0, p.errorf(t, "expected type of argument %d of probe %s, found %s", index, probe, ddescribe(t))
			}
			if t.kind == tokIdent { // the parameter name
				p.next()
			}
			if n := p.peek(); n.kind == tokPunct && (n.text == "[" || n.text == "(") {
				return 0, p.errorf(n, "array and function arguments are not supported (argument %d of probe %s); pass a pointer", index, probe)
			}
			a, err := argType(&c)
			if err != nil {
				return 0, p.errorf(c.first, "argument %d of probe %s: %s", index, probe, err)
			}
			return a, nil
		}
		p.next()
	}
}

// namedTypes are the typedef names of <stdint.h>, <stddef.h> and D that
// have a fixed meaning on LP64 targets.
var namedTypes = map[string]dynsdt.ArgType{
	"int8_t": dynsdt.Int8, "int16_t": dynsdt.Int16, "int32_t": dynsdt.Int32, "int64_t": dynsdt.Int64,
	"uint8_t": dynsdt.Uint8, "uint16_t": dynsdt.Uint16, "uint32_t": dynsdt.Uint32, "uint64_t": dynsdt.Uint64,
	"ssize_t": dynsdt.Int64, "intptr_t": dynsdt.Int64, "size_t": dynsdt.Uint64, "uintptr_t": dynsdt.Uint64,
	"string": dynsdt.String, // D's string: a char * in C
}

// argType maps a C type on an LP64 target (x86-64, arm64: long and
// pointers 8 bytes) to an ArgType. char is signed, as on x86-64 and as
// DTrace's own type model has it.
func argType(c *cType) (dynsdt.ArgType, error) {
	// others reports whether words other than the allowed keywords
	// (counts of c) were given; a named type or tag is never allowed with
	// keywords.
	others := func(allowed ...int) bool {
		sum := c.signed + c.unsigned + c.short + c.long + c.char + c.int_ + c.bool_ + c.void + c.float
		for _, a := range allowed {
			sum -= a
		}
		return sum > 0 || len(allowed) > 0 && (c.named != "" || c.tag != "")
	}
	bad := fmt.Errorf("%q is not a C type we know", c.String())
	switch {
	case c.named != "":
		if others() || c.tag != "" {
			return 0, bad
		}
		if c.pointers > 0 {
			return dynsdt.Pointer, nil
		}
		if a, ok := namedTypes[c.named]; ok {
			return a, nil
		}
		return 0, fmt.Errorf("unknown type %q (use a C integer or <stdint.h> type, a pointer, or #define it)", c.named)
	case c.tag != "":
		if others() || c.named != "" {
			return 0, bad
		}
		if c.pointers > 0 {
			return dynsdt.Pointer, nil
		}
		if strings.HasPrefix(c.tag, "enum ") {
			return dynsdt.Int32, nil
		}
		return 0, fmt.Errorf("%s passed by value is not supported; pass a pointer", c.tag)
	case c.signed+c.unsigned > 1, c.short > 1, c.long > 2, c.char > 1, c.int_ > 1, c.bool_ > 1, c.void > 1,
		c.short > 0 && c.long > 0:
		return 0, bad
	case c.float > 0:
		if others(c.float, c.long) || c.long > 1 || c.pointers == 0 {
			if c.pointers == 0 {
				return 0, fmt.Errorf("floating-point arguments are not supported (%s)", c.String())
			}
			return 0, bad
		}
		return dynsdt.Pointer, nil
	case c.void > 0:
		if others(c.void) {
			return 0, bad
		}
		if c.pointers == 0 {
			return 0, fmt.Errorf("void argument; write \"()\" or \"(void)\" for a probe without arguments")
		}
		return dynsdt.Pointer, nil
	case c.bool_ > 0:
		if others(c.bool_) {
			return 0, bad
		}
		if c.pointers > 0 {
			return dynsdt.Pointer, nil
		}
		return dynsdt.Bool, nil
	case c.char > 0:
		if others(c.char, c.signed, c.unsigned) {
			return 0, bad
		}
		switch {
		case c.pointers == 1 && c.signed+c.unsigned == 0:
			return dynsdt.String, nil
		case c.pointers > 0:
			return dynsdt.Pointer, nil
		case c.unsigned > 0:
			return dynsdt.Uint8, nil
		}
		return dynsdt.Int8, nil
	}
	// Some of signed, unsigned, short, long, int: an integer.
	if c.pointers > 0 {
		return dynsdt.Pointer, nil
	}
	u := c.unsigned > 0
	switch {
	case c.short > 0:
		return pickArgType(u, dynsdt.Uint16, dynsdt.Int16), nil
	case c.long > 0:
		return pickArgType(u, dynsdt.Uint64, dynsdt.Int64), nil
	}
	return pickArgType(u, dynsdt.Uint32, dynsdt.Int32), nil
}

func pickArgType(cond bool, yes, no dynsdt.ArgType) dynsdt.ArgType {
	if cond {
		return yes
	}
	return no
}
