// Package layout is what codegen and output agree on about a map: its key
// fields, the buckets of hist() and lhist(), the bytes of a C value
// (CValue). It holds no code of either, so neither imports the other.
package layout

import "math/bits"

// KeyKind is the type of one field of a map's key.
type KeyKind uint8

const (
	KeyInt    KeyKind = iota + 1 // an integer, stored as bpftrace 0.17 stores every integer key: 64 bits
	KeyString                    // a string of at most KeyField.Size-1 bytes
	// KeyStack is a stack (ustack): Key.Int holds the stack id, Key.Str the
	// stack already symbolized as bpftrace prints it. bpftrace does not sort
	// by stacks; neither does this package.
	KeyStack
	// KeyValue is a C struct, union or array of KeyField.Size bytes, as
	// KeyField.Value lays it out: Key.Raw holds its bytes.
	KeyValue
)

// KeyField describes one field of a map's key.
type KeyField struct {
	Kind KeyKind
	// Size is a string field's size in bytes in the BPF map, NUL included
	// (bpftrace's default string size is 64). Zero means no limit. Strings
	// longer than Size-1 bytes are cut to Size-1, as the kernel would have.
	Size int
	// Value describes a KeyValue field.
	Value *CValue
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

// CKind is the kind of a C value (CValue).
type CKind uint8

const (
	CInt    CKind = iota + 1 // an integer of Size bytes, signed if Signed
	CPtr                     // a pointer, 8 bytes
	CString                  // an array of char of Size bytes, printed as a string
	CArray                   // Len values of Elem
	CRecord                  // a struct or union: Fields
)

// CValue describes the bytes of a C value a map holds, as a key field or
// a value: a struct, union or array, with its fields and elements.
type CValue struct {
	Kind   CKind
	Size   int
	Signed bool
	Elem   *CValue // CArray
	Len    int     // CArray
	Fields []CField
}

// CField is one field of a CRecord: its name, its byte offset and, for a
// bit-field, its bits in the unit of Value.Size bytes at Off.
type CField struct {
	Name         string
	Off          int
	BitOff, Bits int
	Value        *CValue
}
