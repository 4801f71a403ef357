package gen

// The .d lexer and its small preprocessor.
//
// Provider files are run through cpp by dtrace -C, and real ones rely on a
// little of it: PostgreSQL's probes.d names its types with object-like
// macros ("#define Oid unsigned int", "#define bool unsigned char"). The
// lexer therefore keeps object-like #define and #undef, applies them as cpp
// does (a macro is not expanded inside its own expansion), ignores
// #pragma, #include, #line, #ident and the null directive, and rejects what
// it cannot follow faithfully (conditionals, function-like macros) instead of
// guessing. Expansion is bounded in depth and in the tokens it may produce,
// so "#define A B B" chains cannot blow up.

import (
	"fmt"
)

type tokKind uint8

const (
	tokEOF tokKind = iota
	tokIdent
	tokNumber
	tokString // "..." or '...', only meaningful inside directives
	tokPunct  // one byte
)

type dtoken struct {
	kind tokKind
	text string
	line int // 1-based
	col  int // 1-based, in bytes
	// logical is the logical line (backslash-newlines and newlines inside
	// block comments joined), which ends a preprocessor directive.
	logical int
	// bol is set on the first dtoken of its logical line.
	bol bool
}

const (
	// maxDSize bounds the .d file ParseD reads; real ones are a few KiB.
	maxDSize = 4 << 20
	// maxExpandDepth bounds nested macro expansion.
	maxExpandDepth = 64
	// maxTokensPerInput bounds the tokens macro expansion may produce, as
	// a multiple of the tokens in the file.
	maxTokensPerInput = 16
)

// dlex splits src into tokens, ending with one tokEOF.
func dlex(file string, src []byte) ([]dtoken, error) {
	var (
		toks    []dtoken
		line    = 1
		lineOff = 0 // offset of the current physical line's first byte
		logical = 1
		lastLog = 0 // logical line of the last dtoken
	)
	pos := func(off int) (int, int) { return line, off - lineOff + 1 }
	errAt := func(off int, format string, args ...any) error {
		l, c := pos(off)
		return &ParseError{File: file, Line: l, Col: c, Msg: fmt.Sprintf(format, args...)}
	}
	emit := func(kind tokKind, start, end int) {
		l, c := pos(start)
		toks = append(toks, dtoken{kind: kind, text: string(src[start:end]), line: l, col: c, logical: logical, bol: logical != lastLog})
		lastLog = logical
	}
	newline := func(off int) { // src[off] == '\n'
		line++
		lineOff = off + 1
	}
	for i := 0; i < len(src); {
		c := src[i]
		switch {
		case c == '\n':
			newline(i)
			logical++
			i++
		case c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v':
			i++
		case c == '\\' && i+1 < len(src) && src[i+1] == '\n':
			newline(i + 1)
			i += 2
		case c == '\\' && i+2 < len(src) && src[i+1] == '\r' && src[i+2] == '\n':
			newline(i + 2)
			i += 3
		case c == '/' && i+1 < len(src) && src[i+1] == '/':
			for i < len(src) && src[i] != '\n' {
				i++
			}
		case c == '/' && i+1 < len(src) && src[i+1] == '*':
			startLine, startCol := pos(i)
			i += 2
			for {
				if i+1 >= len(src) {
					return nil, &ParseError{File: file, Line: startLine, Col: startCol, Msg: "comment not terminated"}
				}
				if src[i] == '*' && src[i+1] == '/' {
					i += 2
					break
				}
				if src[i] == '\n' {
					newline(i)
				}
				i++
			}
		case isIdentStart(c):
			start := i
			for i < len(src) && isIdentByte(src[i]) {
				i++
			}
			emit(tokIdent, start, i)
		case c >= '0' && c <= '9':
			start := i
			for i < len(src) && (isIdentByte(src[i]) || src[i] == '.') {
				i++
			}
			emit(tokNumber, start, i)
		case c == '"' || c == '\'':
			start := i
			i++
			for i < len(src) && src[i] != c && src[i] != '\n' {
				if src[i] == '\\' && i+1 < len(src) && src[i+1] != '\n' {
					i++
				}
				i++
			}
			if i >= len(src) || src[i] != c {
				return nil, errAt(start, "%c literal not terminated", c)
			}
			i++
			emit(tokString, start, i)
		default:
			emit(tokPunct, i, i+1)
			i++
		}
	}
	l, c := pos(len(src))
	toks = append(toks, dtoken{kind: tokEOF, line: l, col: c, logical: logical + 1, bol: true})
	return toks, nil
}

func isIdentStart(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

func isIdentByte(c byte) bool { return isIdentStart(c) || c >= '0' && c <= '9' }

// dpreprocess runs the directives of toks and expands object-like macros in
// the rest. The result ends with the tokEOF of toks.
func dpreprocess(file string, toks []dtoken) ([]dtoken, error) {
	macros := make(map[string][]dtoken)
	out := make([]dtoken, 0, len(toks))
	budget := maxTokensPerInput*len(toks) + 1024
	errAt := func(t dtoken, format string, args ...any) error {
		return &ParseError{File: file, Line: t.line, Col: t.col, Msg: fmt.Sprintf(format, args...)}
	}
	var expand func(t dtoken, use dtoken, depth int, active map[string]bool) error
	expand = func(t, use dtoken, depth int, active map[string]bool) error {
		body, ok := macros[t.text]
		if t.kind != tokIdent || !ok || active[t.text] {
			if len(out) >= budget {
				return errAt(use, "macro expansion produces more than %d tokens", budget)
			}
			// Expanded tokens take the position of the macro's use, so
			// errors point at the line the user wrote.
			t.line, t.col = use.line, use.col
			out = append(out, t)
			return nil
		}
		if depth >= maxExpandDepth {
			return errAt(use, "macro %s nested more than %d deep", t.text, maxExpandDepth)
		}
		active[t.text] = true
		for _, b := range body {
			if err := expand(b, use, depth+1, active); err != nil {
				return err
			}
		}
		delete(active, t.text)
		return nil
	}
	active := make(map[string]bool)
	for i := 0; i < len(toks); {
		t := toks[i]
		if t.kind == tokEOF {
			out = append(out, t)
			break
		}
		if !(t.bol && t.kind == tokPunct && t.text == "#") {
			if err := expand(t, t, 0, active); err != nil {
				return nil, err
			}
			i++
			continue
		}
		j := i + 1
		for toks[j].kind != tokEOF && toks[j].logical == t.logical {
			j++
		}
		if err := ddirective(file, t, toks[i+1:j], macros); err != nil {
			return nil, err
		}
		i = j
	}
	return out, nil
}

// ddirective runs one preprocessor line: hash is the '#', args what follows
// it on the logical line.
func ddirective(file string, hash dtoken, args []dtoken, macros map[string][]dtoken) error {
	errAt := func(t dtoken, format string, a ...any) error {
		return &ParseError{File: file, Line: t.line, Col: t.col, Msg: fmt.Sprintf(format, a...)}
	}
	if len(args) == 0 {
		return nil // the null directive
	}
	name := args[0]
	switch name.text {
	case "pragma", "include", "line", "ident":
		return nil
	case "define":
		if len(args) < 2 || args[1].kind != tokIdent {
			return errAt(name, "#define needs a macro name")
		}
		m := args[1]
		if len(args) > 2 && args[2].text == "(" && args[2].line == m.line && args[2].col == m.col+len(m.text) {
			return errAt(m, "function-like macro %s is not supported (run the file through cpp first)", m.text)
		}
		macros[m.text] = args[2:]
		return nil
	case "undef":
		if len(args) != 2 || args[1].kind != tokIdent {
			return errAt(name, "#undef needs one macro name")
		}
		delete(macros, args[1].text)
		return nil
	case "if", "ifdef", "ifndef", "elif", "else", "endif":
		return errAt(name, "conditional directive #%s is not supported (run the file through cpp first)", name.text)
	}
	return errAt(name, "unknown preprocessor directive #%s", name.text)
}
