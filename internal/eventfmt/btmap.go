package eventfmt

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"math/bits"
	"slices"
	"strconv"
	"strings"
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
	AggHist                  // hist(x): MapEntry.Buckets, indexed by HistIndex
	AggLhist                 // lhist(x, min, max, step): MapEntry.Buckets, indexed by Map.Lhist.Index
)

var aggNames = [...]string{"", "int", "string", "count", "sum", "min", "max", "avg", "stats", "hist", "lhist"}

func (a Agg) String() string {
	if int(a) < len(aggNames) && a != 0 {
		return aggNames[a]
	}
	return "Agg(" + strconv.Itoa(int(a)) + ")"
}

// KeyKind is the type of one field of a map's key.
type KeyKind uint8

const (
	KeyInt    KeyKind = iota + 1 // an integer, stored as bpftrace 0.17 stores every integer key: 64 bits
	KeyString                    // a string of at most KeyField.Size-1 bytes
	// KeyStack is a stack (ustack): Key.Int holds the stack id, Key.Str the
	// stack already symbolized as bpftrace prints it. bpftrace does not sort
	// by stacks; neither does this package.
	KeyStack
)

// KeyField describes one field of a map's key.
type KeyField struct {
	Kind KeyKind
	// Size is a string field's size in bytes in the BPF map, NUL included
	// (bpftrace's default string size is 64). Zero means no limit. Strings
	// longer than Size-1 bytes are cut to Size-1, as the kernel would have.
	Size int
}

// Key is the value of one key field: Int for KeyInt (an integer key of a
// narrower or unsigned type is extended to 64 bits by its type's sign
// first, as bpftrace does), Str for KeyString, both for KeyStack.
type Key struct {
	Int int64
	Str string
}

// LinearRange is lhist()'s min, max and step. bpftrace requires
// 0 <= Min < Max, Step >= 1 and at most 1000 buckets.
type LinearRange struct {
	Min, Max, Step int64
}

// Buckets is the number of buckets an lhist with range r has: one below
// Min, (Max-Min)/Step inside, one at or above Max.
func (r LinearRange) Buckets() int {
	if r.Step <= 0 || r.Max <= r.Min {
		return 2
	}
	return int((r.Max-r.Min)/r.Step) + 2
}

// Index is the bucket lhist(v, Min, Max, Step) counts v in, as bpftrace's
// linear function computes it.
func (r LinearRange) Index(v int64) int {
	switch {
	case v < r.Min:
		return 0
	case v >= r.Max || r.Step <= 0:
		return r.Buckets() - 1
	}
	return int((v-r.Min)/r.Step) + 1
}

// HistBucketsBT is the number of buckets of a bpftrace hist(): one for
// negative values, one for 0, one for each power of two up to 2^62.
const HistBucketsBT = 65

// HistIndex is the bucket hist(v) counts v in: 0 for v < 0, 1 for 0, and
// 2+floor(log2(v)) above. bpftrace 0.17 counts every value of 2^32 and more
// in bucket 33 ([2G, 4G)); usdtkit counts them where they belong.
func HistIndex(v int64) int {
	switch {
	case v < 0:
		return 0
	case v == 0:
		return 1
	}
	return 1 + bits.Len64(uint64(v))
}

// Map is the user-space image of one bpftrace map: its name, the types of
// its key and values, and its entries in any order. It is plain data; the
// printers read it without changing it, so a Map may be printed from
// several goroutines at once.
type Map struct {
	Name string     // as written: "@" or "@name"
	Keys []KeyField // nil for a map without key (@x = 1)
	Agg  Agg
	// Signed says whether AggInt and AggSum values are signed.
	Signed bool
	// Bits is an AggInt value's width: 8, 16, 32 or 64 (0 means 64); the
	// value prints truncated to it.
	Bits int
	// Lhist is an AggLhist map's range.
	Lhist   LinearRange
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
	// Count and Total are the number and sum of the values of an avg() or
	// stats(); the average printed is Total/Count rounded toward zero.
	Count, Total int64
	// Buckets are hist() counts indexed by HistIndex (at most
	// HistBucketsBT), or lhist() counts indexed by LinearRange.Index. Missing
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
func keyStr(f KeyField, s string) string {
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
		case KeyInt:
			slices.SortStableFunc(idx, func(a, b int) int {
				return cmp.Compare(uint64(m.Entries[a].key(f).Int), uint64(m.Entries[b].key(f).Int))
			})
		case KeyString:
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
			case KeyString:
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
