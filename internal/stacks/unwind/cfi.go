package unwind

import (
	"bytes"
	"compress/zlib"
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/go-delve/delve/pkg/dwarf/frame"
	"github.com/usdtkit/usdtkit/elfnotes"
)

// maxCFISize bounds a CFI section (compressed or not) the parser is given:
// libc's .eh_frame is ~200 KiB, a large C++ program's tens of MiB.
const maxCFISize = 256 << 20

// maxRows bounds an object's cache of evaluated rows; it is cleared when
// full.
const maxRows = 1 << 14

// cfi is the parsed call frame information of one object.
type cfi struct {
	loads   elfnotes.LoadMap // to turn file offsets into addresses
	fdes    frame.FrameDescriptionEntries
	machine elf.Machine
	err     error // why the object has no usable CFI (nil with fdes empty: none present)

	bigEndian bool
	tableOnce sync.Once
	tab       *Table
	tableErr  error

	mu   sync.Mutex
	rows map[uint64]*row
}

// row is the rule set in effect at one address.
type row struct {
	cfa  frame.DWRule
	regs map[uint64]frame.DWRule
	ra   uint64 // return address column
	err  error
}

// row returns the rules at virtual address pc, or nil when no FDE covers it.
func (c *cfi) row(pc uint64) *row {
	if len(c.fdes) == 0 {
		return nil
	}
	c.mu.Lock()
	r, ok := c.rows[pc]
	c.mu.Unlock()
	if ok {
		return r
	}
	fde, err := c.fdes.FDEForPC(pc)
	if err != nil {
		r = nil
	} else {
		r = establish(fde, pc)
	}
	c.mu.Lock()
	if len(c.rows) >= maxRows {
		clear(c.rows)
	}
	c.rows[pc] = r
	c.mu.Unlock()
	return r
}

// establish runs the FDE's program up to pc, turning a panic of the
// parser (it panics on truncated instructions) into the row's error.
func establish(fde *frame.FrameDescriptionEntry, pc uint64) (r *row) {
	defer func() {
		if p := recover(); p != nil {
			r = &row{err: fmt.Errorf("CFI program of FDE at %#x: %v", fde.Begin(), p)}
		}
	}()
	fc, err := fde.EstablishFrame(pc)
	if err != nil {
		return &row{err: fmt.Errorf("CFI program of FDE at %#x: %w", fde.Begin(), err)}
	}
	// DW_CFA_restore returns a register to its rule in the CIE; delve
	// makes one the CIE gives no rule undefined, where the ABI (and gcc,
	// which restores rbp after "pop %rbp") means the caller's value: no
	// rule here. Compilers mark only the return address undefined (a
	// thread's first frame), so that rule stays.
	var cie map[uint64]frame.DWRule
	for reg, rule := range fc.Regs {
		if rule.Rule != frame.RuleUndefined || reg == fc.RetAddrReg {
			continue
		}
		if cie == nil {
			init, err := (&frame.FrameDescriptionEntry{CIE: fde.CIE}).EstablishFrame(0)
			if err != nil {
				break
			}
			cie = init.Regs
		}
		if _, ok := cie[reg]; !ok {
			delete(fc.Regs, reg)
		}
	}
	return &row{cfa: fc.CFA, regs: fc.Regs, ra: fc.RetAddrReg}
}

// loadCFI reads the PT_LOAD segments and the .eh_frame and .debug_frame
// sections of the ELF file r, and, when r has no .debug_frame and debug
// is not nil, the .debug_frame of its separate debug file. Damage gives
// a cfi with err set and no FDEs (the object then unwinds with frame
// pointers), never a panic.
func loadCFI(r io.ReaderAt, debug debugOpener) *cfi {
	c := &cfi{rows: map[uint64]*row{}}
	f, err := elfnotes.NewFile(r)
	if err != nil {
		c.err = err
		return c
	}
	c.machine = f.Machine
	c.bigEndian = f.ByteOrder == binary.BigEndian
	c.loads = f.LoadMap()
	var all frame.FrameDescriptionEntries
	var errs []error
	for _, name := range []string{".eh_frame", ".debug_frame"} {
		s := f.Section(name)
		if s == nil || s.Type == elf.SHT_NOBITS {
			continue
		}
		data, err := sectionData(f, s)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", name, err))
			continue
		}
		ehAddr := uint64(0)
		if name == ".eh_frame" {
			ehAddr = s.Addr
			if ehAddr == 0 {
				// delve tells the formats apart by a non-zero address.
				errs = append(errs, fmt.Errorf("%s at address 0", name))
				continue
			}
		}
		fdes, err := parseCFI(data, f.ByteOrder, ehAddr)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", name, err))
			continue
		}
		all = append(all, fdes...)
	}
	if s := f.Section(".debug_frame"); debug != nil && (s == nil || s.Type == elf.SHT_NOBITS) {
		fdes, err := debugFrame(f, debug)
		if err != nil {
			errs = append(errs, err)
		}
		all = append(all, fdes...)
	}
	if c.machine == elf.EM_AARCH64 {
		fixARM64Programs(all)
	}
	// Append sorts by address, which FDEForPC needs, and drops
	// duplicates (.eh_frame and .debug_frame may both describe a function).
	c.fdes = frame.FrameDescriptionEntries(nil).Append(all)
	c.err = errors.Join(errs...)
	return c
}

// sectionData reads a section, inflating SHF_COMPRESSED zlib sections
// (Go's .debug_frame), with the uncompressed size bounded.
func sectionData(f *elfnotes.File, s *elfnotes.Section) ([]byte, error) {
	if s.Size > maxCFISize {
		return nil, fmt.Errorf("%d bytes, more than %d", s.Size, maxCFISize)
	}
	data, err := s.Data()
	if err != nil || s.Flags&elf.SHF_COMPRESSED == 0 {
		return data, err
	}
	if f.Class != elf.ELFCLASS64 || len(data) < 24 {
		return nil, errors.New("compressed section without a 64-bit header")
	}
	typ := elf.CompressionType(f.ByteOrder.Uint32(data))
	size := f.ByteOrder.Uint64(data[8:])
	if typ != elf.COMPRESS_ZLIB {
		return nil, fmt.Errorf("compression %v is not supported", typ)
	}
	if size > maxCFISize {
		return nil, fmt.Errorf("uncompressed size %d, more than %d", size, maxCFISize)
	}
	zr, err := zlib.NewReader(bytes.NewReader(data[24:]))
	if err != nil {
		return nil, err
	}
	out := make([]byte, 0, min(size, 64*uint64(len(data))))
	buf := bytes.NewBuffer(out)
	if _, err := io.Copy(buf, io.LimitReader(zr, int64(size))); err != nil {
		return nil, err
	}
	if uint64(buf.Len()) != size {
		return nil, fmt.Errorf("inflated %d bytes, header says %d", buf.Len(), size)
	}
	return buf.Bytes(), nil
}

// parseCFI parses a .eh_frame (ehFrameAddr: the section's address, not 0)
// or .debug_frame (ehFrameAddr 0) section with delve's parser, turning its
// panics on malformed input into errors. FDE addresses are the object's
// virtual addresses.
func parseCFI(data []byte, order binary.ByteOrder, ehFrameAddr uint64) (fdes frame.FrameDescriptionEntries, err error) {
	if len(data) > maxCFISize {
		return nil, fmt.Errorf("CFI of %d bytes, more than %d", len(data), maxCFISize)
	}
	defer func() {
		if p := recover(); p != nil {
			fdes, err = nil, fmt.Errorf("malformed CFI: %v", p)
		}
	}()
	return frame.Parse(data, order, 0, 8, ehFrameAddr)
}
