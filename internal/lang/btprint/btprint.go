package btprint

import (
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/usdtkit/usdtkit/internal/escape"
	"github.com/usdtkit/usdtkit/internal/lang/layout"
)

// Output is the form bpftrace prints in: its text, or the JSON lines of
// `bpftrace -f json`.
type Output uint8

const (
	OutputText Output = iota
	OutputJSON
)

// PrintOptions are print(@m, top, div)'s arguments. The zero value prints
// every entry undivided.
type PrintOptions struct {
	// Top, if not zero, prints only the last Top entries in print order
	// (the largest). stats() maps ignore it, as bpftrace does.
	Top int
	// Div, if not zero, divides every printed value by it (rounding toward
	// zero): integers, averages and hist counts (not the bars, which are
	// drawn from the undivided counts). lhist and stats ignore it.
	Div uint32
}

// AppendMap appends map m as bpftrace 0.17 prints it with print(@m) or
// print(@m, top, div), or for each map at exit (see AppendExit): entries
// sorted as sortedEntries describes, keys as "@m[k1, k2]", hist and lhist
// as bpftrace draws them. An empty map prints "\n" in text ("\n\n" for avg
// and stats) and nothing in JSON. A map without key prints only its
// first entry. opts may be nil.
//
// Where bpftrace 0.17 prints a wrong number usdtkit prints the right one:
// JSON hist bounds from 2^31 up (bpftrace overflows an int), and bytes
// >= 0x80 in JSON strings (bpftrace writes "\uffffffc3"; here valid UTF-8
// is kept and other bytes become U+FFFD).
func AppendMap(dst []byte, m *Map, out Output, opts *PrintOptions) []byte {
	var o PrintOptions
	if opts != nil {
		o = *opts
	}
	if o.Div == 0 {
		o.Div = 1
	}
	idx := sortedEntries(m)
	if len(m.Keys) == 0 && len(idx) > 1 {
		idx = []int{0} // a map without key has one entry
	}
	if o.Top > 0 && len(idx) > o.Top && m.Agg != AggStats {
		idx = idx[len(idx)-o.Top:]
	}
	if out == OutputJSON {
		return appendMapJSON(dst, m, idx, o)
	}
	for n, i := range idx {
		e := &m.Entries[i]
		if n > 0 {
			dst = append(dst, '\n')
		}
		dst = append(dst, m.Name...)
		dst = appendKeyText(dst, m, e)
		dst = append(dst, ": "...)
		switch m.Agg {
		case AggHist:
			dst = append(dst, '\n')
			dst = appendHistText(dst, e, o.Div)
		case AggLhist:
			dst = append(dst, '\n')
			dst = appendLhistText(dst, e, m.Lhist)
		case AggStats:
			dst = append(dst, "count "...)
			dst = strconv.AppendInt(dst, e.Count, 10)
			dst = append(dst, ", average "...)
			dst = strconv.AppendInt(dst, average(e), 10)
			dst = append(dst, ", total "...)
			dst = strconv.AppendInt(dst, e.Total, 10)
		default:
			dst = appendValue(dst, m, e, o.Div, false)
		}
	}
	dst = append(dst, '\n')
	if m.Agg == AggStats || m.Agg == AggAvg {
		dst = append(dst, '\n')
	}
	return dst
}

// AppendExit appends what bpftrace prints after exit() or Ctrl-C: two
// newlines (also in JSON mode, as bpftrace writes them), then AppendMaps.
func AppendExit(dst []byte, maps []*Map, out Output) []byte {
	return AppendMaps(append(dst, "\n\n"...), maps, out)
}

// AppendMaps appends every map in byte order of their names, each as
// AppendMap prints it: what bpftrace prints on SIGUSR1, and at exit after
// two newlines.
func AppendMaps(dst []byte, maps []*Map, out Output) []byte {
	sorted := slices.Clone(maps)
	slices.SortStableFunc(sorted, func(a, b *Map) int { return strings.Compare(a.Name, b.Name) })
	for _, m := range sorted {
		dst = AppendMap(dst, m, out, nil)
	}
	return dst
}

// AppendAttached appends bpftrace's first line: "Attaching 1 probe...",
// "Attaching N probes...", or its JSON form.
func AppendAttached(dst []byte, probes int, out Output) []byte {
	if out == OutputJSON {
		dst = append(dst, `{"type": "attached_probes", "data": {"probes": `...)
		dst = strconv.AppendInt(dst, int64(probes), 10)
		return append(dst, "}}\n"...)
	}
	dst = append(dst, "Attaching "...)
	dst = strconv.AppendInt(dst, int64(probes), 10)
	if probes == 1 {
		return append(dst, " probe...\n"...)
	}
	return append(dst, " probes...\n"...)
}

// AppendLost appends bpftrace's report of events the kernel dropped
// because the buffer was full: "Lost N events", or its JSON form.
func AppendLost(dst []byte, lost uint64, out Output) []byte {
	if out == OutputJSON {
		dst = append(dst, `{"type": "lost_events", "data": {"events": `...)
		dst = strconv.AppendUint(dst, lost, 10)
		return append(dst, "}}\n"...)
	}
	dst = append(dst, "Lost "...)
	dst = strconv.AppendUint(dst, lost, 10)
	return append(dst, " events\n"...)
}

// AppendMessage appends a text message as is, or as a JSON line of the
// given type, as bpftrace prints the output of cat() ("cat") and
// system() ("syscall"): {"type": "cat", "data": "…"}.
func AppendMessage(dst []byte, typ string, msg []byte, out Output) []byte {
	return appendMessage(dst, typ, msg, out)
}

// appendMessage appends a text message as is, or as a JSON line of the
// given type ("printf", "time").
func appendMessage(dst []byte, typ string, msg []byte, out Output) []byte {
	if out != OutputJSON {
		return append(dst, msg...)
	}
	dst = append(dst, `{"type": "`...)
	dst = append(dst, typ...)
	dst = append(dst, `", "data": "`...)
	dst = appendJSONEscaped(dst, string(msg))
	return append(dst, "\"}\n"...)
}

// keyStrings are an entry's key fields as bpftrace prints them.
func keyStrings(m *Map, e *MapEntry) []string {
	s := make([]string, len(m.Keys))
	for f, field := range m.Keys {
		k := e.key(f)
		switch field.Kind {
		case layout.KeyInt:
			s[f] = strconv.FormatInt(k.Int, 10)
		case layout.KeyString:
			s[f] = keyStr(field, k.Str)
		default:
			s[f] = k.Str
		}
	}
	return s
}

func appendKeyText(dst []byte, m *Map, e *MapEntry) []byte {
	if len(m.Keys) == 0 {
		return dst
	}
	dst = append(dst, '[')
	dst = append(dst, escape.Control(strings.Join(keyStrings(m, e), ", "))...)
	return append(dst, ']')
}

// appendValue appends an integer- or string-valued entry's value; quoted
// puts strings in JSON quotes.
func appendValue(dst []byte, m *Map, e *MapEntry, div uint32, quoted bool) []byte {
	v := e.Value
	switch m.Agg {
	case AggValue:
		if quoted {
			return appendC(dst, m.Value, e.Raw, cJSON)
		}
		return appendC(dst, m.Value, e.Raw, cText)
	case AggString:
		if quoted {
			dst = append(dst, '"')
			dst = appendJSONEscaped(dst, e.Str)
			return append(dst, '"')
		}
		return append(dst, escape.Control(e.Str)...)
	case AggTuple:
		if quoted {
			return appendValueJSON(dst, e.Tuple)
		}
		// Its strings are the traced process's, as AggString's.
		return append(dst, escape.Control(string(appendValueText(nil, e.Tuple)))...)
	case AggAvg:
		return strconv.AppendInt(dst, average(e)/int64(div), 10)
	case AggCount:
		return strconv.AppendUint(dst, v/uint64(div), 10)
	case AggMin, AggMax:
		return strconv.AppendInt(dst, int64(v)/int64(div), 10)
	case AggInt:
		v = m.intValue(e)
	}
	if m.Signed {
		return strconv.AppendInt(dst, int64(v)/int64(div), 10)
	}
	return strconv.AppendUint(dst, v/uint64(div), 10)
}

// histWidth is the width of the bar of the largest bucket, as bpftrace's.
const histWidth = 52

// histBar is bpftrace's bar length: count/max*52 in float, truncated.
func histBar(n, max uint64) int {
	if max == 0 {
		return 0
	}
	q := float32(float32(n) / float32(max))
	return int(float32(q * histWidth))
}

// appendHistLine appends one bucket's line: the range left-aligned in 16
// columns, the count right-aligned in 8, the bar in 52.
func appendHistLine(dst []byte, label string, count uint64, bar int) []byte {
	dst = append(dst, label...)
	c := strconv.FormatUint(count, 10)
	dst = append(dst, strings.Repeat(" ", max0(16-len(label))+max0(8-len(c)))...)
	dst = append(dst, c...)
	dst = append(dst, " |"...)
	dst = append(dst, strings.Repeat("@", bar)...)
	dst = append(dst, strings.Repeat(" ", max0(histWidth-bar))...)
	return append(dst, "|\n"...)
}

// histRange is the first and last non-empty bucket of n, and the largest
// count; first is -1 if all are empty.
func histRange(e *MapEntry, n int) (first, last int, max uint64) {
	first, last = -1, -1
	for i := 0; i < min(n, len(e.Buckets)); i++ {
		v := e.bucket(i)
		if v == 0 {
			continue
		}
		if first < 0 {
			first = i
		}
		last = i
		max = maxU(max, v)
	}
	return first, last, max
}

func appendHistText(dst []byte, e *MapEntry, div uint32) []byte {
	first, last, max := histRange(e, layout.HistBucketsBT)
	for i := first; first >= 0 && i <= last; i++ {
		dst = appendHistLine(dst, histLabelBT(i), e.bucket(i)/uint64(div), histBar(e.bucket(i), max))
	}
	return dst
}

// histLabelBT is bpftrace's label of log2 bucket i.
func histLabelBT(i int) string {
	switch i {
	case 0:
		return "(..., 0)"
	case 1:
		return "[0]"
	case 2:
		return "[1]"
	}
	return "[" + histPowLabel(i-2) + ", " + histPowLabel(i-1) + ")"
}

// histPowLabel is 2^p with bpftrace's suffixes, of which T is the last:
// 2^50 is "1024T".
func histPowLabel(p int) string {
	suffix := ""
	for _, s := range []struct {
		p      int
		suffix string
	}{{40, "T"}, {30, "G"}, {20, "M"}, {10, "K"}} {
		if p >= s.p {
			p, suffix = p-s.p, s.suffix
			break
		}
	}
	return strconv.FormatUint(1<<p, 10) + suffix
}

// lhistLabel is bpftrace's lhist bound: with K or M when a multiple of
// 1024 or 1048576.
func lhistLabel(n int64) string {
	switch {
	case n == 0:
		return "0"
	case n%(1<<20) == 0:
		return strconv.FormatInt(n/(1<<20), 10) + "M"
	case n%(1<<10) == 0:
		return strconv.FormatInt(n/(1<<10), 10) + "K"
	}
	return strconv.FormatInt(n, 10)
}

func lhistBucketLabel(r layout.LinearRange, i int) string {
	n := r.Buckets()
	switch i {
	case 0:
		return "(..., " + lhistLabel(r.Min) + ")"
	case n - 1:
		return "[" + lhistLabel(r.Max) + ", ...)"
	}
	return "[" + lhistLabel(int64(i-1)*r.Step+r.Min) + ", " + lhistLabel(int64(i)*r.Step+r.Min) + ")"
}

func appendLhistText(dst []byte, e *MapEntry, r layout.LinearRange) []byte {
	first, last, max := histRange(e, r.Buckets())
	for i := first; first >= 0 && i <= last; i++ {
		dst = appendHistLine(dst, lhistBucketLabel(r, i), e.bucket(i), histBar(e.bucket(i), max))
	}
	return dst
}

// appendMapJSON is AppendMap's JSON form: one line
// {"type": T, "data": {"@m": V}} where V is the value of a map without
// key, else an object from the joined key fields to values.
func appendMapJSON(dst []byte, m *Map, idx []int, o PrintOptions) []byte {
	if len(idx) == 0 {
		return dst
	}
	typ := "map"
	switch m.Agg {
	case AggHist, AggLhist:
		typ = "hist"
	case AggAvg, AggStats:
		typ = "stats"
	}
	dst = append(dst, `{"type": "`...)
	dst = append(dst, typ...)
	dst = append(dst, `", "data": {"`...)
	dst = appendJSONEscaped(dst, m.Name)
	dst = append(dst, `": `...)
	keyed := len(m.Keys) > 0
	if keyed {
		dst = append(dst, '{')
	}
	for n, i := range idx {
		e := &m.Entries[i]
		if n > 0 {
			dst = append(dst, ", "...)
		}
		if keyed {
			dst = append(dst, '"')
			dst = appendJSONEscaped(dst, strings.Join(keyStrings(m, e), ","))
			dst = append(dst, `": `...)
		}
		switch m.Agg {
		case AggHist:
			dst = appendHistJSON(dst, e, o.Div)
		case AggLhist:
			dst = appendLhistJSON(dst, e, m.Lhist)
		case AggStats:
			dst = append(dst, `{"count": `...)
			dst = strconv.AppendInt(dst, e.Count, 10)
			dst = append(dst, `, "average": `...)
			dst = strconv.AppendInt(dst, average(e), 10)
			dst = append(dst, `, "total": `...)
			dst = strconv.AppendInt(dst, e.Total, 10)
			dst = append(dst, '}')
		default:
			dst = appendValue(dst, m, e, o.Div, true)
		}
	}
	if keyed {
		dst = append(dst, '}')
	}
	return append(dst, "}}\n"...)
}

func appendBucketJSON(dst []byte, n int, min, max string, count uint64) []byte {
	if n > 0 {
		dst = append(dst, ", "...)
	}
	dst = append(dst, '{')
	if min != "" {
		dst = append(dst, `"min": `...)
		dst = append(dst, min...)
		dst = append(dst, ", "...)
	}
	if max != "" {
		dst = append(dst, `"max": `...)
		dst = append(dst, max...)
		dst = append(dst, ", "...)
	}
	dst = append(dst, `"count": `...)
	dst = strconv.AppendUint(dst, count, 10)
	return append(dst, '}')
}

func appendHistJSON(dst []byte, e *MapEntry, div uint32) []byte {
	first, last, _ := histRange(e, layout.HistBucketsBT)
	dst = append(dst, '[')
	for i := first; first >= 0 && i <= last; i++ {
		var min, max string
		switch i {
		case 0:
			max = "-1"
		case 1:
			min, max = "0", "0"
		default:
			lo := uint64(1) << (i - 2)
			min, max = strconv.FormatUint(lo, 10), strconv.FormatUint(2*lo-1, 10)
		}
		dst = appendBucketJSON(dst, i-first, min, max, e.bucket(i)/uint64(div))
	}
	return append(dst, ']')
}

func appendLhistJSON(dst []byte, e *MapEntry, r layout.LinearRange) []byte {
	first, last, _ := histRange(e, r.Buckets())
	dst = append(dst, '[')
	for i := first; first >= 0 && i <= last; i++ {
		var min, max string
		switch i {
		case 0:
			max = strconv.FormatInt(r.Min-1, 10)
		case r.Buckets() - 1:
			min = strconv.FormatInt(r.Max, 10)
		default:
			min = strconv.FormatInt(int64(i-1)*r.Step+r.Min, 10)
			max = strconv.FormatInt(int64(i)*r.Step+r.Min-1, 10)
		}
		dst = appendBucketJSON(dst, i-first, min, max, e.bucket(i))
	}
	return append(dst, ']')
}

// appendJSONEscaped escapes s as bpftrace's json_escape does for ASCII:
// \" \\ \n \r \t, other control bytes as \u00XX. Valid UTF-8 is kept;
// other bytes become \ufffd.
func appendJSONEscaped(dst []byte, s string) []byte {
	const hex = "0123456789abcdef"
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == '"':
			dst = append(dst, `\"`...)
		case c == '\\':
			dst = append(dst, `\\`...)
		case c == '\n':
			dst = append(dst, `\n`...)
		case c == '\r':
			dst = append(dst, `\r`...)
		case c == '\t':
			dst = append(dst, `\t`...)
		case c < 0x20:
			dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&15])
		case c < utf8.RuneSelf:
			dst = append(dst, c)
		default:
			r, size := utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError && size == 1 {
				dst = append(dst, `\ufffd`...)
			} else {
				dst = append(dst, s[i:i+size]...)
			}
			i += size
			continue
		}
		i++
	}
	return dst
}

// ValueKind is the type of a value print() prints that is not a map.
type ValueKind uint8

const (
	ValueInt    ValueKind = iota + 1 // Value.Int, read as Value.Signed says
	ValueString                      // Value.Str
	ValueTuple                       // Value.Elems
	ValueC                           // Value.Raw, a C struct, union or array laid out as Value.C says
)

// Value is a value print(x) prints when x is not a map: an integer, a
// string or a tuple of values.
type Value struct {
	Kind   ValueKind
	Int    int64 // the 64 bits of an integer, extended by its type's sign
	Signed bool
	Str    string
	Elems  []Value
	C      *layout.CValue
	Raw    []byte
}

// AppendValue appends v as bpftrace's print(v) prints it: the value and a
// newline ("(1, abc)" for a tuple), or {"type": "value", "data": V} with
// strings quoted and tuples as JSON arrays.
func AppendValue(dst []byte, v Value, out Output) []byte {
	if out == OutputJSON {
		dst = append(dst, `{"type": "value", "data": `...)
		dst = appendValueJSON(dst, v)
		return append(dst, "}\n"...)
	}
	return append(appendValueText(dst, v), '\n')
}

func appendValueText(dst []byte, v Value) []byte {
	switch v.Kind {
	case ValueC:
		return appendC(dst, v.C, v.Raw, cText)
	case ValueString:
		return append(dst, v.Str...)
	case ValueTuple:
		dst = append(dst, '(')
		for i, e := range v.Elems {
			if i > 0 {
				dst = append(dst, ", "...)
			}
			dst = appendValueText(dst, e)
		}
		return append(dst, ')')
	}
	if v.Signed {
		return strconv.AppendInt(dst, v.Int, 10)
	}
	return strconv.AppendUint(dst, uint64(v.Int), 10)
}

func appendValueJSON(dst []byte, v Value) []byte {
	switch v.Kind {
	case ValueC:
		return appendC(dst, v.C, v.Raw, cJSON)
	case ValueString:
		dst = append(dst, '"')
		dst = appendJSONEscaped(dst, v.Str)
		return append(dst, '"')
	case ValueTuple:
		dst = append(dst, '[')
		for i, e := range v.Elems {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendValueJSON(dst, e)
		}
		return append(dst, ']')
	}
	return appendValueText(dst, v)
}

func maxU(a, b uint64) uint64 {
	if a > b {
		return a
	}
	return b
}

func max0(n int) int {
	if n < 0 {
		return 0
	}
	return n
}
