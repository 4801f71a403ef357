package unwind

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sort"
	"sync"

	"github.com/cilium/ebpf"
	"github.com/usdtkit/usdtkit/internal/bpf/stackcap"
)

// ErrTablesFull is wrapped by BPFTables.AddProcess when the rows map has
// no room for an object's Table, even after dropping the tables no
// process uses; such objects unwind with frame pointers in the program.
var ErrTablesFull = errors.New("BPF unwind tables full")

// BPFTablesOptions configures NewBPFTables. The zero value is the
// default.
type BPFTablesOptions struct {
	// Processes is the most processes known at once; 0 means 1024.
	Processes int
	// Tables is the most objects' Tables held at once; 0 means 4096.
	Tables int
	// Rows is the most rows of all Tables together, their page
	// indexes included (16 bytes each, allocated when the map is made;
	// an index takes at most an eighth of its table's rows, and one);
	// 0 means 1<<21 (32 MiB).
	Rows int
	// Wanted is the most processes the program asks for at once
	// (TakeWanted); 0 means 256.
	Wanted int
}

// BPFTables owns the maps that a walk with call frame information in a
// BPF program reads (stackcap.EmitCFIWalkID): the Tables of objects,
// each added once, keyed by device and inode, for every process that
// maps it, and each process's executable mappings. A Table no process
// uses any more stays until its rows are needed for another (least
// recently used first).
//
// A BPFTables is safe for concurrent use; Close must not race with other
// calls. A program may read a table while it is replaced (after the last
// process using it was removed): it then finds wrong frames, never
// reads outside the maps.
type BPFTables struct {
	u                           *Unwinder
	procs, tables, rows, wanted *ebpf.Map
	tabMem, rowMem              *ebpf.Memory

	mu     sync.Mutex
	objs   map[fileID]*bpfTable
	pids   map[int][]*bpfTable
	free   []rowSpan // free rows, by first, not adjacent
	ids    []uint32  // free table ids
	clock  uint64
	closed bool
}

// bpfTable is one object's Table in the maps.
type bpfTable struct {
	key  fileID
	id   uint32  // stackcap.CFINoTable: none (no CFI, or no room)
	rows rowSpan // its page index, then its rows
	refs int     // processes using it
	used uint64  // clock when last added to a process
}

// indexRowsPerPage bounds a page index: a page per indexRowsPerPage rows
// at most (pages grow from 1<<indexMinShift bytes until they do), so
// that an index (stackcap.CFIIndexEntrySize bytes a page) adds at most an
// eighth to its rows' size, and a row of the rows map to a table of
// fewer rows. The walk's search then looks at a few rows, not at all of
// a table's tens of thousands.
const (
	indexRowsPerPage = 4
	indexMinShift    = 4
)

// pageIndex is the page index of a table in the maps (stackcap's
// CFITable… layout): the walk searches an address's page's rows only.
type pageIndex struct {
	base, shift uint32
	pages       [][2]uint32 // first row, rows
}

// newPageIndex returns the page index of rows (at least one).
func newPageIndex(rows []Row) pageIndex {
	base := uint64(rows[0].PC)
	span := uint64(rows[len(rows)-1].PC) - base
	limit := uint64(max(1, len(rows)/indexRowsPerPage))
	shift := uint32(indexMinShift)
	for span>>shift+1 > limit {
		shift++
	}
	n := int(span>>shift + 1)
	x := pageIndex{base: uint32(base), shift: shift, pages: make([][2]uint32, n)}
	// after returns the number of rows whose PC is at most a.
	after := func(a uint64) int {
		return sort.Search(len(rows), func(i int) bool { return uint64(rows[i].PC) > a })
	}
	for p := range n {
		start := base + uint64(p)<<shift
		lo := max(after(start)-1, 0)
		hi := len(rows)
		if p < n-1 {
			hi = after(start + 1<<shift - 1)
		}
		x.pages[p] = [2]uint32{uint32(lo), uint32(hi - lo)}
	}
	return x
}

// slots is the number of rows map values the index takes.
func (x *pageIndex) slots() int {
	return (len(x.pages)*stackcap.CFIIndexEntrySize + stackcap.CFIRowSize - 1) / stackcap.CFIRowSize
}

type rowSpan struct{ first, count uint32 }

// NewBPFTables makes the maps, empty, with the Tables of u; opts may be
// nil. Needs kernel 5.5 (mmapable arrays).
func NewBPFTables(u *Unwinder, opts *BPFTablesOptions) (_ *BPFTables, err error) {
	o := BPFTablesOptions{Processes: 1024, Tables: 4096, Rows: 1 << 21, Wanted: 256}
	if opts != nil {
		for _, f := range []struct {
			name    string
			v       int
			dst     *int
			maximum int
		}{
			{"Processes", opts.Processes, &o.Processes, 1 << 20},
			{"Tables", opts.Tables, &o.Tables, 1 << 20},
			{"Rows", opts.Rows, &o.Rows, 1 << 27},
			{"Wanted", opts.Wanted, &o.Wanted, 1 << 16},
		} {
			if f.v < 0 || f.v > f.maximum {
				return nil, fmt.Errorf("unwind: BPFTablesOptions.%s %d is not in 0..%d", f.name, f.v, f.maximum)
			}
			if f.v != 0 {
				*f.dst = f.v
			}
		}
	}
	b := &BPFTables{u: u, objs: map[fileID]*bpfTable{}, pids: map[int][]*bpfTable{}}
	defer func() {
		if err != nil {
			b.Close()
		}
	}()
	if b.procs, err = ebpf.NewMap(stackcap.CFIProcsMapSpec(stackcap.DefaultCFIProcsMap, o.Processes)); err != nil {
		return nil, fmt.Errorf("unwind: processes map: %w", err)
	}
	if b.tables, err = ebpf.NewMap(stackcap.CFITablesMapSpec(stackcap.DefaultCFITablesMap, o.Tables)); err != nil {
		return nil, fmt.Errorf("unwind: tables map: %w", err)
	}
	if b.rows, err = ebpf.NewMap(stackcap.CFIRowsMapSpec(stackcap.DefaultCFIRowsMap, o.Rows)); err != nil {
		return nil, fmt.Errorf("unwind: rows map: %w", err)
	}
	if b.wanted, err = ebpf.NewMap(stackcap.CFIWantedMapSpec(stackcap.DefaultCFIWantedMap, o.Wanted)); err != nil {
		return nil, fmt.Errorf("unwind: wanted map: %w", err)
	}
	if b.tabMem, err = b.tables.Memory(); err != nil {
		return nil, fmt.Errorf("unwind: tables map: %w", err)
	}
	if b.rowMem, err = b.rows.Memory(); err != nil {
		return nil, fmt.Errorf("unwind: rows map: %w", err)
	}
	b.free = []rowSpan{{0, uint32(o.Rows)}}
	b.ids = make([]uint32, o.Tables)
	for i := range b.ids {
		b.ids[i] = uint32(o.Tables - 1 - i) // taken from the end: 0 first
	}
	return b, nil
}

// Maps returns the maps by the names stackcap.EmitCFIWalkID uses by
// default, for ebpf.CollectionOptions.MapReplacements. They stay owned
// by b.
func (b *BPFTables) Maps() map[string]*ebpf.Map {
	return map[string]*ebpf.Map{
		stackcap.DefaultCFIProcsMap:  b.procs,
		stackcap.DefaultCFITablesMap: b.tables,
		stackcap.DefaultCFIRowsMap:   b.rows,
		stackcap.DefaultCFIWantedMap: b.wanted,
	}
}

// TakeWanted removes from the map of wanted processes and returns at
// most max of the processes the program asked for: those it found no
// mappings of, and those whose mappings held no PC of a stack (they
// changed). Each is asked for once until taken; the caller gives each
// to AddProcess, or remembers that it could not. The map holds
// BPFTablesOptions.Wanted processes: the program asks for no more until
// some are taken.
func (b *BPFTables) TakeWanted(max int) ([]int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return nil, fmt.Errorf("unwind: BPFTables closed")
	}
	var pids []int
	var key, val uint32
	it := b.wanted.Iterate()
	for len(pids) < max && it.Next(&key, &val) {
		pids = append(pids, int(key))
	}
	if err := it.Err(); err != nil {
		return nil, fmt.Errorf("unwind: wanted map: %w", err)
	}
	// Deleted after the iteration: deleting the key an iteration stands
	// on restarts it.
	for _, pid := range pids {
		if err := b.wanted.Delete(uint32(pid)); err != nil && !errors.Is(err, ebpf.ErrKeyNotExist) {
			return pids, fmt.Errorf("unwind: wanted map: %w", err)
		}
	}
	return pids, nil
}

// AddProcess makes the executable mappings of sp known to the program,
// replacing those known of its process, with the Table of each object
// they map (added when no other process has it). Objects without a
// Table (no CFI, one NewTable refuses, see Unwinder.ObjectError) and
// anonymous mappings unwind with frame pointers. It returns an error
// wrapping ErrTablesFull when some Tables found no room (the process is
// added, those objects unwind with frame pointers), and fails for more
// than stackcap.CFIMaxMappings executable mappings.
func (b *BPFTables) AddProcess(sp *Space) error {
	if len(sp.exec) > stackcap.CFIMaxMappings {
		return fmt.Errorf("unwind: process %d: %d executable mappings, the program knows at most %d", sp.PID, len(sp.exec), stackcap.CFIMaxMappings)
	}
	// Tables are compiled before taking the lock: that reads files.
	tabs := make([]*Table, len(sp.exec))
	for i, m := range sp.exec {
		if m.FileBacked() {
			tabs[i], _ = b.u.Table(sp, m)
		}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return fmt.Errorf("unwind: BPFTables closed")
	}
	old := b.pids[sp.PID]
	var held []*bpfTable
	var errs []error
	ms := make([]stackcap.CFIMapping, 0, len(sp.exec))
	for i, m := range sp.exec {
		cm := stackcap.CFIMapping{Start: m.Start, End: m.End, Table: stackcap.CFINoTable}
		if t := tabs[i]; t != nil && len(t.Rows) > 0 {
			if bias, ok := t.Bias(m); ok {
				bt, err := b.add(fileID{m.Major, m.Minor, m.Inode}, t)
				if err != nil {
					errs = append(errs, fmt.Errorf("%s: %w", m.Path, err))
				}
				if bt != nil {
					held = append(held, bt)
					cm.Table, cm.Bias = bt.id, bias
				}
			}
		}
		ms = append(ms, cm)
	}
	val, err := stackcap.MarshalCFIProc(ms)
	if err == nil {
		err = b.procs.Put(uint32(sp.PID), val)
	}
	if err != nil {
		b.release(held)
		return fmt.Errorf("unwind: process %d: %w", sp.PID, err)
	}
	b.pids[sp.PID] = held
	b.release(old)
	return errors.Join(errs...)
}

// RemoveProcess forgets the mappings of process pid; the Tables only it
// used may be replaced from now on.
func (b *BPFTables) RemoveProcess(pid int) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	held, ok := b.pids[pid]
	if !ok {
		return nil
	}
	delete(b.pids, pid)
	b.release(held)
	if err := b.procs.Delete(uint32(pid)); err != nil && !errors.Is(err, ebpf.ErrKeyNotExist) {
		return fmt.Errorf("unwind: process %d: %w", pid, err)
	}
	return nil
}

// add returns the object's table in the maps, holding a reference, adding
// t when absent; with an error wrapping ErrTablesFull when there is no
// room (nil then).
func (b *BPFTables) add(key fileID, t *Table) (*bpfTable, error) {
	b.clock++
	if bt, ok := b.objs[key]; ok {
		bt.refs++
		bt.used = b.clock
		return bt, nil
	}
	n := len(t.Rows)
	if n > stackcap.CFIMaxTableRows {
		return nil, fmt.Errorf("%d rows: %w", n, ErrTableTooLarge)
	}
	x := newPageIndex(t.Rows)
	slots := uint32(x.slots() + n)
	first, ok := b.alloc(slots)
	for !ok {
		evicted, err := b.evict()
		if err != nil {
			return nil, err
		}
		if !evicted {
			break
		}
		first, ok = b.alloc(slots)
	}
	if !ok || len(b.ids) == 0 {
		if ok {
			b.freeRows(rowSpan{first, slots})
		}
		return nil, fmt.Errorf("%d rows and their index: %w", n, ErrTablesFull)
	}
	id := b.ids[len(b.ids)-1]
	ne := binary.NativeEndian
	buf := make([]byte, 0, int(slots)*stackcap.CFIRowSize)
	for _, e := range x.pages {
		buf = ne.AppendUint32(ne.AppendUint32(buf, e[0]), e[1])
	}
	buf = buf[:x.slots()*stackcap.CFIRowSize]
	buf, err := binary.Append(buf, ne, t.Rows)
	if err == nil {
		_, err = b.rowMem.WriteAt(buf, int64(first)*stackcap.CFIRowSize)
	}
	if err == nil {
		var ent [stackcap.CFITableSize]byte
		for _, f := range []struct {
			off int
			v   uint32
		}{
			{stackcap.CFITableFirst, first + uint32(x.slots())}, {stackcap.CFITableRows, uint32(n)},
			{stackcap.CFITableIndex, first}, {stackcap.CFITablePages, uint32(len(x.pages))},
			{stackcap.CFITableBase, x.base}, {stackcap.CFITableShift, x.shift},
		} {
			ne.PutUint32(ent[f.off:], f.v)
		}
		_, err = b.tabMem.WriteAt(ent[:], int64(id)*stackcap.CFITableSize)
	}
	if err != nil {
		b.freeRows(rowSpan{first, slots})
		return nil, err
	}
	b.ids = b.ids[:len(b.ids)-1]
	bt := &bpfTable{key: key, id: id, rows: rowSpan{first, slots}, refs: 1, used: b.clock}
	b.objs[key] = bt
	return bt, nil
}

// release drops a reference to each table.
func (b *BPFTables) release(held []*bpfTable) {
	for _, bt := range held {
		bt.refs--
	}
}

// evict drops the least recently used table no process uses, reporting
// whether there was one.
func (b *BPFTables) evict() (bool, error) {
	var lru *bpfTable
	for _, bt := range b.objs {
		if bt.refs == 0 && (lru == nil || bt.used < lru.used) {
			lru = bt
		}
	}
	if lru == nil {
		return false, nil
	}
	// The id first, so that no walk finds the rows being reused.
	var ent [stackcap.CFITableSize]byte
	if _, err := b.tabMem.WriteAt(ent[:], int64(lru.id)*stackcap.CFITableSize); err != nil {
		return false, err
	}
	delete(b.objs, lru.key)
	b.ids = append(b.ids, lru.id)
	b.freeRows(lru.rows)
	return true, nil
}

// alloc takes n rows from the first free span that holds them.
func (b *BPFTables) alloc(n uint32) (uint32, bool) {
	for i, s := range b.free {
		if s.count < n {
			continue
		}
		first := s.first
		if s.count == n {
			b.free = append(b.free[:i], b.free[i+1:]...)
		} else {
			b.free[i] = rowSpan{s.first + n, s.count - n}
		}
		return first, true
	}
	return 0, false
}

// freeRows returns a span to the free list, merged with its neighbours.
func (b *BPFTables) freeRows(s rowSpan) {
	if s.count == 0 {
		return
	}
	i := sort.Search(len(b.free), func(i int) bool { return b.free[i].first > s.first })
	b.free = append(b.free, rowSpan{})
	copy(b.free[i+1:], b.free[i:])
	b.free[i] = s
	if i+1 < len(b.free) && b.free[i].first+b.free[i].count == b.free[i+1].first {
		b.free[i].count += b.free[i+1].count
		b.free = append(b.free[:i+1], b.free[i+2:]...)
	}
	if i > 0 && b.free[i-1].first+b.free[i-1].count == b.free[i].first {
		b.free[i-1].count += b.free[i].count
		b.free = append(b.free[:i], b.free[i+1:]...)
	}
}

// Close closes the maps; a second Close returns nil.
func (b *BPFTables) Close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return nil
	}
	b.closed = true
	// The maps' memory is unmapped when no longer referenced.
	b.tabMem, b.rowMem = nil, nil
	var errs []error
	for _, m := range []*ebpf.Map{b.procs, b.tables, b.rows, b.wanted} {
		if m != nil {
			errs = append(errs, m.Close())
		}
	}
	return errors.Join(errs...)
}
