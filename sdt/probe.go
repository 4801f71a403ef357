package sdt

import (
	"debug/elf"
	"fmt"
	"slices"

	"github.com/usdtkit/usdtkit/elfnotes"
)

// Probe is one USDT probe of one object file: a provider and name, and every
// place the compiler put it. A probe used in an inlined function or a macro
// expanded several times has several locations, each with its own argument
// specs (the compiler may keep the same value in different registers).
type Probe struct {
	// Path is the object file as users know it (see target.Object).
	Path string
	// OpenPath says where the file was read from: Path, or for a
	// process's objects /proc/PID/root/... or /proc/PID/map_files/...
	// It is for messages; Trace does not open it.
	OpenPath string
	// Dev and Inode identify the file the probe was read from (stat's
	// st_dev and st_ino). Trace opens the file again as List did and
	// refuses a file whose identity differs; 0 and 0 are not checked.
	Dev, Inode uint64
	// PID is the process the object was found in, 0 for files.
	PID      int
	Machine  elf.Machine
	Provider string
	Name     string
	// Locations are in note order.
	Locations []Location
}

// String returns "provider:name".
func (p *Probe) String() string { return p.Provider + ":" + p.Name }

// Location is one probe site: one NT_STAPSDT note.
type Location struct {
	// Note is the position of this location's note among the object's
	// NT_STAPSDT notes, from 0: the order readelf -n shows them in.
	Note int
	// Address is the virtual address of the probe site after the
	// .stapsdt.base adjustment.
	Address uint64
	// Offset is the file offset of the probe site; valid when OffsetErr is nil.
	Offset uint64
	// OffsetErr says why Offset is unknown, for example in a separate debug
	// file whose segments hold no code. It wraps elfnotes.ErrNoSegment.
	OffsetErr error
	// Semaphore is the virtual address of the 2-byte is-enabled counter after
	// the .stapsdt.base adjustment; 0 when the probe has none.
	Semaphore uint64
	// SemaphoreOffset is the file offset of Semaphore, for the kernel's
	// reference counter (uprobe ref_ctr_offset); valid when Semaphore != 0 and
	// SemaphoreErr is nil.
	SemaphoreOffset uint64
	SemaphoreErr    error
	// ArgString is the argument string as written in the note.
	ArgString string
	// Args are the parsed arguments, one per spec in ArgString. An argument
	// that did not parse has a non-nil Err.
	Args []Arg
}

// ReadProbes returns the probes of f as [ReadProbesPartial] does, but fails
// on the first damaged note ReadProbesPartial would report as a warning.
func ReadProbes(f *elfnotes.File, path string) ([]Probe, error) {
	probes, warnings, err := ReadProbesPartial(f, path)
	if err == nil && len(warnings) > 0 {
		err = warnings[0]
	}
	if err != nil {
		return nil, err
	}
	return probes, nil
}

// ReadProbesPartial returns the probes of f, grouped by provider and name
// in the order of their first note. path is recorded in each Probe.
//
// Damaged notes are skipped, each with one warning, an error wrapping an
// *elfnotes.FormatError with the note's file offset (see
// elfnotes.File.ReadSDTProbes); the other probes are returned. The damage
// elfnotes.NewFile passed over in the headers (File.Warnings) comes first. err is an
// I/O error reading the notes. An argument or an address that cannot be
// resolved is recorded in its Location.
func ReadProbesPartial(f *elfnotes.File, path string) (probes []Probe, warnings []error, err error) {
	notes, warnings, err := f.ReadSDTProbes()
	if err != nil {
		return nil, nil, fmt.Errorf("read notes: %w", err)
	}
	for i, w := range warnings {
		warnings[i] = fmt.Errorf("read notes: %w", w)
	}
	// Damaged section headers (a bad sh_name) leave the notes readable,
	// but may hide .stapsdt.base: say so.
	warnings = append(slices.Clone(f.Warnings()), warnings...)
	probes = make([]Probe, 0, len(notes))
	index := make(map[[2]string]int, len(notes))
	for ni, n := range notes {
		key := [2]string{n.Provider, n.Name}
		i, ok := index[key]
		if !ok {
			i = len(probes)
			index[key] = i
			probes = append(probes, Probe{Path: path, OpenPath: path, Machine: f.Machine, Provider: n.Provider, Name: n.Name})
		}
		probes[i].Locations = append(probes[i].Locations, newLocation(f, ni, n))
	}
	return probes, warnings, nil
}

func newLocation(f *elfnotes.File, note int, n elfnotes.SDTProbe) Location {
	loc := Location{Note: note, Address: n.Addr, Semaphore: n.SemaphoreAddr, ArgString: n.Args}
	loc.Offset, loc.OffsetErr = f.AddrToOffset(n.Addr)
	if n.SemaphoreAddr != 0 {
		loc.SemaphoreOffset, loc.SemaphoreErr = f.AddrToOffset(n.SemaphoreAddr)
	}
	// Errors are kept per argument (Arg.Err); the joined error adds nothing.
	loc.Args, _ = ParseArgs(f.Machine, n.Args)
	return loc
}
