// Package escape prints names read from files and processes so they show
// what they are and can be typed back. Name keeps printable UTF-8, writes
// other bytes as \xNN and a backslash as \\. Literal is its inverse; Glob
// reads the same escapes in a selector pattern. The functions are pure.
package escape

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

const hexDigits = "0123456789abcdef"

// Name returns s escaped: printable UTF-8 as is, other bytes as \xNN, a
// backslash as \\; s itself if nothing needs escaping.
func Name(s string) string {
	if clean(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == '\\':
			b.WriteString(`\\`)
		case r == utf8.RuneError, !unicode.IsPrint(r):
			for _, c := range []byte(s[i : i+n]) {
				b.WriteString(`\x`)
				b.WriteByte(hexDigits[c>>4])
				b.WriteByte(hexDigits[c&15])
			}
		default:
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

// clean reports whether s is printable ASCII without a backslash, the
// common case.
func clean(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '\\' {
			return false
		}
	}
	return true
}

// Literal returns the bytes an escaped name stands for: \xNN is byte NN,
// \\ a backslash; anything else, a lone backslash included, is itself.
func Literal(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' {
			if c, ok := hexByte(s, i); ok {
				b.WriteByte(c)
				i += 3
				continue
			}
			if i+1 < len(s) && s[i+1] == '\\' {
				b.WriteByte('\\')
				i++
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// Glob returns the path.Match pattern a selector part stands for: each
// \xNN becomes byte NN, preceded by a backslash if it is one of the
// metacharacters *?[\ (or ] and -, which mean something in a class), and
// every other backslash pair is left as path.Match reads it.
func Glob(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' {
			b.WriteByte(s[i])
			continue
		}
		if c, ok := hexByte(s, i); ok {
			if strings.IndexByte(`*?[]\-`, c) >= 0 {
				b.WriteByte('\\')
			}
			b.WriteByte(c)
			i += 3
			continue
		}
		// A glob escape: keep it and the byte it quotes together, so
		// that \\x41 is a backslash and "x41".
		b.WriteByte('\\')
		if i+1 < len(s) {
			b.WriteByte(s[i+1])
			i++
		}
	}
	return b.String()
}

// hexByte decodes the \xNN at s[i:], if there is one.
func hexByte(s string, i int) (byte, bool) {
	if i+4 > len(s) || s[i+1] != 'x' {
		return 0, false
	}
	hi, ok1 := unhex(s[i+2])
	lo, ok2 := unhex(s[i+3])
	return hi<<4 | lo, ok1 && ok2
}

func unhex(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	case 'A' <= c && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}

// Control returns s with the characters a terminal acts on written as
// \xNN (their bytes): C0 controls but tab and newline, DEL, and the C1
// controls U+0080 to U+009F (the CSI U+009B starts a sequence as ESC [
// does). Everything else, backslashes and invalid UTF-8 included, is kept
// as it is: it is for text a tracer prints from data a traced process
// controls (its comm, strings, symbol names), which must not move the
// cursor, retitle the window or hide lines of a user's terminal, while
// printing as bpftrace prints it otherwise.
func Control(s string) string {
	i := firstControl(s)
	if i < 0 {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	b.WriteString(s[:i])
	for i < len(s) {
		c := s[i]
		n := controlLen(s[i:])
		if n == 0 {
			b.WriteByte(c)
			i++
			continue
		}
		for _, c := range []byte(s[i : i+n]) {
			b.WriteString(`\x`)
			b.WriteByte(hexDigits[c>>4])
			b.WriteByte(hexDigits[c&15])
		}
		i += n
	}
	return b.String()
}

// firstControl returns the index of the first character Control escapes,
// or -1.
func firstControl(s string) int {
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < 0x20 || c == 0x7f || c == 0xc2) && controlLen(s[i:]) > 0 {
			return i
		}
	}
	return -1
}

// controlLen returns the length in bytes of the control character s
// starts with, or 0.
func controlLen(s string) int {
	switch c := s[0]; {
	case c == '\t' || c == '\n':
		return 0
	case c < 0x20 || c == 0x7f:
		return 1
	case c == 0xc2 && len(s) > 1 && s[1] >= 0x80 && s[1] <= 0x9f:
		return 2
	}
	return 0
}
