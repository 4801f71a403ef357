package launch

import (
	"errors"
	"strings"
)

// ErrCommandSyntax is wrapped by SplitCommand for an unterminated quote or
// a trailing backslash.
var ErrCommandSyntax = errors.New("command syntax")

// SplitCommand splits a command line into words as a POSIX shell would
// without expanding anything: blanks separate words; '…' keeps everything
// literally; "…" keeps everything but \" \\ \$ \`; a backslash outside
// quotes escapes the next character.
func SplitCommand(s string) ([]string, error) {
	var (
		words  []string
		word   strings.Builder
		inWord bool
	)
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n':
			if inWord {
				words = append(words, word.String())
				word.Reset()
				inWord = false
			}
		case c == '\\':
			if i+1 == len(s) {
				return nil, fmtSyntax("trailing backslash")
			}
			i++
			word.WriteByte(s[i])
			inWord = true
		case c == '\'':
			end := strings.IndexByte(s[i+1:], '\'')
			if end < 0 {
				return nil, fmtSyntax("unterminated '")
			}
			word.WriteString(s[i+1 : i+1+end])
			i += end + 1
			inWord = true
		case c == '"':
			i++
			for ; i < len(s) && s[i] != '"'; i++ {
				if s[i] == '\\' && i+1 < len(s) && strings.IndexByte("\"\\$`", s[i+1]) >= 0 {
					i++
				}
				word.WriteByte(s[i])
			}
			if i == len(s) {
				return nil, fmtSyntax(`unterminated "`)
			}
			inWord = true
		default:
			word.WriteByte(c)
			inWord = true
		}
	}
	if inWord {
		words = append(words, word.String())
	}
	return words, nil
}

func fmtSyntax(msg string) error { return &syntaxError{msg} }

type syntaxError struct{ msg string }

func (e *syntaxError) Error() string { return "command: " + e.msg }
func (e *syntaxError) Unwrap() error { return ErrCommandSyntax }
