package trace

import (
	"fmt"

	"github.com/usdtkit/usdtkit/internal/lang/btprint"
	"github.com/usdtkit/usdtkit/internal/lang/layout"
)

// MapKind says how a map's values were made: by assignment or by one of
// the language's aggregation functions. It decides which MapEntry fields
// hold the value.
type MapKind int

const (
	MapInt    MapKind = iota + 1 // @m = integer: MapEntry.Value (Map.Signed says how to read it)
	MapString                    // @m = string: MapEntry.Str
	MapCount                     // count(): MapEntry.Value, unsigned
	MapSum                       // sum(x): MapEntry.Value (Map.Signed says how to read it)
	MapMin                       // min(x): MapEntry.Value, signed
	MapMax                       // max(x): MapEntry.Value, signed
	MapAvg                       // avg(x): MapEntry.Count and MapEntry.Total
	MapStats                     // stats(x): MapEntry.Count and MapEntry.Total
	MapHist                      // hist(x): MapEntry.Buckets, indexed by HistBucket
	MapLhist                     // lhist(x, min, max, step): MapEntry.Buckets, indexed by Map.Lhist's bucket
)

var mapKindNames = [...]string{"", "int", "string", "count", "sum", "min", "max", "avg", "stats", "hist", "lhist"}

func (k MapKind) String() string {
	if k > 0 && int(k) < len(mapKindNames) {
		return mapKindNames[k]
	}
	return fmt.Sprintf("MapKind(%d)", int(k))
}

// HistBuckets is the number of buckets of a hist(): bucket 0 counts
// negative values, 1 counts 0, and bucket i ≥ 2 counts [2^(i-2), 2^(i-1)).
const HistBuckets = layout.HistBucketsBT

// HistBucket is the bucket hist(v) counts v in.
func HistBucket(v int64) int { return layout.HistIndex(v) }

// LinearRange is lhist()'s min, max and step. Bucket 0 counts values
// below Min, bucket i in 1…(Max-Min)/Step counts [Min+(i-1)·Step,
// Min+i·Step), and the last one values at or above Max.
type LinearRange struct {
	Min, Max, Step int64
}

// Buckets is the number of buckets of an lhist of range r.
func (r LinearRange) Buckets() int {
	return layout.LinearRange{Min: r.Min, Max: r.Max, Step: r.Step}.Buckets()
}

// Map is one map of a running program as Tracer.Maps read it: plain
// data, values summed over CPUs.
type Map struct {
	// Name is the map's name as written: "@" or "@name".
	Name string
	Kind MapKind
	// Signed says whether MapInt and MapSum values are signed.
	Signed bool
	// KeyStrings has one element per key field: true for a string (or a
	// probe name, or a stack), false for an integer. Nil for a map
	// without key (@x = 1).
	KeyStrings []bool
	// Lhist is a MapLhist map's range.
	Lhist   LinearRange
	Entries []MapEntry
}

// MapEntry is one key of a Map and its value; only the fields Map.Kind
// names are set.
type MapEntry struct {
	// Key has one element per key field: Str for a string field, Int for
	// an integer one (a stack field has both: its id and its text).
	Key []MapKey
	// Value is a MapInt, MapCount, MapSum, MapMin or MapMax value's 64
	// bits; Map.Kind and Map.Signed say how to read them.
	Value uint64
	// Str is a MapString value.
	Str string
	// Count and Total are the number and the sum of an avg()'s or
	// stats()' values.
	Count, Total int64
	// Buckets are a hist()'s counts (indexed by HistBucket, at most
	// HistBuckets) or an lhist()'s (Lhist.Buckets of them); missing
	// buckets count zero.
	Buckets []uint64
}

// MapKey is the value of one key field.
type MapKey struct {
	Int int64
	Str string
}

var mapKinds = map[btprint.Agg]MapKind{
	btprint.AggInt: MapInt, btprint.AggString: MapString, btprint.AggCount: MapCount,
	btprint.AggSum: MapSum, btprint.AggMin: MapMin, btprint.AggMax: MapMax,
	btprint.AggAvg: MapAvg, btprint.AggStats: MapStats, btprint.AggHist: MapHist,
	btprint.AggLhist: MapLhist, btprint.AggTuple: MapString,
}

// Maps reads every map of the program now, values summed over CPUs: what
// Run prints at the end, while the program runs. Unlike the Tracer's other
// methods, Maps may be called while Run runs on another goroutine (it
// reads the kernel's maps only), but not concurrently with Close. It
// returns an error once the Tracer is closed.
func (t *Tracer) Maps() ([]Map, error) {
	if t.r == nil {
		return nil, fmt.Errorf("maps: tracer closed")
	}
	ms, err := t.r.Maps()
	if err != nil {
		return nil, err
	}
	out := make([]Map, 0, len(ms))
	for _, m := range ms {
		o := Map{Name: m.Name, Kind: mapKinds[m.Agg], Signed: m.Signed,
			Lhist: LinearRange{Min: m.Lhist.Min, Max: m.Lhist.Max, Step: m.Lhist.Step}}
		for _, k := range m.Keys {
			o.KeyStrings = append(o.KeyStrings, k.Kind != layout.KeyInt)
		}
		o.Entries = make([]MapEntry, len(m.Entries))
		for i, e := range m.Entries {
			oe := &o.Entries[i]
			oe.Value, oe.Str, oe.Count, oe.Total, oe.Buckets = e.Value, e.Str, e.Count, e.Total, e.Buckets
			if len(e.Key) > 0 {
				oe.Key = make([]MapKey, len(e.Key))
				for j, k := range e.Key {
					oe.Key[j] = MapKey{Int: k.Int, Str: k.Str}
				}
			}
		}
		out = append(out, o)
	}
	return out, nil
}
