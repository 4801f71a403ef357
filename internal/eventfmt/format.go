package eventfmt

import (
	"fmt"
	"strings"

	"github.com/usdtkit/usdtkit/internal/bpfgen"
)

// Format is a parsed printf-style format. It is plain data and safe for
// concurrent use.
type Format struct {
	parts []part
}

// part is literal text, or one verb with the argument it prints.
type part struct {
	lit       string
	directive string // for fmt: "%", flags, width, precision and verb
	verb      byte   // as written: d i u x X o p c s
	arg       int
	str       bool
	// name is a value name (a Go parameter, "s.hits") instead of arg.
	name string
}

// ParseFormat parses a format in either of the forms the package doc gives.
func ParseFormat(s string) (*Format, error) {
	t := strings.TrimSpace(s)
	if strings.HasPrefix(t, `"`) {
		text, rest, err := unquote(t)
		if err != nil {
			return nil, fmt.Errorf("format %s: %w", s, err)
		}
		refs, err := parseRefs(rest)
		if err != nil {
			return nil, fmt.Errorf("format %s: %w", s, err)
		}
		f, err := parseVerbs(text, refs)
		if err != nil {
			return nil, fmt.Errorf("format %s: %w", s, err)
		}
		return f, nil
	}
	f, err := parseVerbs(s, nil)
	if err != nil {
		return nil, fmt.Errorf("format %q: %w", s, err)
	}
	return f, nil
}

type argRef struct {
	arg  int
	str  bool
	name string
}

// unquote reads a double-quoted string with \n \t \\ \" escapes from the
// start of s and returns it with the text after the closing quote.
func unquote(s string) (text, rest string, err error) {
	var b strings.Builder
	for i := 1; i < len(s); i++ {
		switch c := s[i]; c {
		case '"':
			return b.String(), s[i+1:], nil
		case '\\':
			i++
			if i == len(s) {
				return "", "", fmt.Errorf("unterminated escape")
			}
			switch s[i] {
			case 'n':
				b.WriteByte('\n')
			case 't':
				b.WriteByte('\t')
			case '\\', '"':
				b.WriteByte(s[i])
			default:
				return "", "", fmt.Errorf("unknown escape \\%c", s[i])
			}
		default:
			b.WriteByte(c)
		}
	}
	return "", "", fmt.Errorf("missing closing quote")
}

// parseRefs parses ", argN, str(argN), ..." after a quoted format.
func parseRefs(s string) ([]argRef, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return []argRef{}, nil
	}
	rest, ok := strings.CutPrefix(s, ",")
	if !ok {
		return nil, fmt.Errorf("want a comma after the format, have %q", s)
	}
	var refs []argRef
	for _, r := range strings.Split(rest, ",") {
		r = strings.TrimSpace(r)
		var ref argRef
		if inner, ok := strings.CutPrefix(r, "str("); ok {
			inner, ok = strings.CutSuffix(inner, ")")
			if !ok {
				return nil, fmt.Errorf("%q: missing )", r)
			}
			r, ref.str = strings.TrimSpace(inner), true
		}
		if IsName(r) && !ref.str {
			ref.name = r
			refs = append(refs, ref)
			continue
		}
		arg, err := parseArgRef(r)
		if err != nil {
			return nil, err
		}
		ref.arg = arg
		refs = append(refs, ref)
	}
	return refs, nil
}

// parseVerbs splits text into literals and verbs. With refs == nil the
// verbs take arg0, arg1, … in order; otherwise refs must match the verbs.
func parseVerbs(text string, refs []argRef) (*Format, error) {
	f := &Format{}
	next := 0
	for len(text) > 0 {
		i := strings.IndexByte(text, '%')
		if i < 0 {
			f.parts = append(f.parts, part{lit: text})
			break
		}
		if i > 0 {
			f.parts = append(f.parts, part{lit: text[:i]})
		}
		j := i + 1
		for j < len(text) && strings.IndexByte("-+# 0123456789.", text[j]) >= 0 {
			j++
		}
		if j == len(text) {
			return nil, fmt.Errorf("verb %q has no letter", text[i:])
		}
		verb := text[j]
		if verb == '%' {
			f.parts = append(f.parts, part{lit: "%"})
			text = text[j+1:]
			continue
		}
		if strings.IndexByte("diuxXopcs", verb) < 0 {
			return nil, fmt.Errorf("unknown verb %%%c", verb)
		}
		p := part{verb: verb, directive: text[i:j]}
		if refs == nil {
			if next >= bpfgen.MaxArgs {
				return nil, fmt.Errorf("more than %d verbs", bpfgen.MaxArgs)
			}
			p.arg, p.str = next, verb == 's'
		} else {
			if next >= len(refs) {
				return nil, fmt.Errorf("more verbs than arguments")
			}
			p.arg, p.str, p.name = refs[next].arg, refs[next].str, refs[next].name
			if p.name == "" && p.str != (verb == 's') {
				return nil, fmt.Errorf("%%%c prints arg%d: %%s goes with str(argN) and only with it", verb, p.arg)
			}
		}
		next++
		f.parts = append(f.parts, p)
		text = text[j+1:]
	}
	if refs != nil && next != len(refs) {
		return nil, fmt.Errorf("%d arguments for %d verbs", len(refs), next)
	}
	return f, nil
}

// StringArgs has bit i set when the format reads argument i as a string.
func (f *Format) StringArgs() uint16 {
	var m uint16
	for _, p := range f.parts {
		if p.str {
			m |= 1 << p.arg
		}
	}
	return m
}

// Args has bit i set when the format prints argument i (as a string or
// not).
func (f *Format) Args() uint16 {
	var m uint16
	for _, p := range f.parts {
		if p.verb != 0 && p.name == "" {
			m |= 1 << p.arg
		}
	}
	return m
}

// Names returns the value names the format prints, in order.
func (f *Format) Names() []string {
	var names []string
	for _, p := range f.parts {
		if p.name != "" {
			names = append(names, p.name)
		}
	}
	return names
}

// NArgs is one more than the highest argument the format prints (0 if it
// prints none).
func (f *Format) NArgs() int {
	n := 0
	for _, p := range f.parts {
		if p.verb != 0 && p.arg >= n {
			n = p.arg + 1
		}
	}
	return n
}

// Append formats ev after dst. An argument the event lacks prints as
// "<argN?>", an unreadable one as "<fault>".
func (f *Format) Append(dst []byte, ev *bpfgen.Event) []byte {
	for _, p := range f.parts {
		if p.verb == 0 {
			dst = append(dst, p.lit...)
			continue
		}
		if p.name != "" {
			dst = fmt.Appendf(dst, "<%s?>", p.name)
			continue
		}
		if p.arg >= len(ev.Args) {
			dst = fmt.Appendf(dst, "<arg%d?>", p.arg)
			continue
		}
		if ev.Faults&(1<<p.arg) != 0 {
			dst = append(dst, "<fault>"...)
			continue
		}
		v := ev.Args[p.arg]
		switch p.verb {
		case 's':
			dst = fmt.Appendf(dst, p.directive+"s", ev.Strings[p.arg])
		case 'd', 'i':
			dst = fmt.Appendf(dst, p.directive+"d", int64(v))
		case 'u':
			dst = fmt.Appendf(dst, p.directive+"d", v)
		case 'p':
			dst = fmt.Appendf(dst, "0x%"+p.directive[1:]+"x", v)
		case 'c':
			dst = fmt.Appendf(dst, p.directive+"c", rune(byte(v)))
		default:
			dst = fmt.Appendf(dst, p.directive+string(p.verb), v)
		}
	}
	return dst
}

// AppendNamed formats ev after dst like Append, taking the values of
// names from lookup: %s prints any value, the integer verbs print integers
// and bools (as 0 or 1), %p and %x pointers. A name lookup does not know
// prints "<NAME?>", a nil value "<nil>".
func (f *Format) AppendNamed(dst []byte, ev *bpfgen.Event, lookup func(name string) (any, bool)) []byte {
	for _, p := range f.parts {
		if p.name == "" {
			dst = (&Format{parts: []part{p}}).Append(dst, ev)
			continue
		}
		v, ok := lookup(p.name)
		switch {
		case !ok:
			dst = fmt.Appendf(dst, "<%s?>", p.name)
			continue
		case v == nil:
			dst = append(dst, "<nil>"...)
			continue
		}
		if b, isBool := v.(bool); isBool && p.verb != 's' {
			v = 0
			if b {
				v = 1
			}
		}
		switch p.verb {
		case 's':
			dst = fmt.Appendf(dst, p.directive+"v", v)
		case 'd', 'i', 'u':
			dst = fmt.Appendf(dst, p.directive+"d", v)
		case 'p':
			dst = fmt.Appendf(dst, "0x%"+p.directive[1:]+"x", v)
		default:
			dst = fmt.Appendf(dst, p.directive+string(p.verb), v)
		}
	}
	return dst
}
