package stackcap

import (
	"encoding/binary"
	"fmt"

	"github.com/cilium/ebpf"
)

// The maps EmitCFIWalkID reads, filled from user space (unwind.BPFTables):
// see "Stacks" in docs/architecture.md.

// Default names of the maps of a walk with call frame information.
const (
	DefaultCFIProcsMap  = "cfi_procs"
	DefaultCFITablesMap = "cfi_tables"
	DefaultCFIRowsMap   = "cfi_rows"
	DefaultCFIWantedMap = "cfi_wanted"
)

// Layout of a process's value in the procs map: a u32 count and 4 bytes
// of padding, then CFIMaxMappings mappings of CFIMappingSize bytes (u64
// start, u64 end, u64 bias, u32 table, 4 bytes of padding), sorted by
// start, the first count used.
const (
	// CFIMaxMappings bounds the executable mappings of one process a
	// walk knows: a power of two, for the bounded binary search.
	CFIMaxMappings = 512
	// CFIMappingSize is the size of one mapping.
	CFIMappingSize = 32
	cfiProcHeader  = 8
	// CFIProcSize is the size of a value of the procs map.
	CFIProcSize = cfiProcHeader + CFIMaxMappings*CFIMappingSize
	// CFINoTable is the table of a mapping without one: the walk steps
	// by frame pointer there.
	CFINoTable = ^uint32(0)
	// cfiMappingSearch is the number of steps of the binary search of
	// CFIMaxMappings mappings.
	cfiMappingSearch = 10
)

// Layout of a row (the rows map's value): unwind.Row's, which its test
// checks against these offsets and values.
const (
	CFIRowSize      = 16
	CFIRowPC        = 0  // u32, an address of the object's image
	CFIRowCFAOffset = 4  // s32
	CFIRowRAOffset  = 8  // s16
	CFIRowFPOffset  = 10 // s16
	CFIRowKind      = 12 // u8: CFIKind…
	CFIRowArg       = 13 // u8: the PLT threshold
	CFIRowRA        = 14 // u8: CFIRAAtCFA, CFIRAInLR or another rule (which ends the walk)
	CFIRowFP        = 15 // u8: CFIFPSame, CFIFPAtCFA or another (undefined)

	CFIKindNone = 0 // frame pointer
	CFIKindEnd  = 1 // the outermost frame
	CFIKindSP   = 2 // CFA = SP + CFAOffset
	CFIKindFP   = 3 // CFA = FP + CFAOffset
	CFIKindPLT  = 4 // CFA = SP + CFAOffset, + 8 when PC&15 >= Arg

	CFIRAAtCFA = 0
	CFIRAInLR  = 1 // arm64: in the link register (frame 0 only)
	CFIFPSame  = 0
	CFIFPAtCFA = 1
)

// CFIMaxTableRows bounds the rows of one table (unwind.MaxTableRows): the
// binary search of a table takes cfiRowSearch steps.
const (
	CFIMaxTableRows = 1 << 20
	cfiRowSearch    = 21
)

// A table's value in the tables map (indexed by table id), CFITableSize
// bytes of u32: the first row in the rows map and the rows (0: no
// table), then its page index: the rows map value of its first entry,
// the pages, the image address of the first page and log2 of a page's
// size. Page p holds the addresses from base + p<<shift on; the last
// page all those after it too. Its entry (CFIIndexEntrySize bytes, two
// to a rows map value, in page order) is the first row (from the
// table's first) and the number of rows a binary search of an address
// of the page looks at: the last row at most the page's first address
// (the table's first row when there is none) to the last row before the
// next page (the table's last, for the last page).
const (
	CFITableSize      = 24
	CFITableFirst     = 0
	CFITableRows      = 4
	CFITableIndex     = 8
	CFITablePages     = 12
	CFITableBase      = 16
	CFITableShift     = 20
	CFIIndexEntrySize = 8
)

// CFIMapping is one executable mapping of a process, as the walk sees it.
type CFIMapping struct {
	Start, End uint64 // its addresses, [Start, End)
	Bias       uint64 // a PC minus Bias is an address of the object's image
	Table      uint32 // the table id, or CFINoTable
}

// MarshalCFIProc returns the procs map value of a process's executable
// mappings: at most CFIMaxMappings, sorted by Start, not overlapping.
func MarshalCFIProc(ms []CFIMapping) ([]byte, error) {
	if len(ms) > CFIMaxMappings {
		return nil, fmt.Errorf("stackcap: %d executable mappings, at most %d", len(ms), CFIMaxMappings)
	}
	ne := binary.NativeEndian
	b := make([]byte, CFIProcSize)
	ne.PutUint32(b, uint32(len(ms)))
	for i, m := range ms {
		if m.End <= m.Start || i > 0 && m.Start < ms[i-1].End {
			return nil, fmt.Errorf("stackcap: mapping %d [%#x, %#x) is empty or not after the one before", i, m.Start, m.End)
		}
		e := b[cfiProcHeader+i*CFIMappingSize:]
		ne.PutUint64(e, m.Start)
		ne.PutUint64(e[8:], m.End)
		ne.PutUint64(e[16:], m.Bias)
		ne.PutUint32(e[24:], m.Table)
	}
	return b, nil
}

// CFIProcsMapSpec returns the spec of the map of processes' mappings:
// a hash keyed by the u32 tgid, for up to processes processes, its values
// (CFIProcSize bytes, MarshalCFIProc) allocated as they are added.
func CFIProcsMapSpec(name string, processes int) *ebpf.MapSpec {
	return &ebpf.MapSpec{Name: name, Type: ebpf.Hash, KeySize: 4, ValueSize: CFIProcSize, MaxEntries: uint32(processes), Flags: bpfNoPrealloc}
}

// CFITablesMapSpec returns the spec of the map of tables: an array of
// tables entries, each {u32 first, u32 count}, mmapable.
func CFITablesMapSpec(name string, tables int) *ebpf.MapSpec {
	return &ebpf.MapSpec{Name: name, Type: ebpf.Array, KeySize: 4, ValueSize: CFITableSize, MaxEntries: uint32(tables), Flags: bpfMmapable}
}

// CFIRowsMapSpec returns the spec of the map of every table's rows and
// page indexes: an array of rows entries of CFIRowSize bytes, mmapable.
func CFIRowsMapSpec(name string, rows int) *ebpf.MapSpec {
	return &ebpf.MapSpec{Name: name, Type: ebpf.Array, KeySize: 4, ValueSize: CFIRowSize, MaxEntries: uint32(rows), Flags: bpfMmapable}
}

// CFIWantedMapSpec returns the spec of the map in which the walk asks for
// a process's mappings: a hash keyed by the u32 tgid (its u32 value is
// unused), for up to processes processes at once. The walk adds the
// process it finds no mappings of, or whose mappings hold no PC (they
// changed: exec, dlopen, or another process of the same id), unless it
// is there already or the map is full; user space takes them out
// (unwind.BPFTables.TakeWanted).
func CFIWantedMapSpec(name string, processes int) *ebpf.MapSpec {
	return &ebpf.MapSpec{Name: name, Type: ebpf.Hash, KeySize: 4, ValueSize: 4, MaxEntries: uint32(processes)}
}

// BPF_F_NO_PREALLOC and BPF_F_MMAPABLE (include/uapi/linux/bpf.h).
const (
	bpfNoPrealloc = 1 << 0
	bpfMmapable   = 1 << 10
)
