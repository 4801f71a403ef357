package symbolize

import (
	"bufio"
	"cmp"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
)

// A PerfSymbol is one line of a perf map: JIT code at [Start, Start+Size).
type PerfSymbol struct {
	Start, Size uint64
	Name        string
}

// FormatError is a malformed line of a text file (a perf map) or a
// malformed record of a binary one (a jitdump).
type FormatError struct {
	Line int    // 1-based line number; 0 in a binary file
	Off  int64  // byte offset in a binary file (Line 0)
	Msg  string // what is wrong
	Val  any    // the offending text or value, if any
}

func (e *FormatError) Error() string {
	msg := fmt.Sprintf("line %d: %s", e.Line, e.Msg)
	if e.Line == 0 {
		msg = fmt.Sprintf("byte %#x: %s", e.Off, e.Msg)
	}
	if e.Val != nil {
		msg += fmt.Sprintf(" %q", e.Val)
	}
	return msg
}

// Limits of ParsePerfMap.
const (
	// maxPerfLine bounds one line; longer lines are skipped.
	maxPerfLine = 64 << 10
	// maxPerfWarnings bounds the warnings of one parse.
	maxPerfWarnings = 16
)

// ParsePerfMap reads a perf map (/tmp/perf-PID.map, as written by
// OpenJDK's Compiler.perfmap, Node's --perf-basic-prof or Python's -X
// perf): one "START SIZE NAME" line per symbol, START and SIZE in hex
// with or without 0x, NAME the rest of the line (it may hold spaces).
//
// The file is written by the process while it runs, so damage stays
// local: a malformed line, one longer than 64 KiB, or a last line without
// its newline (being written) is skipped, each with a *FormatError among
// the warnings (at most 16). err is only for errors of r. The symbols are
// returned in the order of the file.
func ParsePerfMap(r io.Reader) (syms []PerfSymbol, warnings []error, err error) {
	br := bufio.NewReaderSize(r, 64<<10)
	warn := func(line int, msg string, val any) {
		if len(warnings) < maxPerfWarnings {
			warnings = append(warnings, &FormatError{Line: line, Msg: msg, Val: val})
		}
	}
	syms = []PerfSymbol{}
	for line := 1; ; line++ {
		b, rerr := br.ReadSlice('\n')
		long := false
		for errors.Is(rerr, bufio.ErrBufferFull) {
			long = true
			_, rerr = br.ReadSlice('\n')
		}
		if rerr != nil && !errors.Is(rerr, io.EOF) {
			return nil, nil, rerr
		}
		if len(b) == 0 && rerr != nil {
			return syms, warnings, nil
		}
		switch {
		case long || len(b) > maxPerfLine:
			warn(line, "line longer than 64 KiB", nil)
		case b[len(b)-1] != '\n':
			warn(line, "last line incomplete", nil)
		default:
			s, msg, val := parsePerfLine(string(b[:len(b)-1]))
			if msg != "" {
				warn(line, msg, val)
			} else {
				syms = append(syms, s)
			}
		}
		if rerr != nil {
			return syms, warnings, nil
		}
	}
}

func parsePerfLine(s string) (PerfSymbol, string, any) {
	start, rest, ok := strings.Cut(s, " ")
	if !ok {
		return PerfSymbol{}, "want START SIZE NAME", s
	}
	size, name, ok := strings.Cut(rest, " ")
	if !ok {
		return PerfSymbol{}, "want START SIZE NAME", s
	}
	a, err := strconv.ParseUint(strings.TrimPrefix(start, "0x"), 16, 64)
	if err != nil {
		return PerfSymbol{}, "bad start address", start
	}
	n, err := strconv.ParseUint(strings.TrimPrefix(size, "0x"), 16, 64)
	if err != nil {
		return PerfSymbol{}, "bad size", size
	}
	if a+n < a {
		return PerfSymbol{}, "symbol wraps around the address space", s
	}
	name = strings.TrimRight(name, "\r")
	if name == "" {
		return PerfSymbol{}, "empty name", s
	}
	return PerfSymbol{Start: a, Size: n, Name: name}, "", nil
}

// perfIndex finds perf map symbols by address. Where symbols overlap (JIT
// code freed and its memory reused), the later line wins, as in perf.
type perfIndex struct {
	syms []PerfSymbol
	seq  []int // line order of syms[i]
	// maxSize is the largest Size: a lookup looks back no further.
	maxSize uint64
}

func newPerfIndex(syms []PerfSymbol) *perfIndex {
	idx := make([]int, len(syms))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int { return cmp.Compare(syms[a].Start, syms[b].Start) })
	p := &perfIndex{syms: make([]PerfSymbol, len(syms)), seq: idx}
	for i, j := range idx {
		p.syms[i] = syms[j]
		p.maxSize = max(p.maxSize, syms[j].Size)
	}
	return p
}

// lookup returns the symbol containing addr.
func (p *perfIndex) lookup(addr uint64) (PerfSymbol, bool) {
	i, _ := slices.BinarySearchFunc(p.syms, addr, func(s PerfSymbol, a uint64) int {
		if s.Start <= a {
			return -1
		}
		return 1
	})
	best := -1
	// Look back over the symbols starting at or below addr that could
	// still contain it; bounded so that a perf map of many tiny
	// overlapping symbols cannot make a lookup scan it all.
	for j, n := i-1, 0; j >= 0 && n < 64; j, n = j-1, n+1 {
		s := &p.syms[j]
		if addr-s.Start >= p.maxSize && s.Start != addr {
			break
		}
		if addr-s.Start < s.Size && (best < 0 || p.seq[j] > p.seq[best]) {
			best = j
		}
	}
	if best < 0 {
		return PerfSymbol{}, false
	}
	return p.syms[best], true
}
