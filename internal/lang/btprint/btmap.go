package btprint

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"slices"
	"strconv"
	"strings"

	"github.com/usdtkit/usdtkit/internal/lang/layout"
)

// Agg says how the values of a bpftrace map were made: by assignment or by
// one of bpftrace's aggregation functions. It decides how MapEntry's fields
// are read, how entries are sorted and how they are drawn.
type Agg uint8

const (
	AggInt    Agg = iota + 1 // @m = integer: MapEntry.Value, read as Map.Signed says
	AggString                // @m = string: MapEntry.Str
	AggCount                 // count(): MapEntry.Value, unsigned
	AggSum                   // sum(x): MapEntry.Value, read as Map.Signed says
	AggMin                   // min(x): MapEntry.Value, signed
	AggMax                   // max(x): MapEntry.Value, signed
	AggAvg                   // avg(x): MapEntry.Count and MapEntry.Total
	AggStats                 // stats(x): MapEntry.Count and MapEntry.Total
	AggHist                  // hist(x): MapEntry.Buckets, indexed by layout.HistIndex
	AggLhist                 // lhist(x, min, max, step): MapEntry.Buckets, indexed by Map.Lhist.Index
	AggTuple                 // @m = tuple: MapEntry.Tuple
	AggValue                 // @m = a C struct, union or array: MapEntry.Raw, laid out as Map.Value says
)

var aggNames = [...]string{"", "int", "string", "count", "sum", "min", "max", "avg", "stats", "hist", "lhist", "tuple", "value"}

func (a Agg) String() string {
	if int(a) < len(aggNames) && a != 0 {
		return aggNames[a]
	}
	return "Agg(" + strconv.Itoa(int(a)) + ")"
}

// Key is the value of one key field: Int for layout.KeyInt (an integer key of a
// narrower or unsigned type is extended to 64 bits by its type's sign
// first, as bpftrace does), Str for layout.KeyString, both for layout.KeyStack,
// Str (as AppendCKey prints it) for layout.KeyValue.
type Key struct {
	Int int64
	Str string
}

// Map is the user-space image of one bpftrace map: its name, the types of
// its key and values, and its entries in any order. It is plain data; the
// printers read it without changing it, so a Map may be printed from
// several goroutines at once.
type Map struct {
	Name string            // as written: "@" or "@name"
	Keys []layout.KeyField // nil for a map without key (@x = 1)
	Agg  Agg
	// Signed says whether AggInt and AggSum values are signed.
	Signed bool
	// Bits is an AggInt value's width: 8, 16, 32 or 64 (0 means 64); the
	// value prints truncated to it.
	Bits int
	// Lhist is an AggLhist map's range.
	Lhist layout.LinearRange
	// Value lays out an AggValue map's values.
	Value   *layout.CValue
	Entries []MapEntry
}

// MapEntry is one key of a map and its aggregated value, summed over CPUs
// by the caller. Only the fields Map.Agg names are read.
type MapEntry struct {
	Key []Key // one per Map.Keys field
	// Value is an AggInt, AggCount, AggSum, AggMin or AggMax value as the
	// 64 bits the BPF map holds; Map.Agg and Map.Signed say how to read it.
	Value uint64
	Str   string // AggString
	// Tuple is an AggTuple value (Kind ValueTuple).
	Tuple Value
	Raw   []byte // AggValue
	// Count and Total are the number and sum of the values of an avg() or
	// stats(); the average printed is Total/Count rounded toward zero.
	Count, Total int64
	// Buckets are hist() counts indexed by layout.HistIndex (at most
	// layout.HistBucketsBT), or lhist() counts indexed by layout.LinearRange.Index. Missing
	// buckets count zero.
	Buckets []uint64
}

// sortedEntries returns the order in which bpftrace prints m's entries:
// integer-valued maps (int, count, sum, min, max) by value ascending,
// hist and lhist by the sum of their buckets, avg and stats by their
// average, string-valued maps by key. bpftrace orders equal values of
// integer-valued maps as the kernel's hash table returns them, which
// varies from run to run; here they come in key order. For the other
// maps the order, ties included, is bpftrace's: it sorts the entries held
// in key-byte order with libstdc++'s std::sort, which stdSort reproduces.
func sortedEntries(m *Map) []int {
	idx := make([]int, len(m.Entries))
	for i := range idx {
		idx[i] = i
	}
	e := m.Entries
	switch m.Agg {
	case AggInt, AggCount, AggSum, AggMin, AggMax:
		sortByKey(m, idx)
		signed := m.Agg == AggMin || m.Agg == AggMax || (m.Signed && m.Agg != AggCount)
		stdSort(idx, func(a, b int) bool {
			va, vb := m.intValue(&e[a]), m.intValue(&e[b])
			if signed {
				return int64(va) < int64(vb)
			}
			return va < vb
		})
	case AggHist, AggLhist:
		sortByKeyBytes(m, idx)
		sums := make([]uint64, len(e))
		for i := range e {
			for _, n := range e[i].Buckets {
				sums[i] += n
			}
		}
		stdSort(idx, func(a, b int) bool { return sums[a] < sums[b] })
	case AggAvg, AggStats:
		sortByKeyBytes(m, idx)
		stdSort(idx, func(a, b int) bool { return average(&e[a]) < average(&e[b]) })
	default:
		sortByKey(m, idx)
	}
	return idx
}

// intValue is an integer entry's value as its type reads it: an AggInt
// value of Bits < 64 truncated and extended by its sign.
func (m *Map) intValue(e *MapEntry) uint64 {
	v := e.Value
	if m.Agg != AggInt || m.Bits <= 0 || m.Bits >= 64 {
		return v
	}
	shift := 64 - uint(m.Bits)
	if m.Signed {
		return uint64(int64(v<<shift) >> shift)
	}
	return v << shift >> shift
}

// average is bpftrace's: Total/Count truncated, 0 without samples.
func average(e *MapEntry) int64 {
	if e.Count == 0 {
		return 0
	}
	if e.Count == -1 && e.Total == -1<<63 {
		return e.Total // the one overflowing division; C++ leaves it undefined
	}
	return e.Total / e.Count
}

// keyStr is a string key as the map holds it.
func keyStr(f layout.KeyField, s string) string {
	if f.Size > 0 && len(s) > f.Size-1 {
		s = s[:f.Size-1]
	}
	if i := strings.IndexByte(s, 0); i >= 0 {
		s = s[:i]
	}
	return s
}

// sortByKey is bpftrace's sort_by_key: stable sorts from the last key
// field to the first, integers compared as unsigned 64-bit numbers,
// strings byte-wise, stacks not at all.
func sortByKey(m *Map, idx []int) {
	for f := len(m.Keys) - 1; f >= 0; f-- {
		field := m.Keys[f]
		switch field.Kind {
		case layout.KeyInt:
			slices.SortStableFunc(idx, func(a, b int) int {
				return cmp.Compare(uint64(m.Entries[a].key(f).Int), uint64(m.Entries[b].key(f).Int))
			})
		case layout.KeyString:
			slices.SortStableFunc(idx, func(a, b int) int {
				return strings.Compare(keyStr(field, m.Entries[a].key(f).Str), keyStr(field, m.Entries[b].key(f).Str))
			})
		}
	}
}

// sortByKeyBytes orders entries as a std::map keyed by the key's bytes
// does: field by field, integers by their little-endian bytes, strings
// byte-wise (NUL-padded to a common size), stacks by id.
func sortByKeyBytes(m *Map, idx []int) {
	slices.SortStableFunc(idx, func(a, b int) int {
		for f, field := range m.Keys {
			ka, kb := m.Entries[a].key(f), m.Entries[b].key(f)
			var c int
			switch field.Kind {
			case layout.KeyString:
				c = strings.Compare(keyStr(field, ka.Str), keyStr(field, kb.Str))
			default:
				var ba, bb [8]byte
				binary.LittleEndian.PutUint64(ba[:], uint64(ka.Int))
				binary.LittleEndian.PutUint64(bb[:], uint64(kb.Int))
				c = bytes.Compare(ba[:], bb[:])
			}
			if c != 0 {
				return c
			}
		}
		return 0
	})
}

// key is field f of e's key, zero if the entry lacks it.
func (e *MapEntry) key(f int) Key {
	if f < len(e.Key) {
		return e.Key[f]
	}
	return Key{}
}

// bucket is bucket i, zero past the end.
func (e *MapEntry) bucket(i int) uint64 {
	if i >= 0 && i < len(e.Buckets) {
		return e.Buckets[i]
	}
	return 0
}
