// Package printf reads bpftrace's printf formats as bpftrace 0.17 does. It
// formats their arguments as C's printf would. The checker, codegen and
// output share this one grammar.
package printf

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/usdtkit/usdtkit/internal/escape"
)

// ArgKind is what a bpftrace printf verb prints: an integer or a string.
type ArgKind uint8

const (
	ArgInt ArgKind = iota + 1
	ArgString
	ArgBuffer // %r, %rx, %rh: Arg.Bytes
)

// Format is a parsed bpftrace printf format string. It is plain data and
// safe for concurrent use.
//
// bpftrace 0.17 finds its verbs with the pattern
// %-?[0-9]*(\.[0-9]+)?(LEN)?(VERB) where VERB is one of d u o x X p with a
// LEN of hh h l ll j z t or none, or c or s without LEN (%i, %+d, %#x and
// %e are not verbs there); each verb takes the next argument. It formats
// each verb with C's snprintf, with the text between the previous verb
// and this one, and writes the text after the last verb unformatted, so
// "%%" prints "%" before the last verb and "%%" after it. C's rules apply:
// without LEN, d u o x X c print the low 32 bits of their argument; hh
// and h 8 and 16 bits; %p prints "0x…" or "(nil)"; widths and precisions
// count bytes; output stops at a NUL byte (%c of 0) until the next verb.
type Format struct {
	parts []printfPart
	tail  string
	// tailOff is the byte offset of tail in the format.
	tailOff int
}

// printfPart is one verb and the literal text before it.
type printfPart struct {
	lit string // with "%%" already made "%"
	// skip is set when C reads the verb's '%' as the end of "%%": the
	// argument is then not printed (bpftrace prints "%d" for "%%d").
	skip  bool
	spec  verbSpec
	token string // as written, for errors
}

// verbSpec is one parsed verb.
type verbSpec struct {
	left      bool // '-'
	zero      bool // a leading 0 in the width
	width     int
	precision int // -1 when not given
	bits      int // 8, 16, 32 or 64 (from LEN)
	verb      byte
	// rmode is %r's form: 0 for %r, 'x' for %rx, 'h' for %rh.
	rmode byte
}

// maxPrintfWidth bounds widths and precisions: C's limit is INT_MAX, but
// nobody pads a line to a gigabyte.
const maxPrintfWidth = 1 << 16

// Parse parses a bpftrace printf format, its escapes (\n, \t, \", …)
// already replaced by the bytes they stand for. It rejects a '%' before a
// verb that C would read as a conversion bpftrace does not know (as in
// "50% off %d", where C reads "% o"), %r (buffers), and widths or
// precisions over 65536; errors are *FormatError with the byte offset.
func Parse(format string) (*Format, error) {
	p := &Format{}
	lastEnd := 0
	for i := 0; i < len(format); i++ {
		if format[i] != '%' {
			continue
		}
		spec, end, ok := matchVerb(format, i)
		if !ok {
			continue
		}
		if spec.width > maxPrintfWidth || spec.precision > maxPrintfWidth {
			return nil, &FormatError{Off: i, Msg: fmt.Sprintf("width or precision over %d", maxPrintfWidth)}
		}
		lit, skip, err := cLiteral(format[lastEnd:i], lastEnd)
		if err != nil {
			return nil, err
		}
		if skip {
			// C read "%%" across the verb's '%': the verb's other
			// bytes are plain text to it.
			lit += format[i+1 : end]
		}
		p.parts = append(p.parts, printfPart{lit: lit, skip: skip, spec: spec, token: format[i:end]})
		lastEnd = end
		i = end - 1
	}
	p.tail, p.tailOff = format[lastEnd:], lastEnd
	return p, nil
}

// Verb is one conversion of a format.
type Verb struct {
	Token string // as written: "%-10s", "%llu"
	Conv  byte   // one of d u o x X p c s r
}

// Verbs returns the format's conversions in order, one per argument.
func (p *Format) Verbs() []Verb {
	verbs := make([]Verb, len(p.parts))
	for i, part := range p.parts {
		verbs[i] = Verb{Token: part.token, Conv: part.spec.verb}
	}
	return verbs
}

// Strict returns a *FormatError for a '%' in the text after the last
// conversion that is not half of "%%". bpftrace prints such text as it
// is, but whoever wrote it meant a conversion bpftrace does not read
// (%i, %5.d, %lc) or a percent sign; the checker refuses it. (Parse
// refuses one before a conversion already: C would read it.)
func (p *Format) Strict() error {
	for i := 0; i < len(p.tail); i++ {
		if p.tail[i] != '%' {
			continue
		}
		if i+1 < len(p.tail) && p.tail[i+1] == '%' {
			i++
			continue
		}
		return notConversion(p.tail, i, p.tailOff, true)
	}
	return nil
}

// notConversion is the error for s[i] == '%', which starts no conversion
// bpftrace reads; off is s's offset in the format, end whether s is the
// format's end.
func notConversion(s string, i, off int, end bool) *FormatError {
	j := i + 1
	for j < len(s) && strings.IndexByte("-+ #0123456789.hljzt", s[j]) >= 0 {
		j++
	}
	if j == len(s) && end {
		return &FormatError{Off: off + i, Msg: fmt.Sprintf("the format ends inside the conversion %q", s[i:])}
	}
	tok := s[i:min(j+1, len(s))]
	var hint string
	switch {
	case strings.Contains(tok, ".") && !precisionDigits(tok):
		hint = ": a precision needs digits"
	case j < len(s) && strings.IndexByte("cs", s[j]) >= 0 && strings.ContainsAny(tok[1:len(tok)-1], "hljzt"):
		hint = ": %c and %s take no length"
	case strings.ContainsAny(tok, "+ #"):
		hint = ": the flags are - and 0"
	}
	return &FormatError{Off: off + i, Msg: tok + " is not a conversion bpftrace knows (it takes c s d u x X p o)" + hint + "; write %% for a percent sign"}
}

// precisionDigits reports whether each '.' of tok is followed by a digit.
func precisionDigits(tok string) bool {
	for k := 0; k < len(tok); k++ {
		if tok[k] == '.' && (k+1 == len(tok) || !isDigit(tok[k+1])) {
			return false
		}
	}
	return true
}

// FormatError reports a malformed printf format at byte Off.
type FormatError struct {
	Off int
	Msg string
}

func (e *FormatError) Error() string {
	return fmt.Sprintf("printf format at byte %d: %s", e.Off, e.Msg)
}

// matchVerb matches bpftrace's verb pattern at s[i] == '%'.
func matchVerb(s string, i int) (spec verbSpec, end int, ok bool) {
	spec.precision = -1
	j := i + 1
	if j < len(s) && s[j] == '-' {
		spec.left = true
		j++
	}
	if j < len(s) && s[j] == '0' {
		spec.zero = true
	}
	start := j
	for j < len(s) && isDigit(s[j]) {
		j++
	}
	spec.width = atoiSat(s[start:j])
	if j+1 < len(s) && s[j] == '.' && isDigit(s[j+1]) {
		j++
		start = j
		for j < len(s) && isDigit(s[j]) {
			j++
		}
		spec.precision = atoiSat(s[start:j])
	}
	spec.bits = 32
	for _, l := range []struct {
		s    string
		bits int
	}{{"hh", 8}, {"h", 16}, {"ll", 64}, {"l", 64}, {"j", 64}, {"z", 64}, {"t", 64}} {
		if strings.HasPrefix(s[j:], l.s) {
			if k := j + len(l.s); k < len(s) && strings.IndexByte("douxXp", s[k]) >= 0 {
				spec.bits, spec.verb = l.bits, s[k]
				return spec, k + 1, true
			}
			return spec, 0, false
		}
	}
	if j == i+1 && j < len(s) && s[j] == 'r' {
		// A buffer: %r, %rx (every byte in hex) or %rh (hex pairs),
		// without flags, width or precision, as bpftrace 0.17 reads.
		spec.verb = 'r'
		if k := j + 1; k < len(s) && (s[k] == 'x' || s[k] == 'h') {
			spec.rmode = s[k]
			return spec, k + 1, true
		}
		return spec, j + 1, true
	}
	if j < len(s) && strings.IndexByte("douxXpcs", s[j]) >= 0 {
		spec.verb = s[j]
		return spec, j + 1, true
	}
	return spec, 0, false
}

// FormatBuffer returns a buffer's bytes as bpftrace prints them: with
// mode 0 (%r, and buffers in maps) printable ASCII as is and other bytes
// as \xNN; 'x' (%rx) every byte as \xNN; 'h' (%rh) every byte as two hex
// digits, separated by spaces.
func FormatBuffer(b []byte, mode byte) string {
	var s strings.Builder
	for i, c := range b {
		switch {
		case mode == 0 && c >= 32 && c <= 126:
			s.WriteByte(c)
		case mode == 'h':
			if i > 0 {
				s.WriteByte(' ')
			}
			fmt.Fprintf(&s, "%02x", c)
		default:
			fmt.Fprintf(&s, "\\x%02x", c)
		}
	}
	return s.String()
}

// cLiteral is how C's printf prints lit, the text before a verb: "%%" as
// "%". skip reports that lit ends in an unpaired '%' that pairs with the
// verb's own. Any other '%' would start a conversion bpftrace does not
// know: an error at off plus its offset.
func cLiteral(lit string, off int) (string, bool, error) {
	if strings.IndexByte(lit, '%') < 0 {
		return lit, false, nil
	}
	var b strings.Builder
	for i := 0; i < len(lit); i++ {
		if lit[i] != '%' {
			b.WriteByte(lit[i])
			continue
		}
		switch {
		case i+1 == len(lit):
			return b.String() + "%", true, nil
		case lit[i+1] == '%':
			b.WriteByte('%')
			i++
		default:
			return "", false, notConversion(lit, i, off, false)
		}
	}
	return b.String(), false, nil
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// atoiSat parses decimal digits, saturating above maxPrintfWidth.
func atoiSat(s string) int {
	n := 0
	for _, c := range []byte(s) {
		n = n*10 + int(c-'0')
		if n > maxPrintfWidth {
			return maxPrintfWidth + 1
		}
	}
	return n
}

// Args returns what each argument must be, in order: one per verb.
func (p *Format) Args() []ArgKind {
	kinds := make([]ArgKind, len(p.parts))
	for i, part := range p.parts {
		kinds[i] = ArgInt
		switch part.spec.verb {
		case 's':
			kinds[i] = ArgString
		case 'r':
			kinds[i] = ArgBuffer
		}
	}
	return kinds
}

// Arg is one printf argument: Int for an integer verb (an argument of a
// narrower type extended to 64 bits by its sign first), Str for %s.
type Arg struct {
	Int int64
	Str string
	// Bytes are a buffer's, for %r.
	Bytes []byte
}

// Append formats args after dst as bpftrace 0.17's printf prints them.
// Missing arguments print as 0 or "".
func (p *Format) Append(dst []byte, args []Arg) []byte {
	for i, part := range p.parts {
		var a Arg
		if i < len(args) {
			a = args[i]
		}
		start := len(dst)
		dst = append(dst, part.lit...)
		if !part.skip {
			dst = part.spec.append(dst, a)
		}
		// bpftrace writes snprintf's buffer as a C string.
		if j := indexNUL(dst[start:]); j >= 0 {
			dst = dst[:start+j]
		}
	}
	return append(dst, p.tail...)
}

func indexNUL(b []byte) int {
	for i, c := range b {
		if c == 0 {
			return i
		}
	}
	return -1
}

// append formats a as C's printf formats one conversion.
func (s verbSpec) append(dst []byte, a Arg) []byte {
	var body, prefix string
	zeroPad := s.zero && !s.left
	switch s.verb {
	case 'r':
		body = FormatBuffer(a.Bytes, s.rmode)
		zeroPad = false
	case 's':
		body = a.Str
		if s.precision >= 0 && len(body) > s.precision {
			body = body[:s.precision]
		}
		// The traced process chose these bytes (a comm, a string):
		// a terminal must not act on them.
		body = escape.Control(body)
		zeroPad = false
	case 'c':
		body = string([]byte{byte(a.Int)})
		zeroPad = false
	case 'p':
		if a.Int == 0 {
			body, zeroPad = "(nil)", false
			break
		}
		prefix = "0x"
		body = digits(strconv.FormatUint(uint64(a.Int), 16), s.precision)
		zeroPad = zeroPad && s.precision < 0
	default:
		u := uint64(a.Int)
		var neg bool
		switch s.bits {
		case 8:
			u = uint64(uint8(u))
		case 16:
			u = uint64(uint16(u))
		case 32:
			u = uint64(uint32(u))
		}
		if s.verb == 'd' {
			v := int64(u<<(64-s.bits)) >> (64 - s.bits)
			if v < 0 {
				neg, u = true, uint64(-v)
			}
		}
		base := map[byte]int{'d': 10, 'u': 10, 'o': 8, 'x': 16, 'X': 16}[s.verb]
		body = strconv.FormatUint(u, base)
		if s.verb == 'X' {
			body = strings.ToUpper(body)
		}
		body = digits(body, s.precision)
		if neg {
			prefix = "-"
		}
		zeroPad = zeroPad && s.precision < 0
	}
	pad := max0(s.width - len(prefix) - len(body))
	switch {
	case s.left:
		dst = append(append(dst, prefix...), body...)
		return append(dst, strings.Repeat(" ", pad)...)
	case zeroPad:
		dst = append(dst, prefix...)
		dst = append(dst, strings.Repeat("0", pad)...)
		return append(dst, body...)
	}
	dst = append(dst, strings.Repeat(" ", pad)...)
	return append(append(dst, prefix...), body...)
}

// digits applies a C integer precision: at least prec digits, and none
// for a zero value with precision 0.
func digits(s string, prec int) string {
	switch {
	case prec < 0:
		return s
	case prec == 0 && s == "0":
		return ""
	case len(s) < prec:
		return strings.Repeat("0", prec-len(s)) + s
	}
	return s
}

func max0(n int) int { return max(n, 0) }
