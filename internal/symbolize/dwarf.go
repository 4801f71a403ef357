package symbolize

import (
	"cmp"
	"debug/dwarf"
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"path"
	"slices"
	"strings"
	"sync"
)

// maxDWARF bounds the total (uncompressed) size of the .debug_* sections
// read for one object; larger DWARF is not read and its frames have no
// inlined calls and no file:line (Go frames still get them from
// .gopclntab).
const maxDWARF = 256 << 20

// maxInlineCache bounds the addresses whose inline chains one object
// remembers.
const maxInlineCache = 1 << 16

// inlFrame is one level of an address's inline chain.
type inlFrame struct {
	name string
	file string
	line int
}

// dwarfLines expands addresses into their chains of inlined calls with
// file and line, from an object's DWARF. Safe for concurrent use.
type dwarfLines struct {
	data *dwarf.Data

	mu    sync.Mutex
	cache map[uint64][]inlFrame
	units []pcRange // every unit's ranges, sorted; nil until first used
	// unitsByOff holds the subprograms and line table of each unit,
	// read when the unit is first looked into.
	unitsByOff map[dwarf.Offset]*unitInfo
	// trees holds the inlined calls of each subprogram looked into.
	trees map[dwarf.Offset]*inlTree
}

// lineTable is a unit's line program decoded into rows sorted by
// address, and its file names, made absolute.
type lineTable struct {
	rows  []lineRow
	files []string
}

// lineRow is the start of the rows of one line; line < 0 ends a sequence.
type lineRow struct {
	addr uint64
	line int32
	file uint32
}

// maxLineRows bounds the rows kept for one unit.
const maxLineRows = 1 << 22

// lineTable decodes the line table of unit cu; a damaged one gives what
// was read before the damage.
func (d *dwarfLines) lineTable(cu *dwarf.Entry) *lineTable {
	lt := &lineTable{}
	lr, err := d.data.LineReader(cu)
	if err != nil || lr == nil {
		return lt
	}
	// Names relative to the compilation directory are made absolute,
	// as addr2line prints them.
	compDir, _ := cu.Val(dwarf.AttrCompDir).(string)
	index := make(map[*dwarf.LineFile]uint32)
	for _, f := range lr.Files() {
		name := ""
		if f != nil {
			name = f.Name
			if name != "" && !path.IsAbs(name) && compDir != "" {
				name = path.Join(compDir, name)
			}
			index[f] = uint32(len(lt.files))
		}
		lt.files = append(lt.files, name)
	}
	var le dwarf.LineEntry
	for len(lt.rows) < maxLineRows && lr.Next(&le) == nil {
		row := lineRow{addr: le.Address, line: int32(min(le.Line, 1<<30))}
		if le.EndSequence {
			row.line = -1
		} else if fi, ok := index[le.File]; ok {
			row.file = fi
		} else if le.File != nil {
			// A file defined by the line program itself (DWARF < 5).
			index[le.File] = uint32(len(lt.files))
			row.file = uint32(len(lt.files))
			lt.files = append(lt.files, le.File.Name)
		}
		lt.rows = append(lt.rows, row)
	}
	// Sequences may come in any order; within one, rows ascend. Where a
	// sequence ends at the address the next one starts, the end comes
	// first; a lookup takes the last row at or below pc.
	slices.SortStableFunc(lt.rows, func(a, b lineRow) int {
		return cmp.Or(cmp.Compare(a.addr, b.addr), cmp.Compare(min(a.line, 0), min(b.line, 0)))
	})
	return lt
}

// lookup returns the file and line of pc.
func (lt *lineTable) lookup(pc uint64) (string, int) {
	i, _ := slices.BinarySearchFunc(lt.rows, pc, func(r lineRow, pc uint64) int {
		if r.addr <= pc {
			return -1
		}
		return 1
	})
	if i == 0 {
		return "", 0
	}
	r := lt.rows[i-1]
	if r.line < 0 || int(r.file) >= len(lt.files) {
		return "", 0
	}
	return lt.files[r.file], int(r.line)
}

// unitInfo is what lookups need of one unit.
type unitInfo struct {
	funcs []pcRange // subprograms, sorted
	lines *lineTable
}

// pcRange is [lo, hi) of an entry at off.
type pcRange struct {
	lo, hi uint64
	off    dwarf.Offset
}

// findRange returns the entry of the range in rs (sorted by lo) that
// contains pc; rs may overlap (a unit's ranges), so a few before are
// looked at too.
func findRange(rs []pcRange, pc uint64) (dwarf.Offset, bool) {
	i, _ := slices.BinarySearchFunc(rs, pc, func(r pcRange, pc uint64) int {
		if r.lo <= pc {
			return -1
		}
		return 1
	})
	for j := i - 1; j >= 0 && j >= i-8; j-- {
		if pc >= rs[j].lo && pc < rs[j].hi {
			return rs[j].off, true
		}
	}
	return 0, false
}

// index reads the ranges of every entry of the reader's current level that
// the tags name, descending into entries of other tags (namespaces,
// classes), until the level ends; sorted by lo.
func (d *dwarfLines) index(r *dwarf.Reader, tag dwarf.Tag) ([]pcRange, error) {
	var out []pcRange
	depth := 0
	for {
		e, err := r.Next()
		if err != nil {
			return nil, err
		}
		if e == nil {
			break
		}
		if e.Tag == 0 {
			if depth--; depth < 0 {
				break
			}
			continue
		}
		if e.Tag == tag {
			rs, err := d.data.Ranges(e)
			if err == nil {
				for _, x := range rs {
					if x[1] > x[0] {
						out = append(out, pcRange{x[0], x[1], e.Offset})
					}
				}
			}
			r.SkipChildren()
			continue
		}
		if e.Children {
			if tag == dwarf.TagCompileUnit || e.Tag == dwarf.TagSubprogram {
				r.SkipChildren()
				continue
			}
			depth++
		}
	}
	slices.SortFunc(out, func(a, b pcRange) int { return cmp.Compare(a.lo, b.lo) })
	return out, nil
}

// loadDWARF reads the DWARF of the ELF file r, through debug/elf and
// debug/dwarf, which are not hardened: sizes are checked first, and a
// panic becomes an error. A file without DWARF gives nil, nil.
func loadDWARF(r io.ReaderAt) (d *dwarfLines, err error) {
	defer func() {
		if p := recover(); p != nil {
			d, err = nil, fmt.Errorf("debug/dwarf panicked: %v", p)
		}
	}()
	ef, err := elf.NewFile(r)
	if err != nil {
		return nil, err
	}
	var total uint64
	info := false
	for _, s := range ef.Sections {
		if strings.HasPrefix(s.Name, ".debug_") || strings.HasPrefix(s.Name, ".zdebug_") {
			if s.Type == elf.SHT_NOBITS {
				continue
			}
			total += s.Size
			info = info || s.Name == ".debug_info" || s.Name == ".zdebug_info"
		}
	}
	if !info {
		return nil, nil
	}
	if total > maxDWARF {
		return nil, fmt.Errorf("DWARF of %d bytes, larger than the limit", total)
	}
	data, err := ef.DWARF()
	if err != nil {
		return nil, err
	}
	return &dwarfLines{data: data, cache: make(map[uint64][]inlFrame)}, nil
}

// chain returns the frames of pc from the innermost inlined function out
// to the function that contains it; nil when the DWARF does not describe
// pc.
func (d *dwarfLines) chain(pc uint64) []inlFrame {
	d.mu.Lock()
	defer d.mu.Unlock()
	if c, ok := d.cache[pc]; ok {
		return c
	}
	c, _ := d.lookup(pc)
	if len(d.cache) >= maxInlineCache {
		clear(d.cache)
	}
	d.cache[pc] = c
	return c
}

// lookup finds pc's compilation unit, the subprogram containing it and
// the inlined subroutines, nested in each other, that contain it.
func (d *dwarfLines) lookup(pc uint64) (c []inlFrame, err error) {
	defer func() {
		if p := recover(); p != nil {
			c, err = nil, fmt.Errorf("debug/dwarf panicked: %v", p)
		}
	}()
	r := d.data.Reader()
	if d.units == nil {
		if d.units, err = d.index(r, dwarf.TagCompileUnit); err != nil {
			d.units = []pcRange{}
			return nil, err
		}
		if d.units == nil {
			d.units = []pcRange{}
		}
	}
	cuOff, ok := findRange(d.units, pc)
	if !ok {
		return nil, errors.New("no unit")
	}
	u := d.unitsByOff[cuOff]
	if u == nil {
		r.Seek(cuOff)
		cu, err := r.Next()
		if err != nil || cu == nil {
			return nil, fmt.Errorf("unit at %#x: %v", cuOff, err)
		}
		u = &unitInfo{}
		u.funcs, _ = d.index(r, dwarf.TagSubprogram)
		u.lines = d.lineTable(cu)
		if d.unitsByOff == nil {
			d.unitsByOff = make(map[dwarf.Offset]*unitInfo)
		}
		d.unitsByOff[cuOff] = u
	}
	funcs := u.funcs
	fnOff, ok := findRange(funcs, pc)
	if !ok {
		return nil, errors.New("no function")
	}
	tree := d.trees[fnOff]
	if tree == nil {
		if tree, err = d.inlineTree(r, fnOff); err != nil {
			return nil, err
		}
		if d.trees == nil {
			d.trees = make(map[dwarf.Offset]*inlTree)
		}
		d.trees[fnOff] = tree
	}
	// The inlined calls containing pc nest: one per depth, outermost
	// (depth 1) first; the subprogram is depth 0.
	var buf [8]*inlNode
	scopes := append(buf[:0], &tree.fn)
	for k := 0; k < len(tree.nodes); {
		n := &tree.nodes[k]
		if n.depth < len(scopes) {
			break // left the innermost call containing pc
		}
		if n.contains(pc) {
			scopes = append(scopes, n)
			k++
			continue
		}
		k = max(n.end, k+1) // skip the calls inlined into n
	}
	lt := u.lines
	files := lt.files
	file, line := lt.lookup(pc)
	// Innermost first: each level's position is the call site recorded
	// on the level inside it.
	out := make([]inlFrame, 0, len(scopes))
	for i := len(scopes) - 1; i >= 0; i-- {
		n := scopes[i]
		out = append(out, inlFrame{name: n.name, file: file, line: line})
		file, line = "", n.callLine
		if n.callFile >= 0 && n.callFile < len(files) {
			file = files[n.callFile]
		}
	}
	return out, nil
}

// inlTree is a subprogram and the inlined calls in it, flattened in the
// order of the DWARF tree (a parent before its children).
type inlTree struct {
	fn    inlNode
	nodes []inlNode
}

// inlNode is a subprogram or an inlined call.
type inlNode struct {
	name     string
	ranges   [][2]uint64
	depth    int // inlined calls around it, itself included; 0 for the subprogram
	end      int // index in inlTree.nodes after the calls inlined into it
	callFile int // index in the unit's files, -1 if none
	callLine int
}

func (n *inlNode) contains(pc uint64) bool {
	for _, r := range n.ranges {
		if pc >= r[0] && pc < r[1] {
			return true
		}
	}
	return false
}

// maxInlNodes bounds the inlined calls kept for one subprogram.
const maxInlNodes = 1 << 16

// inlineTree reads the subprogram at off and every inlined call in it,
// through lexical blocks.
func (d *dwarfLines) inlineTree(r *dwarf.Reader, off dwarf.Offset) (*inlTree, error) {
	r.Seek(off)
	fn, err := r.Next()
	if err != nil || fn == nil {
		return nil, fmt.Errorf("function at %#x: %v", off, err)
	}
	t := &inlTree{fn: inlNode{name: d.name(fn), callFile: -1}}
	if !fn.Children {
		return t, nil
	}
	// inl[i] says whether level i+1 below the subprogram is an inlined call.
	var inl []bool
	depth := 0     // inlined calls around the next entry
	var open []int // indexes of the inlined calls being read
	defer func() {
		for _, i := range open {
			t.nodes[i].end = len(t.nodes)
		}
	}()
	for len(t.nodes) < maxInlNodes {
		e, err := r.Next()
		if err != nil {
			return nil, err
		}
		if e == nil {
			break
		}
		if e.Tag == 0 {
			if len(inl) == 0 {
				break // end of the subprogram
			}
			if inl[len(inl)-1] {
				depth--
				t.nodes[open[len(open)-1]].end = len(t.nodes)
				open = open[:len(open)-1]
			}
			inl = inl[:len(inl)-1]
			continue
		}
		switch e.Tag {
		case dwarf.TagInlinedSubroutine:
			rs, _ := d.data.Ranges(e)
			n := inlNode{name: d.name(e), ranges: rs, depth: depth + 1, callFile: -1}
			if cf, ok := e.Val(dwarf.AttrCallFile).(int64); ok && cf >= 0 && cf < 1<<30 {
				n.callFile = int(cf)
			}
			if cl, ok := e.Val(dwarf.AttrCallLine).(int64); ok && cl >= 0 && cl < 1<<30 {
				n.callLine = int(cl)
			}
			n.end = len(t.nodes) + 1
			t.nodes = append(t.nodes, n)
			if e.Children {
				inl = append(inl, true)
				open = append(open, len(t.nodes)-1)
				depth++
			}
		case dwarf.TagLexDwarfBlock:
			if e.Children {
				inl = append(inl, false)
			}
		default:
			r.SkipChildren() // variables, call sites, nested functions, types
		}
	}
	return t, nil
}

// contains reports whether e's ranges contain pc.
func (d *dwarfLines) contains(e *dwarf.Entry, pc uint64) bool {
	rs, err := d.data.Ranges(e)
	if err != nil {
		return false
	}
	for _, r := range rs {
		if pc >= r[0] && pc < r[1] {
			return true
		}
	}
	return false
}

// name returns the name of a subprogram or inlined subroutine, following
// DW_AT_abstract_origin and DW_AT_specification (a few levels at most);
// C++ linkage names are demangled.
func (d *dwarfLines) name(e *dwarf.Entry) string {
	for range 4 {
		for _, a := range []dwarf.Attr{dwarf.AttrLinkageName, dwarf.AttrName} {
			if n, ok := e.Val(a).(string); ok && n != "" {
				if a == dwarf.AttrLinkageName {
					return demangleName(n)
				}
				return n
			}
		}
		var ref dwarf.Offset
		var ok bool
		if ref, ok = e.Val(dwarf.AttrAbstractOrigin).(dwarf.Offset); !ok {
			if ref, ok = e.Val(dwarf.AttrSpecification).(dwarf.Offset); !ok {
				return ""
			}
		}
		r := d.data.Reader()
		r.Seek(ref)
		next, err := r.Next()
		if err != nil || next == nil {
			return ""
		}
		e = next
	}
	return ""
}
