package unwind

import (
	"debug/elf"
	"fmt"

	"github.com/go-delve/delve/pkg/dwarf/frame"

	"github.com/usdtkit/usdtkit/elfnotes"
	"github.com/usdtkit/usdtkit/internal/elf/symtab"
	"github.com/usdtkit/usdtkit/internal/proc/procfs"
)

// debugOpener opens the separate debug file of an object (see
// symtab.OpenDebugFile).
type debugOpener func(*elfnotes.File) (*symtab.DebugFile, error)

// debugOpener returns the opener of the debug file of the object m maps
// in sp's process: looked for inside the process's root, in the object's
// directory and the Unwinder's DebugDirs, as symbolize looks for it.
func (u *Unwinder) debugOpener(sp *Space, m procfs.Mapping) debugOpener {
	return func(f *elfnotes.File) (*symtab.DebugFile, error) {
		root, err := procfs.OpenRoot(sp.PID)
		if err != nil {
			return nil, err
		}
		defer root.Close()
		return symtab.OpenDebugFile(f, m.Path, &symtab.DebugOptions{Root: root, Dirs: u.opts.DebugDirs})
	}
}

// debugFrame returns the FDEs of the .debug_frame of f's separate debug
// file, opened by open. A library built without unwind tables
// (-fno-asynchronous-unwind-tables -fno-unwind-tables) and then stripped
// has its CFI only there. No debug file, or one without .debug_frame,
// gives none and no error; a .debug_frame that cannot be read gives an
// error naming the debug file.
func debugFrame(f *elfnotes.File, open debugOpener) (frame.FrameDescriptionEntries, error) {
	d, err := open(f)
	if err != nil {
		// As for symbols: an object whose debug file cannot be found
		// (or whose debuglink is damaged) keeps its own CFI.
		return nil, nil
	}
	defer d.Close()
	s := d.Section(".debug_frame")
	if s == nil || s.Type == elf.SHT_NOBITS {
		return nil, nil
	}
	if d.Machine != f.Machine || d.ByteOrder != f.ByteOrder {
		return nil, fmt.Errorf("debug file %s: machine %v %v, the object's is %v %v", d.Path, d.Machine, d.ByteOrder, f.Machine, f.ByteOrder)
	}
	data, err := sectionData(d.File, s)
	if err != nil {
		return nil, fmt.Errorf("debug file %s: .debug_frame: %w", d.Path, err)
	}
	fdes, err := parseCFI(data, d.ByteOrder, 0)
	if err != nil {
		return nil, fmt.Errorf("debug file %s: .debug_frame: %w", d.Path, err)
	}
	return fdes, nil
}
