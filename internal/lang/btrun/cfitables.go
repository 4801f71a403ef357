package btrun

import (
	"errors"
	"fmt"
	"slices"
	"time"

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
// traced process that exits is removed.
//
// Other processes (every process without Options.PIDs: usdt:PATH and
// uprobe:PATH system-wide, profile:) are added when the program asks for
// them: a hit of a process the procs map does not know walks by frame
// pointer and puts its tgid in the wanted map (once, until taken), as
// does a hit whose PC is in none of its process's mappings (an exec, a
// library mapped since, a process id reused). At each poll Run takes at
// most maxWantedPerPoll of them (serveWanted), reads each one's mappings
// at most once per wantedInterval, and adds them with their objects'
// tables (built once per object, shared with every process that maps
// it); at most maxDynamic such processes are known at once, and those
// that exit are removed (sweepDynamic). The program's later hits of a
// process added walk with its tables. The walk steps by frame pointer
// in objects without a table and in objects for which the maps have no
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
	if s.tables == nil {
		return
	}
	if _, ok := s.dynamic[pid]; !ok && !s.targets[pid] {
		return
	}
	exec := execOnly(maps)
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

// removeTables forgets process pid, which exited.
func (s *stacks) removeTables(pid int) {
	if s.tables == nil {
		return
	}
	delete(s.added, pid)
	delete(s.dynamic, pid)
	if err := s.tables.RemoveProcess(pid); err != nil && !errors.Is(err, ebpf.ErrKeyNotExist) {
		s.warnOnce(err)
	}
}

// Bounds on what processes the program asks for cost: how often they
// are served, processes served each time, how often one process's
// mappings are read, processes known at once besides the traced ones
// (the procs map holds 1024), how often they are checked for exit.
const (
	wantedPoll       = DefaultPollInterval
	maxWantedPerPoll = 16
	wantedInterval   = time.Second
	maxDynamic       = 512
	sweepInterval    = time.Second
)

// serveWanted adds the processes the program asked for (see above) to
// the tables, at time now.
func (s *stacks) serveWanted(now time.Time) {
	if s.tables == nil {
		return
	}
	if s.dynamic == nil {
		s.dynamic = map[int]time.Time{}
	}
	if now.Sub(s.served) < wantedPoll {
		return
	}
	s.served = now
	if now.Sub(s.swept) >= sweepInterval {
		s.sweepDynamic()
		s.swept = now
	}
	pids, err := s.tables.TakeWanted(maxWantedPerPoll)
	if err != nil {
		s.warnOnce(err)
	}
	for _, pid := range pids {
		if pid <= 0 {
			continue
		}
		last, known := s.dynamic[pid]
		if known && now.Sub(last) < wantedInterval {
			// Asked again soon: its mappings are read again when it
			// asks after the interval.
			continue
		}
		if !known && !s.targets[pid] && len(s.dynamic) >= maxDynamic {
			s.warnOnce(fmt.Errorf("stacks of processes beyond %d not traced with -p or -c walk with frame pointers", maxDynamic))
			continue
		}
		maps, ok := readExecMaps(pid)
		if !ok {
			continue // gone
		}
		if !s.targets[pid] {
			s.dynamic[pid] = now
		}
		if sym := s.procs[pid]; sym != nil && !slices.Equal(execOnly(maps), s.added[pid]) {
			// Its mappings changed since its Symbolizer read them (an
			// exec): its stacks are named from the new ones.
			sym.RefreshFrom(maps)
		}
		s.addTables(pid, maps)
	}
}

// sweepDynamic removes the processes added on the program's request that
// exited.
func (s *stacks) sweepDynamic() {
	for pid := range s.dynamic {
		if err := unix.Kill(pid, 0); errors.Is(err, unix.ESRCH) {
			s.removeTables(pid)
		}
	}
}

// execOnly returns the executable mappings of maps.
func execOnly(maps []procfs.Mapping) []procfs.Mapping {
	exec := make([]procfs.Mapping, 0, len(maps))
	for _, m := range maps {
		if m.Exec() {
			exec = append(exec, m)
		}
	}
	return exec
}
