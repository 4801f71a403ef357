package gosig

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/usdtkit/usdtkit/internal/golang/gofunc"
	"github.com/usdtkit/usdtkit/internal/proc/procfs"
	"github.com/usdtkit/usdtkit/internal/proc/target"
	"github.com/usdtkit/usdtkit/uprobe"
)

// ErrChanged is wrapped by Signatures' error when the object's path names
// another file than the one listed (replaced or renamed since).
var ErrChanged = procfs.ErrChanged

// Param is a parameter or result of a Go function as the tracer reads it.
type Param struct {
	// Name is the name events use: the source name, "p.X" for a field of
	// a struct passed by value, r0, r1, ... for unnamed results.
	Name string
	// Type is the Go type.
	Type string
	// Place says where the value is at the entry site (parameters) or the
	// RETs (results): registers ("rbx rcx" for a string) or stack slots
	// ("sp+8"); "" when it cannot be read, Unread saying why.
	Place  string
	Unread string
}

// Signature is what the tracer reads of a Go function.
type Signature struct {
	Name            string
	Params, Results []Param
	// Problems say what of the function cannot be decoded.
	Problems []string
}

// Signatures returns the signatures of the named functions of the Go
// binary obj, in order, leaving out names the
// binary's function table does not know (symbols of assembly stubs and
// markers such as runtime.text). A function that cannot be decoded has
// the error in Problems.
//
// The file is opened again as List opened it and must be the file listed
// (Object.Dev and Inode): a different file is refused with an error
// wrapping ErrChanged.
func Signatures(obj *uprobe.Object, names []string) ([]Signature, error) {
	f, err := target.Reopen(obj.Path, obj.PID, procfs.FileID{Dev: obj.Dev, Inode: obj.Inode})
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := gofunc.Open(procfs.FDPath(f))
	if err != nil {
		return nil, err
	}
	defer b.Close()
	sigs := make([]Signature, 0, len(names))
	for _, name := range names {
		fn, err := b.Func(name)
		if errors.Is(err, gofunc.ErrNotFound) {
			continue
		}
		if err != nil {
			sigs = append(sigs, Signature{Name: name, Problems: []string{err.Error()}})
			continue
		}
		sig := Signature{Name: name, Params: params(fn.Params), Results: params(fn.Results), Problems: fn.Problems}
		sigs = append(sigs, sig)
	}
	return sigs, nil
}

func params(ps []gofunc.Param) []Param {
	out := make([]Param, 0, len(ps))
	for _, p := range ps {
		gp := Param{Name: p.Name, Type: p.Type, Unread: p.Reason}
		var places []string
		for _, w := range p.Words {
			if w.Reg != "" {
				places = append(places, w.Reg)
			} else {
				places = append(places, "sp+"+strconv.FormatInt(w.SPOffset, 10))
			}
		}
		gp.Place = strings.Join(places, " ")
		out = append(out, gp)
	}
	return out
}

// String formats s as "NAME(p T [place], ...) (r T [place], ...)", then
// the problems in brackets.
func (s *Signature) String() string {
	list := func(ps []Param) string {
		parts := make([]string, len(ps))
		for i, p := range ps {
			where := p.Place
			if p.Unread != "" {
				where = "unread: " + p.Unread
			}
			parts[i] = fmt.Sprintf("%s %s [%s]", p.Name, p.Type, where)
		}
		return strings.Join(parts, ", ")
	}
	out := s.Name + "(" + list(s.Params) + ")"
	if len(s.Results) > 0 {
		out += " (" + list(s.Results) + ")"
	}
	if len(s.Problems) > 0 {
		out += " [" + strings.Join(s.Problems, "; ") + "]"
	}
	return out
}
