package unwind

import (
	"errors"
	"fmt"
	"sort"

	"github.com/usdtkit/usdtkit/elfnotes"
	"github.com/usdtkit/usdtkit/internal/proc/procfs"
)

// MaxTableRows bounds the rows of one object's Table (16 bytes each):
// NewTable refuses an object that needs more with ErrTableTooLarge.
const MaxTableRows = 1 << 20

// ErrTableTooLarge is wrapped by NewTable for objects whose CFI needs
// more than MaxTableRows rows; they unwind with frame pointers.
var ErrTableTooLarge = errors.New("unwind table too large")

// Kind says how a Row unwinds a frame whose PC it covers.
type Kind uint8

const (
	KindNone        Kind = iota // no CFI here: unwind with the frame pointer
	KindEnd                     // return address undefined: the outermost frame
	KindSP                      // CFA = SP + CFAOffset
	KindFP                      // CFA = FP + CFAOffset
	KindPLT                     // x86-64 PLT entry: CFA = SP + CFAOffset, plus 8 when PC&15 >= Arg
	KindUnsupported             // CFI a row cannot express (another CFA register, an expression)
)

var kindNames = [...]string{"none", "end", "sp", "fp", "plt", "unsupported"}

func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return fmt.Sprintf("Kind(%d)", uint8(k))
}

// RARule says where a Row finds the return address.
type RARule uint8

const (
	RAAtCFA RARule = iota // at CFA + RAOffset
	RAInLR                // in the link register (arm64, before it is saved)
)

// FPRule says what a Row does to the frame pointer.
type FPRule uint8

const (
	FPSame      FPRule = iota // the caller's is the callee's
	FPAtCFA                   // the caller's is at CFA + FPOffset
	FPUndefined               // unknown in the caller: a later KindFP row stops the walk
)

// Row is the unwinding rule of the addresses from PC up to the next
// row's PC. PC is an address of the object's ELF image (a PC minus the
// load bias of its mapping, Table.Bias), so one Table serves every
// process that maps the object. The layout is fixed, 16 bytes without
// padding, for a BPF array map.
type Row struct {
	PC        uint32
	CFAOffset int32 // KindSP, KindFP, KindPLT
	RAOffset  int16 // RAAtCFA
	FPOffset  int16 // FPAtCFA
	Kind      Kind
	Arg       uint8 // KindPLT: the PC&15 threshold
	RA        RARule
	FP        FPRule
}

// RowSize is the size of a Row in bytes.
const RowSize = 16

// Table is the call frame information of one object compiled into rows
// sorted by PC, adjacent rows differing: the addresses before the first
// row and from the last (a KindNone row) on have no CFI. A Table is
// immutable and safe for concurrent use.
type Table struct {
	Rows  []Row
	loads elfnotes.LoadMap
}

// Lookup returns the row covering pc, an address of the object's image:
// a KindNone row where no CFI covers it.
func (t *Table) Lookup(pc uint32) Row {
	i := sort.Search(len(t.Rows), func(i int) bool { return t.Rows[i].PC > pc })
	if i == 0 {
		return Row{PC: 0, Kind: KindNone}
	}
	return t.Rows[i-1]
}

// Bias returns the load bias of mapping m of the object: a PC in m minus
// the bias is the address Lookup takes. ok is false when m's offset is in
// no PT_LOAD segment of the object.
func (t *Table) Bias(m procfs.Mapping) (bias uint64, ok bool) {
	va, ok := t.loads.OffsetToAddr(m.Offset)
	if !ok {
		return 0, false
	}
	return m.Start - va, true
}

// Size is the size of the rows in bytes.
func (t *Table) Size() int { return len(t.Rows) * RowSize }
