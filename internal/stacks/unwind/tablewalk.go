package unwind

import (
	"debug/elf"
	"errors"
	"fmt"
	"math"

	"github.com/usdtkit/usdtkit/internal/proc/procfs"
)

var errUnsupportedRow = errors.New("CFI a table row cannot express")

// Table returns the Table of the object mapped by m, compiled once from
// the CFI the Unwinder parsed (errors as NewTable, and ObjectError's).
// After Load, it works when the process has exited.
func (u *Unwinder) Table(sp *Space, m procfs.Mapping) (*Table, error) {
	return u.object(sp, m).table()
}

// UnwindTables walks a stack as Unwind does with the objects' Tables
// instead of their CFI, taking only the steps the BPF unwinder takes: a
// binary search of the row, the CFA from SP or the frame pointer, the
// return address and the frame pointer read from the stack copy. Objects
// without a Table (no CFI, or one NewTable refuses) and KindNone rows
// unwind with frame pointers; KindUnsupported rows end the walk
// (StopCFI).
func (u *Unwinder) UnwindTables(sp *Space, m elf.Machine, regs Regs, stack Stack) (Result, error) {
	return u.walk(m, regs, stack, func(w *walker, first bool) (uint64, Method, Stop, error) {
		mp, ok := sp.Mapping(w.pc)
		if !ok {
			return 0, 0, StopNoMapping, nil
		}
		if mp.FileBacked() && !u.opts.NoCFI {
			if ok, next, stop, err := u.stepTable(sp, mp, w, first); ok {
				return next, MethodCFI, stop, err
			}
		}
		return w.stepFP(first, regs.Entry)
	})
}

// stepTable unwinds one frame with the row of the Table of mp covering
// w's PC; ok is false when there is none (no Table, a KindNone row).
func (u *Unwinder) stepTable(sp *Space, mp procfs.Mapping, w *walker, first bool) (ok bool, next uint64, stop Stop, err error) {
	t, err := u.Table(sp, mp)
	if err != nil {
		return false, 0, 0, nil
	}
	bias, ok := t.Bias(mp)
	if !ok {
		return false, 0, 0, nil
	}
	lookup := w.pc
	if !first {
		// A return address follows the call, which may be the last
		// instruction of its function.
		lookup--
	}
	rel := lookup - bias
	if rel > math.MaxUint32 {
		return false, 0, 0, nil
	}
	r := t.Lookup(uint32(rel))
	if r.Kind == KindNone {
		return false, 0, 0, nil
	}
	next, stop, err = w.applyRow(r)
	return true, next, stop, err
}

// applyRow unwinds with row r (not KindNone).
func (w *walker) applyRow(r Row) (uint64, Stop, error) {
	var cfa uint64
	switch r.Kind {
	case KindEnd:
		return 0, 0, nil
	case KindSP:
		cfa = w.regs.sp + uint64(int64(r.CFAOffset))
	case KindFP:
		fp, ok := w.regs.get(w.a.fp)
		if !ok {
			return 0, StopNoRegister, fmt.Errorf("CFA register %d: %w", w.a.fp, errNoRegister)
		}
		cfa = fp + uint64(int64(r.CFAOffset))
	case KindPLT:
		cfa = w.regs.sp + uint64(int64(r.CFAOffset))
		if w.pc&15 >= uint64(r.Arg) {
			cfa += 8
		}
	default:
		return 0, StopCFI, fmt.Errorf("row at %#x: %w", r.PC, errUnsupportedRow)
	}
	var ret uint64
	switch r.RA {
	case RAAtCFA:
		addr := cfa + uint64(int64(r.RAOffset))
		v, ok := w.stack.read(addr)
		if !ok {
			return 0, StopOutsideCopy, fmt.Errorf("return address at %#x: %w", addr, errOutsideCopy)
		}
		ret = v
	case RAInLR:
		v, ok := w.regs.get(w.a.lr)
		if !ok {
			return 0, StopNoRegister, fmt.Errorf("link register: %w", errNoRegister)
		}
		ret = v
	}
	vals := w.regs.cleared()
	vals.set(w.a.sp, cfa)
	switch r.FP {
	case FPSame:
		if fp, ok := w.regs.get(w.a.fp); ok {
			vals.set(w.a.fp, fp)
		}
	case FPAtCFA:
		if fp, ok := w.stack.read(cfa + uint64(int64(r.FPOffset))); ok {
			vals.set(w.a.fp, fp)
		}
	}
	// The caller's link register is not known: it was saved, with the
	// caller's return address, before the call. A row that finds the
	// return address in it holds only at frame 0.
	w.regs = vals
	return ret, 0, nil
}
