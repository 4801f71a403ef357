package btlang

import (
	"strconv"
	"strings"
)

// Kind is the kind of a value.
type Kind uint8

const (
	// KindNone is the type of statements-only calls (printf, exit…) and of
	// expressions before Check.
	KindNone Kind = iota
	// KindInt is an integer of Type.Size bytes, signed if Type.Signed.
	KindInt
	// KindString is a NUL-terminated string of at most Type.Size bytes,
	// the NUL included.
	KindString
	// KindTuple is a tuple of Type.Elems.
	KindTuple
	// KindStack is a user stack of at most Type.Size frames (ustack).
	KindStack
	// KindProbe is the probe that fired (the probe builtin): the back end
	// stores which probe it was and prints its full name, as bpftrace does.
	KindProbe
	// KindSym is the traced function's name (the func builtin); the back
	// end stores which function, as for KindProbe, and prints its name.
	KindSym
	// KindUsym is a code address of the process that hit the probe,
	// printed as the name of the function it is in (usym()); the back
	// end stores the address and the process.
	KindUsym
	// KindUsername is the user id of the task that hit the probe,
	// printed as the user's name (the username builtin); the back end
	// stores the id.
	KindUsername
	// KindBuf is a buffer of at most Type.Size bytes (buf()), stored
	// with its length; printed with %r.
	KindBuf
	// KindTimestamp is a time as strftime(FORMAT, ns) makes it: the
	// back end stores which format and the nanoseconds since boot,
	// printed in local time by the format.
	KindTimestamp
	// KindInet is an IP address as ntop() makes it: its address family
	// and its bytes, printed as inet_ntop(3) prints them.
	KindInet
	// KindPtr is a C pointer to a value of type *Type.Elem (nil: void),
	// 8 bytes, an address in the traced process.
	KindPtr
	// KindArray is a C array of Type.Len values of type *Type.Elem.
	KindArray
	// KindRecord is a C struct or union, Type.Record.
	KindRecord
)

var kindNames = [...]string{"none", "int", "string", "tuple", "stack", "probe", "sym", "usym", "username", "buffer", "timestamp", "inet", "pointer", "array", "record"}

func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return "Kind(" + strconv.Itoa(int(k)) + ")"
}

// Type is the resolved type of an expression, a map key or a map value.
// Types are values; compare them with Equal.
type Type struct {
	Kind   Kind
	Signed bool // KindInt
	Size   int  // bytes for KindInt and KindString; frames for KindStack
	// Perf is ustack(perf)'s mode: frames print with address and object.
	Perf  bool
	Elems []Type // KindTuple
	// Elem is what a KindPtr points to (nil: void) and a KindArray's
	// element; Len is a KindArray's length.
	Elem *Type
	Len  int
	// Record is a KindRecord's definition.
	Record *Record
}

// The 64-bit integer types, which all integer expressions have.
var (
	int64T  = Type{Kind: KindInt, Signed: true, Size: 8}
	uint64T = Type{Kind: KindInt, Size: 8}
)

// StringType returns a string type of at most n bytes, NUL included.
func StringType(n int) Type { return Type{Kind: KindString, Size: n} }

// Equal reports whether t and u are the same type.
func (t Type) Equal(u Type) bool {
	if t.Kind != u.Kind || t.Signed != u.Signed || t.Size != u.Size || t.Perf != u.Perf || len(t.Elems) != len(u.Elems) ||
		t.Len != u.Len || t.Record != u.Record || (t.Elem == nil) != (u.Elem == nil) {
		return false
	}
	if t.Elem != nil && !t.Elem.Equal(*u.Elem) {
		return false
	}
	for i := range t.Elems {
		if !t.Elems[i].Equal(u.Elems[i]) {
			return false
		}
	}
	return true
}

// compatible reports whether a value of type u may be stored where t is:
// same kinds, any integer size or sign, any string length, tuples element
// by element.
func (t Type) compatible(u Type) bool {
	if t.Kind != u.Kind || t.Kind == KindStack && (t.Perf != u.Perf || t.Size != u.Size) {
		return false
	}
	switch t.Kind {
	case KindPtr, KindArray, KindRecord:
		return t.Equal(u)
	}
	if t.Kind != KindTuple {
		return true
	}
	if len(t.Elems) != len(u.Elems) {
		return false
	}
	for i := range t.Elems {
		if !t.Elems[i].compatible(u.Elems[i]) {
			return false
		}
	}
	return true
}

// widen returns the type that holds values of t and u (which are compatible):
// 64-bit integers, signed if t is, and the longer string.
func (t Type) widen(u Type) Type {
	switch t.Kind {
	case KindInt:
		return Type{Kind: KindInt, Signed: t.Signed, Size: 8}
	case KindString, KindStack, KindBuf:
		return Type{Kind: t.Kind, Size: max(t.Size, u.Size), Perf: t.Perf}
	case KindTuple:
		elems := make([]Type, len(t.Elems))
		for i := range elems {
			elems[i] = t.Elems[i].widen(u.Elems[i])
		}
		return Type{Kind: KindTuple, Elems: elems}
	}
	return t
}

// String returns the type as bpftrace names it: int64, uint32, string[64],
// (int64,string[16]), ustack[127], probe, usym.
func (t Type) String() string {
	switch t.Kind {
	case KindInt:
		s := "int" + strconv.Itoa(t.Size*8)
		if !t.Signed {
			s = "u" + s
		}
		return s
	case KindString:
		return "string[" + strconv.Itoa(t.Size) + "]"
	case KindStack:
		if t.Perf {
			return "ustack(perf)[" + strconv.Itoa(t.Size) + "]"
		}
		return "ustack[" + strconv.Itoa(t.Size) + "]"
	case KindProbe:
		return "probe"
	case KindSym, KindUsym:
		return "usym"
	case KindUsername:
		return "username"
	case KindBuf:
		return "buffer[" + strconv.Itoa(t.Size) + "]"
	case KindTimestamp:
		return "timestamp"
	case KindInet:
		return "inet"
	case KindPtr:
		if t.Elem == nil {
			return "void *"
		}
		if t.Elem.Kind == KindPtr {
			return t.Elem.String() + "*"
		}
		return t.Elem.String() + " *"
	case KindArray:
		// int32[2][4]: the outer length first, as C declares it.
		dims := ""
		e := t
		for e.Kind == KindArray && e.Elem != nil {
			dims += "[" + strconv.Itoa(e.Len) + "]"
			e = *e.Elem
		}
		return e.String() + dims
	case KindRecord:
		if t.Record == nil {
			return "struct"
		}
		return t.Record.String()
	case KindTuple:
		parts := make([]string, len(t.Elems))
		for i, e := range t.Elems {
			parts[i] = e.String()
		}
		return "(" + strings.Join(parts, ",") + ")"
	}
	return "none"
}

// AggKind is the aggregation a map holds, if any.
type AggKind uint8

const (
	AggNone AggKind = iota
	AggCount
	AggSum
	AggAvg
	AggMin
	AggMax
	AggStats
	AggHist
	AggLhist
)

var aggNames = [...]string{"", "count", "sum", "avg", "min", "max", "stats", "hist", "lhist"}

// String returns the aggregation function's name ("" for AggNone).
func (a AggKind) String() string {
	if int(a) < len(aggNames) {
		return aggNames[a]
	}
	return "AggKind(" + strconv.Itoa(int(a)) + ")"
}

func aggByName(name string) AggKind {
	for i, n := range aggNames {
		if i > 0 && n == name {
			return AggKind(i)
		}
	}
	return AggNone
}

// String describes the map for diagnostics and tests: its name, key types
// and value, as "@lat[uint64, string[16]] hist(uint64)" or "@n int64".
func (m *Map) String() string {
	s := m.Name
	if m.Keys != nil {
		s += "[" + typeList(m.Keys) + "]"
	}
	switch m.Agg {
	case AggNone:
		return s + " " + m.Value.String()
	case AggCount:
		return s + " count()"
	case AggLhist:
		return s + " lhist(" + m.AggArg.String() + ", " + strconv.FormatInt(m.LhistMin, 10) + ", " +
			strconv.FormatInt(m.LhistMax, 10) + ", " + strconv.FormatInt(m.LhistStep, 10) + ")"
	}
	return s + " " + m.Agg.String() + "(" + m.AggArg.String() + ")"
}
