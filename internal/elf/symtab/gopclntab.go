package symtab

import (
	"bytes"
	"debug/elf"
	"debug/gosym"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"

	"github.com/usdtkit/usdtkit/elfnotes"
)

// Section names of the Go toolchain (cmd/link/internal/ld/elf.go).
const (
	secGoBuildInfo = ".go.buildinfo"
	secGoBuildID   = ".note.go.buildid"
	secGopclntab   = ".gopclntab"
	// secGopclntabRelRO is where internal linking puts the table in a PIE
	// binary.
	secGopclntabRelRO = ".data.rel.ro.gopclntab"
)

// IsGo reports whether f was built by the Go toolchain: it has a
// .go.buildinfo or .gopclntab section, or the Go build-ID note.
func IsGo(f *elfnotes.File) bool {
	for _, name := range []string{secGoBuildInfo, secGopclntab, secGopclntabRelRO, secGoBuildID} {
		if f.Section(name) != nil {
			return true
		}
	}
	return false
}

// gopclntabSection returns the section holding the Go function table, or nil.
func gopclntabSection(f *elfnotes.File) *elfnotes.Section {
	if s := f.Section(secGopclntab); s != nil && s.Type != elf.SHT_NOBITS {
		return s
	}
	if s := f.Section(secGopclntabRelRO); s != nil && s.Type != elf.SHT_NOBITS {
		return s
	}
	return nil
}

// Magic numbers of the pclntab formats (internal/abi.PCLnTabMagic) that
// Read reads. The Go 1.2 format (0xfffffffb, Go 1.2 to 1.15) is refused:
// its names and file names are unbounded offsets into the whole table,
// which debug/gosym turns into overlapping strings, so a small hostile
// table could make it allocate quadratically.
const (
	pclntab116 = 0xfffffffa // Go 1.16, 1.17
	pclntab118 = 0xfffffff0 // Go 1.18, 1.19
	pclntab120 = 0xfffffff1 // Go 1.20 and later
)

// minFuncBytes is the fewest bytes a function takes in a Go 1.16+ pclntab:
// its functab entry (two fields of at least 4 bytes) and its _func record
// (at least 9 fields of 4 bytes; runtime/runtime2.go). Bounding the
// function count by it bounds what debug/gosym allocates by the table's
// size.
const minFuncBytes = 2*4 + 9*4

// maxPclntab bounds the size of a .gopclntab that is read: the table is
// read whole, and the largest Go binaries have tables of tens of MiB.
const maxPclntab = 128 << 20

// checkPclntab validates the parts of a Go 1.16+ pclntab that decide how
// much debug/gosym allocates: the function count, the functab, and the
// function names, whose total length it bounds by the table size. It
// returns the byte offset in data of a problem, and a message ("" if none).
func checkPclntab(data []byte) (int, string) {
	if len(data) < 8 {
		return 0, "gopclntab too short"
	}
	// Like debug/gosym, take the byte order from the magic, which reads
	// differently in the other order.
	var order binary.ByteOrder = binary.LittleEndian
	magic := order.Uint32(data)
	if m := binary.BigEndian.Uint32(data); m == pclntab116 || m == pclntab118 || m == pclntab120 {
		order, magic = binary.BigEndian, m
	}
	ptr := int(data[7])
	if ptr != 4 && ptr != 8 {
		return 7, "bad gopclntab pointer size"
	}
	// The header is 8 bytes and then pointer-sized words: nfunc, nfiles,
	// [textStart (1.18+)], funcnameOffset, cuOffset, filetabOffset,
	// pctabOffset, pclnOffset.
	nameWord, pclnWord, field := 2, 6, ptr
	switch magic {
	case pclntab116:
	case pclntab118, pclntab120:
		nameWord, pclnWord, field = 3, 7, 4
	default:
		return 0, "unsupported gopclntab version"
	}
	if len(data) < 8+(pclnWord+1)*ptr {
		return 0, "gopclntab header truncated"
	}
	word := func(i int) uint64 {
		if ptr == 4 {
			return uint64(order.Uint32(data[8+i*4:]))
		}
		return order.Uint64(data[8+i*8:])
	}
	n := len(data)
	nfunc := word(0)
	if nfunc == 0 || nfunc > uint64(n/minFuncBytes) {
		return 8, "gopclntab function count out of range"
	}
	names, pcln := word(nameWord), word(pclnWord)
	if names >= uint64(n) {
		return 8 + nameWord*ptr, "gopclntab name table out of range"
	}
	tabEnd := pcln + (2*nfunc+1)*uint64(field) // no overflow: both bounded by n above
	if pcln >= uint64(n) || tabEnd > uint64(n) {
		return 8 + pclnWord*ptr, "gopclntab function table out of range"
	}
	readField := func(off uint64) uint64 {
		if field == 4 {
			return uint64(order.Uint32(data[off:]))
		}
		return order.Uint64(data[off:])
	}
	budget := n // total bytes of names, as the table could hold them
	for i := range nfunc {
		at := pcln + (2*i+1)*uint64(field)
		// _func starts with entry (4 bytes from 1.18, a pointer before),
		// then nameOff (int32). Its offset is relative to pcln.
		x := readField(at)
		if x >= uint64(n)-pcln || pcln+x+uint64(field)+4 > uint64(n) {
			return int(at), "gopclntab function record out of range"
		}
		nameAt := pcln + x + uint64(field)
		off := names + uint64(order.Uint32(data[nameAt:]))
		if off >= uint64(n) {
			return int(nameAt), "gopclntab function name out of range"
		}
		l := bytes.IndexByte(data[off:], 0)
		if l < 0 {
			return int(nameAt), "gopclntab function name not NUL-terminated"
		}
		if budget -= l; budget < 0 {
			return int(nameAt), "gopclntab function names overlap"
		}
	}
	return 0, ""
}

// goSymbols lists the functions in the .gopclntab of a Go binary whose
// .symtab has been stripped (go build -ldflags=-s).
func goSymbols(f *elfnotes.File) ([]Symbol, error) {
	sec := gopclntabSection(f)
	if sec.Size > maxPclntab {
		return nil, newFormatError(sec.Offset, "gopclntab larger than the limit", sec.Size)
	}
	data, err := sec.Data()
	if err != nil {
		return nil, err
	}
	// runtime.text, which the Go 1.18+ table is relative to, is the start
	// of .text (cmd/internal/objfile does the same).
	text := f.Section(".text")
	if text == nil {
		return nil, fmt.Errorf("%s: no .text section: %w", sec.Name, ErrNoSymbols)
	}
	funcs, err := parseGopclntab(data, sec.Offset, text.Addr)
	if err != nil {
		return nil, err
	}
	textIdx := uint16(0)
	for i, s := range f.Sections {
		if s == text && i < int(elf.SHN_LORESERVE) {
			textIdx = uint16(i)
		}
	}
	out := make([]Symbol, 0, len(funcs))
	for _, fn := range funcs {
		if fn.Sym == nil || fn.Name == "" {
			continue
		}
		s := Symbol{
			// The linker writes "·" as "." into .symtab; so does
			// debug/gosym for .gosymtab names, but not for these.
			Name:    strings.ReplaceAll(fn.Name, "·", "."),
			Value:   fn.Entry,
			Type:    elf.STT_FUNC,
			Bind:    elf.STB_GLOBAL,
			Section: textIdx,
			Source:  SourceGopclntab,
		}
		if fn.End > fn.Entry {
			s.Size = fn.End - fn.Entry
		}
		out = append(out, s)
	}
	return out, nil
}

// parseGopclntab returns the functions of the pclntab data, read from file
// offset off, for a binary whose runtime.text is textStart. Errors are
// *elfnotes.FormatError.
func parseGopclntab(data []byte, off, textStart uint64) ([]gosym.Func, error) {
	if at, msg := checkPclntab(data); msg != "" {
		return nil, newFormatError(off+uint64(at), msg, nil)
	}
	// A full slice expression: debug/gosym reslices up to the capacity.
	funcs, err := gosymFuncs(data[:len(data):len(data)], textStart)
	if err != nil {
		return nil, newFormatError(off, "malformed gopclntab", err.Error())
	}
	return funcs, nil
}

// gosymFuncs returns the functions of a pclntab through debug/gosym, which
// is documented as not hardened against malformed input and indexes slices
// with values read from the table. This is the one place where usdtkit
// converts a panic into an error; our own parsers check before they slice.
func gosymFuncs(pclntab []byte, textStart uint64) ([]gosym.Func, error) {
	tab, err := gosymTable(pclntab, textStart)
	if err != nil {
		return nil, err
	}
	return tab.Funcs, nil
}

// gosymTable is the one place debug/gosym decodes a table; a panic
// becomes an error.
func gosymTable(pclntab []byte, textStart uint64) (tab *gosym.Table, err error) {
	defer func() {
		if r := recover(); r != nil {
			tab, err = nil, fmt.Errorf("debug/gosym panicked: %v", r)
		}
	}()
	tab, err = gosym.NewTable(nil, gosym.NewLineTable(pclntab, textStart))
	if err != nil {
		return nil, err
	}
	if len(tab.Funcs) == 0 {
		// gosym itself swallows panics while decoding the table and
		// returns no functions.
		return nil, errors.New("no functions")
	}
	return tab, nil
}

// GoLines is the function and line table of a Go binary, from its
// .gopclntab. It is immutable and safe for concurrent use.
type GoLines struct {
	tab *gosym.Table
}

// ReadGoLines reads f's .gopclntab, checked as [Read] checks it. A file without one gives an error wrapping ErrNoSymbols;
// a malformed one a *elfnotes.FormatError.
func ReadGoLines(f *elfnotes.File) (*GoLines, error) {
	sec := gopclntabSection(f)
	if sec == nil {
		return nil, fmt.Errorf("no .gopclntab: %w", ErrNoSymbols)
	}
	if sec.Size > maxPclntab {
		return nil, newFormatError(sec.Offset, "gopclntab larger than the limit", sec.Size)
	}
	text := f.Section(".text")
	if text == nil {
		return nil, fmt.Errorf("%s: no .text section: %w", sec.Name, ErrNoSymbols)
	}
	data, err := sec.Data()
	if err != nil {
		return nil, err
	}
	if at, msg := checkPclntab(data); msg != "" {
		return nil, newFormatError(sec.Offset+uint64(at), msg, nil)
	}
	tab, err := gosymTable(data[:len(data):len(data)], text.Addr)
	if err != nil {
		return nil, newFormatError(sec.Offset, "malformed gopclntab", err.Error())
	}
	return &GoLines{tab: tab}, nil
}

// PCToFunc returns the function containing the virtual address pc: its
// name with "·" as ".", and its entry; ok is false when no function
// contains pc. It is PCToLine without decoding the line table.
func (g *GoLines) PCToFunc(pc uint64) (fn string, entry uint64, ok bool) {
	defer func() {
		if r := recover(); r != nil {
			fn, entry, ok = "", 0, false
		}
	}()
	f := g.tab.PCToFunc(pc)
	if f == nil {
		return "", 0, false
	}
	return strings.ReplaceAll(f.Name, "·", "."), f.Entry, true
}

// PCToLine returns the function containing the virtual address pc (its
// name with "·" as ".", and its entry) and the file and line of pc; ok is
// false when no function contains pc. Inlined calls are not expanded: the
// file and line are those of the innermost inlined body, the function the
// outermost.
func (g *GoLines) PCToLine(pc uint64) (fn string, entry uint64, file string, line int, ok bool) {
	defer func() {
		// debug/gosym decodes the line program without bounds checks
		// of its own; a damaged table must not take the caller down.
		if r := recover(); r != nil {
			fn, entry, file, line, ok = "", 0, "", 0, false
		}
	}()
	f := g.tab.PCToFunc(pc)
	if f == nil {
		return "", 0, "", 0, false
	}
	file, line, _ = g.tab.PCToLine(pc)
	return strings.ReplaceAll(f.Name, "·", "."), f.Entry, file, line, true
}
