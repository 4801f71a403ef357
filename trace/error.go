package trace

import (
	"errors"

	"github.com/usdtkit/usdtkit/internal/lang/btlang"
	"github.com/usdtkit/usdtkit/internal/lang/btrun"
)

// CompileError is one error in a program: where (file, 1-based line and
// column in bytes) and one sentence saying what is wrong. Errors of
// Compile that concern the program's text (syntax, types, what is not
// supported yet, a probe that matches nothing) are CompileErrors, found
// with errors.As.
type CompileError struct {
	File      string
	Line, Col int
	Msg       string
	// Err is the cause of an error about a probe's sites (a Go binary
	// that cannot be read, a function not found), for errors.Is; nil for
	// errors in the program's text.
	Err error
}

// Unwrap returns Err.
func (e *CompileError) Unwrap() error { return e.Err }

// Error returns "file:line:col: sentence".
func (e *CompileError) Error() string {
	return (&btlang.Error{Pos: btlang.Pos{File: e.File, Line: e.Line, Col: e.Col}, Msg: e.Msg}).Error()
}

// CompileErrors is every error Compile found, in source order; its Error
// prints them one per line, and errors.As finds each *CompileError.
type CompileErrors []*CompileError

// Error returns the errors, one per line.
func (l CompileErrors) Error() string { return btlang.JoinErrors(l) }

// Unwrap returns the errors, for errors.As.
func (l CompileErrors) Unwrap() []error { return btlang.UnwrapErrors(l) }

// compileErrors turns the front and back end's errors (btlang's) into
// CompileErrors, their public form, in this one place; other errors are
// returned as they are.
func compileErrors(err error) error {
	var list btlang.ErrorList
	if errors.As(err, &list) {
		out := make(CompileErrors, len(list))
		for i, e := range list {
			out[i] = convert(e)
		}
		return out
	}
	var one *btlang.Error
	if errors.As(err, &one) {
		return CompileErrors{convert(one)}
	}
	return err
}

func convert(e *btlang.Error) *CompileError {
	return &CompileError{File: e.Pos.File, Line: e.Pos.Line, Col: e.Pos.Col, Msg: e.Msg}
}

// RefusedError lists the sites of a program's probes the kernel refused
// to probe: on x86-64 an instruction with a lock prefix, or another it
// can neither single-step nor emulate. Start attaches the other sites
// and gives it to Options.Warn; when the kernel took no site of the
// program, Start returns it. Find it with errors.As.
type RefusedError struct {
	// Sites are the refused sites, in the order of the program's probes
	// and of their sites.
	Sites []RefusedSite
	// Attached is how many sites were attached.
	Attached int
}

// RefusedSite is a site the kernel refused.
type RefusedSite struct {
	// Probe is the probe's full name ("uprobe:/lib/libc.so.6:malloc"),
	// Func the function's name (demangled, without its symbol version),
	// either empty when unknown.
	Probe, Func string
	// Object is the file and Offset the site's file offset in it.
	Object string
	Offset uint64
	// Err is the kernel's reason.
	Err error
}

// Error returns one sentence listing each site: function, object and
// reason.
func (e *RefusedError) Error() string {
	b := btrun.RefusedError{Attached: e.Attached}
	for _, s := range e.Sites {
		b.Sites = append(b.Sites, btrun.RefusedSite(s))
	}
	return b.Error()
}

// refusedError converts btrun's *RefusedError in err to a
// *RefusedError; other errors are returned as they are.
func refusedError(err error) error {
	var b *btrun.RefusedError
	if !errors.As(err, &b) {
		return err
	}
	e := &RefusedError{Attached: b.Attached}
	for _, s := range b.Sites {
		e.Sites = append(e.Sites, RefusedSite(s))
	}
	return e
}
