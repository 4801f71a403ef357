package btrun

import (
	"errors"
	"fmt"
	"slices"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"

	"github.com/usdtkit/usdtkit/internal/bpf/stackcap"
	"github.com/usdtkit/usdtkit/internal/proc/procfs"
	"github.com/usdtkit/usdtkit/internal/stacks/unwind"
)

// The tables of the walk with call frame information (btgen.StackKeysCFI).
//
// A program whose stack keys are walked with CFI reads three maps
// (stackcap.DefaultCFIProcsMap and its siblings), which Start replaces
// with those of an unwind.BPFTables it owns, filled before the program
// is loaded with the executable mappings of every traced process
// (Options.PIDs) and the tables of the objects they map. A traced
// process's mappings are read again at its first stack (a command
// started stopped has mapped its libraries by then) and at each poll of
// the traced processes, and given to the tables when they changed; a
// traced process that exits is removed. The walk steps by frame
// pointer in other processes (every process without Options.PIDs), in
// objects without a table and in objects for which the maps have no
// room: each such object is reported once to Options.Warn.

// openTables makes the tables when spec's programs walk with CFI, with
// room for the rows of the objects traced processes pids map now
// (tableRows).
func (s *stacks) openTables(spec *ebpf.CollectionSpec, pids []int, warn func(error)) error {
	if _, ok := spec.Maps[stackcap.DefaultCFIProcsMap]; !ok {
		return nil
	}
	s.init()
	need := 0
	seen := map[procfs.FileID]bool{}
	for _, pid := range pids {
		maps, ok := readExecMaps(pid)
		if !ok {
			continue
		}
		sp := unwind.NewSpace(pid, maps)
		for _, m := range maps {
			id := procfs.FileID{Dev: unix.Mkdev(m.Major, m.Minor), Inode: m.Inode}
			if !m.Exec() || !m.FileBacked() || seen[id] {
				continue
			}
			seen[id] = true
			if t, err := s.unw.Table(sp, m); err == nil {
				need += len(t.Rows)
			}
		}
	}
	t, err := unwind.NewBPFTables(s.unw, &unwind.BPFTablesOptions{Rows: tableRows(need)})
	if err != nil {
		return fmt.Errorf("unwind tables: %w", err)
	}
	s.tables, s.warn = t, warn
	s.added = map[int][]procfs.Mapping{}
	return nil
}

// tableRows returns the rows to allocate for tables that need need rows
// now: twice that, for libraries mapped later (a -c command has mapped
// only its executable and the dynamic loader at first), at least
// minTableRows and at most maxTableRows. A full map evicts the tables no
// process uses, then walks the rest with frame pointers (a warning).
func tableRows(need int) int {
	return min(max(2*need, minTableRows), maxTableRows)
}

// minTableRows (4 MiB of rows) holds the tables of a C or C++ program,
// its libc and libstdc++ several times over; maxTableRows (32 MiB) is
// unwind.BPFTables' default.
const (
	minTableRows = 1 << 18
	maxTableRows = 1 << 21
)

// tableMaps returns the tables' maps for ebpf.CollectionOptions, having
// set spec's entries for them to their sizes; nil without tables.
func (s *stacks) tableMaps(spec *ebpf.CollectionSpec) map[string]*ebpf.Map {
	if s.tables == nil {
		return nil
	}
	maps := s.tables.Maps()
	for name, m := range maps {
		if ms, ok := spec.Maps[name]; ok {
			ms = ms.Copy()
			ms.MaxEntries = m.MaxEntries()
			spec.Maps[name] = ms
		}
	}
	return maps
}

// addTables gives the executable mappings of maps, those of traced
// process pid, to the tables, unless they are the ones given last. Maps
// without executable mappings (a process gone or exiting) change nothing.
func (s *stacks) addTables(pid int, maps []procfs.Mapping) {
	if s.tables == nil || !s.targets[pid] {
		return
	}
	exec := make([]procfs.Mapping, 0, len(maps))
	for _, m := range maps {
		if m.Exec() {
			exec = append(exec, m)
		}
	}
	if len(exec) == 0 || slices.Equal(exec, s.added[pid]) {
		return
	}
	s.added[pid] = exec
	sp := unwind.NewSpace(pid, maps)
	err := s.tables.AddProcess(sp)
	var errs []error
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		errs = j.Unwrap()
	} else if err != nil {
		errs = []error{err}
	}
	for _, m := range exec {
		if !m.FileBacked() {
			continue
		}
		if _, err := s.unw.Table(sp, m); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", m.Path, err))
		}
	}
	for _, err := range errs {
		s.warnOnce(fmt.Errorf("stacks of process %d walk with frame pointers through %w", pid, err))
	}
}

// warnOnce gives err to the warning function unless an equal message
// was given before.
func (s *stacks) warnOnce(err error) {
	if s.warn == nil {
		return
	}
	if s.warned == nil {
		s.warned = map[string]bool{}
	}
	msg := err.Error()
	if s.warned[msg] || len(s.warned) >= maxWarnings {
		return
	}
	s.warned[msg] = true
	s.warn(err)
}

// maxWarnings bounds the warnings about the tables.
const maxWarnings = 64

// removeTables forgets traced process pid, which exited.
func (s *stacks) removeTables(pid int) {
	if s.tables == nil {
		return
	}
	delete(s.added, pid)
	if err := s.tables.RemoveProcess(pid); err != nil && !errors.Is(err, ebpf.ErrKeyNotExist) {
		s.warnOnce(err)
	}
}
