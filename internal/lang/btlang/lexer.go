package btlang

import (
	"strconv"
	"strings"
)

type tokKind uint8

const (
	tEOF     tokKind = iota
	tIdent           // name, builtin, function or keyword
	tInt             // integer literal; val holds the value
	tString          // string literal; text holds the decoded bytes
	tMap             // @ or @name; text holds it with the @
	tVar             // $name; text holds it with the $
	tParam           // $N or $#, a positional parameter; text holds it
	tProbe           // a probe spec at the top level; text holds it raw
	tEndPred         // the "/" that closes a predicate (followed by "{")
	tPunct           // operator or punctuation; text holds it
)

type token struct {
	kind tokKind
	pos  Pos
	off  int
	text string
	val  uint64
}

func (t token) is(punct string) bool { return t.kind == tPunct && t.text == punct }

func (t token) describe() string {
	switch t.kind {
	case tEOF:
		return "end of input"
	case tInt:
		return "integer " + strconv.FormatUint(t.val, 10)
	case tString:
		return "string " + strconv.Quote(t.text)
	case tEndPred:
		return `"/"`
	}
	return strconv.Quote(t.text)
}

// lexer turns source into tokens on demand. In probe mode (the top level of a
// program) it reads probe specs, which contain characters ("/", "-", "*",
// ":") that are operators inside actions, as bpftrace's lexer does.
type lexer struct {
	file string
	src  string
	off  int
	line int
	col  int
}

// puncts lists operators longest first so that the first prefix match wins.
var puncts = []string{
	"<<=", ">>=",
	"->", "++", "--", "<<", ">>", "<=", ">=", "==", "!=", "&&", "||",
	"+=", "-=", "*=", "/=", "%=", "&=", "^=", "|=",
	"(", ")", "{", "}", "[", "]", ",", ";", ":", "?", ".",
	"+", "-", "*", "/", "%", "<", ">", "&", "^", "|", "!", "~", "=",
}

func (l *lexer) pos() Pos { return Pos{File: l.file, Line: l.line, Col: l.col} }

func (l *lexer) advance(n int) {
	for i := 0; i < n && l.off < len(l.src); i++ {
		if l.src[l.off] == '\n' {
			l.line++
			l.col = 1
		} else {
			l.col++
		}
		l.off++
	}
}

// skipSpace skips white space and comments; an unterminated block comment
// is an error. A "#!" line at the start of the source is a comment: the
// interpreter line of an executable .bt file, as bpftrace reads it.
func (l *lexer) skipSpace() *Error {
	for l.off < len(l.src) {
		c := l.src[l.off]
		switch {
		case l.off == 0 && strings.HasPrefix(l.src, "#!"):
			for l.off < len(l.src) && l.src[l.off] != '\n' {
				l.advance(1)
			}
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v':
			l.advance(1)
		case strings.HasPrefix(l.src[l.off:], "//"):
			for l.off < len(l.src) && l.src[l.off] != '\n' {
				l.advance(1)
			}
		case strings.HasPrefix(l.src[l.off:], "/*"):
			start := l.pos()
			end := strings.Index(l.src[l.off+2:], "*/")
			if end < 0 {
				return errorf(start, "the comment is not closed with */")
			}
			l.advance(end + 4)
		default:
			return nil
		}
	}
	return nil
}

func isLetter(c byte) bool { return c == '_' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }
func isDigit(c byte) bool  { return '0' <= c && c <= '9' }

// isProbeChar reports whether c may appear unquoted in a probe spec: the
// characters bpftrace's lexer accepts there, plus the glob "?".
func isProbeChar(c byte) bool {
	return isLetter(c) || isDigit(c) || strings.IndexByte("-./*#[]+?:$", c) >= 0
}

// next returns the next token. probeMode selects the top-level lexer.
func (l *lexer) next(probeMode bool) (token, *Error) {
	if err := l.skipSpace(); err != nil {
		return token{}, err
	}
	t := token{pos: l.pos(), off: l.off}
	if l.off >= len(l.src) {
		t.kind = tEOF
		return t, nil
	}
	c := l.src[l.off]
	if probeMode && (isProbeChar(c) || c == '"') && c != '/' {
		return l.probe(t)
	}
	switch {
	case isLetter(c):
		start := l.off
		for l.off < len(l.src) && (isLetter(l.src[l.off]) || isDigit(l.src[l.off])) {
			l.advance(1)
		}
		t.kind, t.text = tIdent, l.src[start:l.off]
		return t, nil
	case isDigit(c):
		return l.number(t)
	case c == '"':
		return l.string(t)
	case c == '@' || c == '$':
		start := l.off
		l.advance(1)
		for l.off < len(l.src) && (isLetter(l.src[l.off]) || isDigit(l.src[l.off])) {
			l.advance(1)
		}
		t.text = l.src[start:l.off]
		if c == '@' {
			t.kind = tMap
			if len(t.text) > 1 && isDigit(t.text[1]) {
				return t, errorf(t.pos, "map name %s must start with a letter or underscore", t.text)
			}
			return t, nil
		}
		t.kind = tVar
		switch {
		case len(t.text) == 1:
			if strings.HasPrefix(l.src[l.off:], "#") {
				// $#, the number of positional parameters.
				l.advance(1)
				t.kind, t.text = tParam, "$#"
				return t, nil
			}
			return t, errorf(t.pos, "$ must be followed by a variable name")
		case isDigit(t.text[1]):
			for _, c := range t.text[1:] {
				if !isDigit(byte(c)) {
					return t, errorf(t.pos, "%s is neither a variable name nor a positional parameter ($1, $2…)", t.text)
				}
			}
			t.kind = tParam
		}
		return t, nil
	case c == '/':
		// A "/" followed by "{" closes a predicate, as in bpftrace; it
		// cannot be a division, which would need a right operand.
		save := *l
		l.advance(1)
		if err := l.skipSpace(); err == nil && l.off < len(l.src) && l.src[l.off] == '{' {
			*l = save
			l.advance(1)
			t.kind, t.text = tEndPred, "/"
			return t, nil
		}
		*l = save
	}
	for _, p := range puncts {
		if strings.HasPrefix(l.src[l.off:], p) {
			l.advance(len(p))
			t.kind, t.text = tPunct, p
			return t, nil
		}
	}
	return t, errorf(t.pos, "unexpected character %q", c)
}

// number reads a decimal, 0x hexadecimal or 0-prefixed octal integer, with
// optional "_" separators, bpftrace's e-notation (1e6) and its duration
// units (100ms: see parseInteger).
func (l *lexer) number(t token) (token, *Error) {
	start := l.off
	for l.off < len(l.src) && (isLetter(l.src[l.off]) || isDigit(l.src[l.off])) {
		l.advance(1)
	}
	raw := l.src[start:l.off]
	t.kind, t.text = tInt, raw
	v, msg := parseInteger(raw)
	if msg != "" {
		return t, errorf(t.pos, "%s", msg)
	}
	t.val = v
	return t, nil
}

// durationUnits are bpftrace's duration suffixes (0.21 and later) in
// nanoseconds, longest suffix first so that "ms" is not read as "s".
var durationUnits = []struct {
	suffix string
	ns     uint64
}{
	{"ns", 1}, {"us", 1e3}, {"ms", 1e6}, {"s", 1e9}, {"m", 60e9}, {"h", 3600e9}, {"d", 86400e9},
}

// parseInteger reads raw, an integer literal as bpftrace writes it: decimal,
// 0x hexadecimal or 0-prefixed octal, with "_" separators, e-notation
// (1e6) and, on a decimal, a duration unit (ns us ms s m h d) that makes it
// a count of nanoseconds (1ms is 1000000). msg is the error, "" if none.
func parseInteger(raw string) (v uint64, msg string) {
	if strings.HasPrefix(raw, "_") || strings.HasSuffix(raw, "_") || strings.Contains(raw, "__") {
		return 0, "integer " + raw + " has a misplaced _"
	}
	s := strings.ReplaceAll(raw, "_", "")
	scale := uint64(1)
	if !strings.HasPrefix(s, "0x") && !strings.HasPrefix(s, "0X") {
		for _, u := range durationUnits {
			if rest, ok := strings.CutSuffix(s, u.suffix); ok && rest != "" && isDigit(rest[len(rest)-1]) {
				s, scale = rest, u.ns
				break
			}
		}
	}
	var err error
	switch {
	case strings.HasPrefix(s, "0x") || strings.HasPrefix(s, "0X"):
		v, err = strconv.ParseUint(s[2:], 16, 64)
	case len(s) > 1 && s[0] == '0':
		v, err = strconv.ParseUint(s[1:], 8, 64)
	case strings.ContainsAny(s, "eE"):
		i := strings.IndexAny(s, "eE")
		var m, e uint64
		m, err = strconv.ParseUint(s[:i], 10, 64)
		if err == nil {
			e, err = strconv.ParseUint(s[i+1:], 10, 8)
		}
		v = m
		for ; err == nil && e > 0; e-- {
			if v > ^uint64(0)/10 {
				err = strconv.ErrRange
			}
			v *= 10
		}
	default:
		v, err = strconv.ParseUint(s, 10, 64)
	}
	if err == nil && scale > 1 {
		if v > ^uint64(0)/scale {
			err = strconv.ErrRange
		}
		v *= scale
	}
	if err != nil {
		if ne, ok := err.(*strconv.NumError); ok && ne.Err == strconv.ErrRange || err == strconv.ErrRange {
			return 0, "integer " + raw + " does not fit in 64 bits"
		}
		return 0, raw + " is not a valid integer"
	}
	return v, ""
}

// string reads a double-quoted literal with the escapes bpftrace accepts:
// \n \t \r \\ \" \xHH and octal \NNN.
func (l *lexer) string(t token) (token, *Error) {
	t.kind = tString
	l.advance(1)
	var b strings.Builder
	for {
		if l.off >= len(l.src) || l.src[l.off] == '\n' {
			return t, errorf(t.pos, "the string is not closed with \"")
		}
		c := l.src[l.off]
		if c == '"' {
			l.advance(1)
			t.text = b.String()
			return t, nil
		}
		if c != '\\' {
			b.WriteByte(c)
			l.advance(1)
			continue
		}
		epos := l.pos()
		if l.off+1 >= len(l.src) {
			return t, errorf(t.pos, "the string is not closed with \"")
		}
		e := l.src[l.off+1]
		switch e {
		case 'n':
			b.WriteByte('\n')
		case 't':
			b.WriteByte('\t')
		case 'r':
			b.WriteByte('\r')
		case '\\', '"':
			b.WriteByte(e)
		case 'x':
			n := 0
			for n < 2 && l.off+2+n < len(l.src) && isHex(l.src[l.off+2+n]) {
				n++
			}
			if n == 0 {
				return t, errorf(epos, `\x must be followed by hexadecimal digits`)
			}
			v, _ := strconv.ParseUint(l.src[l.off+2:l.off+2+n], 16, 8)
			b.WriteByte(byte(v))
			l.advance(2 + n)
			continue
		default:
			if '0' <= e && e <= '7' {
				n := 0
				for n < 3 && l.off+1+n < len(l.src) && '0' <= l.src[l.off+1+n] && l.src[l.off+1+n] <= '7' {
					n++
				}
				v, _ := strconv.ParseUint(l.src[l.off+1:l.off+1+n], 8, 16)
				if v > 0xff {
					return t, errorf(epos, `octal escape \%s is greater than \377`, l.src[l.off+1:l.off+1+n])
				}
				b.WriteByte(byte(v))
				l.advance(1 + n)
				continue
			}
			return t, errorf(epos, "invalid escape \\%c in string", e)
		}
		l.advance(2)
	}
}

func isHex(c byte) bool { return isDigit(c) || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F' }

// probe reads one probe spec: unquoted probe characters and "quoted" parts,
// up to white space, ",", "{" or a "/" that follows white space.
func (l *lexer) probe(t token) (token, *Error) {
	t.kind = tProbe
	start := l.off
	for l.off < len(l.src) {
		c := l.src[l.off]
		if c == '"' {
			end := strings.IndexAny(l.src[l.off+1:], "\"\n")
			if end < 0 || l.src[l.off+1+end] == '\n' {
				return t, errorf(l.pos(), "the quoted part of the probe is not closed with \"")
			}
			l.advance(end + 2)
			continue
		}
		// Parentheses, which bpftrace wants quoted, are taken in a
		// probe's spec too: Go methods are main.(*Server).handle.
		if !isProbeChar(c) && (c != '(' && c != ')' || l.off == start) {
			break
		}
		// BEGIN and END (begin, end) are keywords to bpftrace, so
		// "BEGIN/pred/" starts a predicate; in other probes "/" belongs
		// to the path.
		if c == '/' && isBeginEnd(l.src[start:l.off]) {
			break
		}
		l.advance(1)
	}
	t.text = l.src[start:l.off]
	return t, nil
}

func isBeginEnd(s string) bool { return s == "BEGIN" || s == "END" || s == "begin" || s == "end" }
