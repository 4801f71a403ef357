package btlang

import (
	"fmt"
	"strings"
)

// Pos is a position in a program's source: the file name given to Parse,
// a 1-based line and a 1-based column counted in bytes.
type Pos struct {
	File string
	Line int
	Col  int
}

// String returns "file:line:col".
func (p Pos) String() string {
	return fmt.Sprintf("%s:%d:%d", p.File, p.Line, p.Col)
}

// Error is one compile error: where, and one sentence saying what is wrong.
type Error struct {
	Pos Pos
	Msg string
}

// Error returns "file:line:col: sentence".
func (e *Error) Error() string { return e.Pos.String() + ": " + e.Msg }

// ErrorList is every error Check found, in source order. Parse stops at its
// first error and returns a list of one.
type ErrorList []*Error

// Error returns the errors, one per line.
func (l ErrorList) Error() string { return JoinErrors(l) }

// Unwrap returns the errors so that errors.As finds each *Error.
func (l ErrorList) Unwrap() []error { return UnwrapErrors(l) }

// JoinErrors is the text of a list of compile errors, one per line: what
// ErrorList and package trace's public list print.
func JoinErrors[E error](l []E) string {
	var b strings.Builder
	for i, e := range l {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(e.Error())
	}
	return b.String()
}

// UnwrapErrors returns l as []error, for a list's Unwrap.
func UnwrapErrors[E error](l []E) []error {
	errs := make([]error, len(l))
	for i, e := range l {
		errs[i] = e
	}
	return errs
}

func errorf(pos Pos, format string, args ...any) *Error {
	return &Error{Pos: pos, Msg: fmt.Sprintf(format, args...)}
}
