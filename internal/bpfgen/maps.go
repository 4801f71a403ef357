package bpfgen

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"math/bits"
	"slices"

	"github.com/cilium/ebpf"
)

// HistBuckets is the number of log2 histogram buckets: see HistBucket.
const HistBuckets = 66

// HistBucket returns the log2 histogram bucket of v, as the generated
// program computes it. It follows bpftrace's hist(): bucket 0 holds negative
// values (only when signed), bucket 1 holds 0, and bucket k >= 2 holds
// [2^(k-2), 2^(k-1)), so 1 is in bucket 2, 2..3 in bucket 3, 4..7 in 4. Unlike
// bpftrace, which compares as signed whatever the type, an unsigned value of
// 2^63 or more goes to bucket 65 rather than 0.
func HistBucket(v uint64, signed bool) int {
	if signed && int64(v) < 0 {
		return 0
	}
	if v == 0 {
		return 1
	}
	return bits.Len64(v) + 1
}

// CountEntry is one key of the ModeCount map with its count.
type CountEntry struct {
	Probe uint32
	// PID is 0 unless Config.CountBy has CountPID.
	PID uint32
	// Comm is "" unless Config.CountBy has CountComm.
	Comm  string
	Count uint64
}

// ReadCounts returns the entries of a "counts" map, ordered by probe, PID
// and comm. Entries that are inserted while it runs may be missed. The
// per-CPU array of counts by probe alone gives an entry for each probe
// with a count, summed over CPUs.
func ReadCounts(m *ebpf.Map) ([]CountEntry, error) {
	if m.Type() == ebpf.PerCPUArray {
		return readCountSlots(m)
	}
	if m.KeySize() != countKeySize || m.ValueSize() != 8 {
		return nil, fmt.Errorf("read counts: map of %d-byte keys and %d-byte values, want %d and 8", m.KeySize(), m.ValueSize(), countKeySize)
	}
	var (
		key   [countKeySize]byte
		value uint64
		out   []CountEntry
	)
	it := m.Iterate()
	for it.Next(&key, &value) {
		ne := binary.NativeEndian
		out = append(out, CountEntry{
			Probe: ne.Uint32(key[0:]),
			PID:   ne.Uint32(key[4:]),
			Comm:  string(cstring(key[8:])),
			Count: value,
		})
	}
	if err := it.Err(); err != nil {
		return nil, fmt.Errorf("read counts: %w", err)
	}
	slices.SortFunc(out, func(a, b CountEntry) int {
		return cmp.Or(cmp.Compare(a.Probe, b.Probe), cmp.Compare(a.PID, b.PID), cmp.Compare(a.Comm, b.Comm))
	})
	return out, nil
}

// readCountSlots reads the per-CPU "counts" array: slot i counts probe i.
func readCountSlots(m *ebpf.Map) ([]CountEntry, error) {
	if m.KeySize() != 4 || m.ValueSize() != 8 {
		return nil, fmt.Errorf("read counts: per-CPU array of %d-byte keys and %d-byte values, want 4 and 8", m.KeySize(), m.ValueSize())
	}
	var (
		key uint32
		per []uint64
		out []CountEntry
	)
	it := m.Iterate()
	for it.Next(&key, &per) {
		var sum uint64
		for _, v := range per {
			sum += v
		}
		if sum > 0 {
			out = append(out, CountEntry{Probe: key, Count: sum})
		}
	}
	if err := it.Err(); err != nil {
		return nil, fmt.Errorf("read counts: %w", err)
	}
	return out, nil
}

// ReadHist returns the buckets of a "hist" map per probe id: each slice has
// HistBuckets counts, indexed as HistBucket says.
func ReadHist(m *ebpf.Map) (map[uint32][]uint64, error) {
	if m.KeySize() != 8 || m.ValueSize() != 8 {
		return nil, fmt.Errorf("read hist: map of %d-byte keys and %d-byte values, want 8 and 8", m.KeySize(), m.ValueSize())
	}
	var (
		key   [2]uint32
		value uint64
	)
	out := map[uint32][]uint64{}
	it := m.Iterate()
	for it.Next(&key, &value) {
		probe, bucket := key[0], key[1]
		if bucket >= HistBuckets {
			return nil, fmt.Errorf("read hist: probe %d: bucket %d is not below %d", probe, bucket, HistBuckets)
		}
		h := out[probe]
		if h == nil {
			h = make([]uint64, HistBuckets)
			out[probe] = h
		}
		h[bucket] += value
	}
	if err := it.Err(); err != nil {
		return nil, fmt.Errorf("read hist: %w", err)
	}
	return out, nil
}

// ReadLost returns the sums over all CPUs of the "lost" map: records the
// ring buffer refused (the reader was too slow) and aggregation updates
// that failed (a full map).
func ReadLost(m *ebpf.Map) (events, updates uint64, err error) {
	var per []uint64
	for i, dst := range []*uint64{&events, &updates} {
		if err := m.Lookup(uint32(i), &per); err != nil {
			return 0, 0, fmt.Errorf("read lost[%d]: %w", i, err)
		}
		for _, v := range per {
			*dst += v
		}
	}
	return events, updates, nil
}
