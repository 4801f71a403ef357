package eventfmt

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/usdtkit/usdtkit/internal/bpfgen"
)

var ops = []struct {
	text string
	op   bpfgen.Op
}{
	// Two-character operators first, so "<=" is not read as "<".
	{"==", bpfgen.OpEq}, {"!=", bpfgen.OpNe}, {"<=", bpfgen.OpLe}, {">=", bpfgen.OpGe},
	{"<", bpfgen.OpLt}, {">", bpfgen.OpGt},
}

// ParseFilter parses "argN OP VALUE" with OP one of == != < <= > >= and
// VALUE a decimal, 0x hex or negative integer. The comparison is signed when
// VALUE is negative; callers that know the argument's type set Signed from
// it.
func ParseFilter(s string) (bpfgen.Filter, error) {
	for _, o := range ops {
		lhs, rhs, ok := strings.Cut(s, o.text)
		if !ok {
			continue
		}
		arg, err := parseArgRef(strings.TrimSpace(lhs))
		if err != nil {
			return bpfgen.Filter{}, fmt.Errorf("filter %q: %w", s, err)
		}
		v, signed, err := parseInt(strings.TrimSpace(rhs))
		if err != nil {
			return bpfgen.Filter{}, fmt.Errorf("filter %q: %w", s, err)
		}
		return bpfgen.Filter{Arg: arg, Op: o.op, Value: v, Signed: signed}, nil
	}
	return bpfgen.Filter{}, fmt.Errorf("filter %q: want argN OP VALUE with OP one of == != < <= > >=", s)
}

// ParseNamedFilter parses "LHS OP VALUE" like ParseFilter, where LHS is
// argN (name is "") or a value name: a Go identifier or a dotted path of
// them ("n", "s.hits"), returned as name with f.Arg 0.
func ParseNamedFilter(s string) (name string, f bpfgen.Filter, err error) {
	for _, o := range ops {
		lhs, rhs, ok := strings.Cut(s, o.text)
		if !ok {
			continue
		}
		lhs = strings.TrimSpace(lhs)
		if !IsName(lhs) {
			break
		}
		v, signed, err := parseInt(strings.TrimSpace(rhs))
		if err != nil {
			return "", bpfgen.Filter{}, fmt.Errorf("filter %q: %w", s, err)
		}
		return lhs, bpfgen.Filter{Op: o.op, Value: v, Signed: signed}, nil
	}
	f, err = ParseFilter(s)
	return "", f, err
}

// IsName reports whether s is a value name ParseNamedFilter accepts: a Go
// identifier or a dotted path of them, not arg followed by digits.
func IsName(s string) bool {
	if n, ok := strings.CutPrefix(s, "arg"); ok && n != "" && strings.Trim(n, "0123456789") == "" {
		return false
	}
	return isPath(s)
}

// isPath reports whether s is a dotted path of identifiers.
func isPath(s string) bool {
	if s == "" {
		return false
	}
	for _, part := range strings.Split(s, ".") {
		if part == "" {
			return false
		}
		for i, r := range part {
			letter := r == '_' || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z')
			if !letter && (i == 0 || r < '0' || r > '9') {
				return false
			}
		}
	}
	return true
}

// parseArgRef parses "argN" with 0 <= N < bpfgen.MaxArgs.
func parseArgRef(s string) (int, error) {
	n, ok := strings.CutPrefix(s, "arg")
	if !ok {
		return 0, fmt.Errorf("%q is not argN", s)
	}
	i, err := strconv.Atoi(n)
	if err != nil || i < 0 || i >= bpfgen.MaxArgs || n != strconv.Itoa(i) {
		return 0, fmt.Errorf("%q is not arg0 to arg%d", s, bpfgen.MaxArgs-1)
	}
	return i, nil
}

// parseInt parses a decimal, 0x hex or negative integer; values above
// MaxInt64 are kept as their 64-bit pattern (unsigned).
func parseInt(s string) (v int64, negative bool, err error) {
	if s == "" {
		return 0, false, fmt.Errorf("missing value")
	}
	if strings.HasPrefix(s, "-") {
		v, err := strconv.ParseInt(s, 0, 64)
		if err != nil {
			return 0, false, fmt.Errorf("value %q: %w", s, err.(*strconv.NumError).Err)
		}
		return v, true, nil
	}
	u, err := strconv.ParseUint(s, 0, 64)
	if err != nil {
		return 0, false, fmt.Errorf("value %q: %w", s, err.(*strconv.NumError).Err)
	}
	return int64(u), false, nil
}
