package btlang

import (
	"fmt"
	"strings"
)

// Verb is one conversion of a printf or time format.
type Verb struct {
	Off    int    // byte offset of the "%" in the format
	Spec   string // the whole conversion as written, e.g. "%-10s", "%llu"
	Flags  string // any of "-" and "0"
	Width  int    // -1 when absent
	Prec   int    // -1 when absent
	Length string // "", "h", "hh", "l", "ll", "z" or "j"
	Conv   byte   // one of c s d u x X p o
}

// VerbError is a malformed conversion at byte Off of a format.
type VerbError struct {
	Off int
	Msg string
}

func (e *VerbError) Error() string { return fmt.Sprintf("at byte %d: %s", e.Off, e.Msg) }

// ParseVerbs returns the conversions of a printf format as bpftrace reads
// them: %[-0][width][.prec][h|hh|l|ll|z|j](c|s|d|u|x|X|p|o), and %% for a
// percent sign. bpftrace prints any other conversion literally; ParseVerbs
// rejects it, since a user who wrote it meant something else.
func ParseVerbs(format string) ([]Verb, error) {
	var verbs []Verb
	for i := 0; i < len(format); i++ {
		if format[i] != '%' {
			continue
		}
		start := i
		i++
		if i < len(format) && format[i] == '%' {
			continue
		}
		v := Verb{Off: start, Width: -1, Prec: -1}
		for i < len(format) && (format[i] == '-' || format[i] == '0') {
			if !strings.ContainsRune(v.Flags, rune(format[i])) {
				v.Flags += string(format[i])
			}
			i++
		}
		v.Width, i = digits(format, i)
		if i < len(format) && format[i] == '.' {
			v.Prec, i = digits(format, i+1)
			if v.Prec < 0 {
				v.Prec = 0
			}
		}
		for _, l := range []string{"hh", "h", "ll", "l", "z", "j"} {
			if strings.HasPrefix(format[i:], l) {
				v.Length = l
				i += len(l)
				break
			}
		}
		if i >= len(format) {
			return nil, &VerbError{Off: start, Msg: fmt.Sprintf("the format ends inside the conversion %q", format[start:])}
		}
		c := format[i]
		if strings.IndexByte("csduxXpo", c) < 0 {
			return nil, &VerbError{Off: start, Msg: fmt.Sprintf("%%%c is not a conversion bpftrace knows (it takes c s d u x X p o); write %%%% for a percent sign", c)}
		}
		v.Conv = c
		v.Spec = format[start : i+1]
		verbs = append(verbs, v)
	}
	return verbs, nil
}

// digits reads a decimal number at s[i:], returning -1 when there is none.
// Numbers are capped so that hostile widths cannot overflow.
func digits(s string, i int) (int, int) {
	n := -1
	for i < len(s) && isDigit(s[i]) {
		if n < 0 {
			n = 0
		}
		if n < 1<<20 {
			n = n*10 + int(s[i]-'0')
		}
		i++
	}
	return n, i
}

// accepts reports whether the verb prints a value of type t: %s takes a
// string, a stack, a probe or a symbol; the others take an integer.
func (v Verb) accepts(t Type) bool {
	if v.Conv == 's' {
		switch t.Kind {
		case KindString, KindStack, KindProbe, KindSym, KindUsym:
			return true
		}
		return false
	}
	return t.Kind == KindInt
}
