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
//
// Everything is built on first use and kept: the ranges of every unit
// (one sorted index), and per unit looked into, its subprograms' ranges
// and its line table; per subprogram looked into, its inlined calls as a
// tree of nodes and a sorted index of address segments, each naming the
// innermost node that contains it. A lookup is then three binary
// searches and a walk up the tree; DWARF is read once per unit and
// subprogram, never per address.
type dwarfLines struct {
	data *dwarf.Data

	mu    sync.Mutex
	units []pcRange // every unit's ranges, sorted; nil until first used
	// unitInfos holds, per unit (pcRange.idx of units), its subprograms
	// and line table, read when the unit is first looked into.
	unitInfos []*unitInfo
	// names holds the names of abstract origins and specifications
	// already followed, shared by every inlined call of one function.
	names map[dwarf.Offset]string
	// files holds each file name of the line tables once: the units of
	// a library name the same headers.
	files map[string]string
}

// intern returns s, or the equal string kept before.
func (d *dwarfLines) intern(s string) string {
	if k, ok := d.files[s]; ok {
		return k
	}
	if d.files == nil {
		d.files = make(map[string]string)
	}
	d.files[s] = s
	return s
}

// lineTable is a unit's line program decoded into rows sorted by
// address, one per change of file or line, and its file names, made
// absolute.
type lineTable struct {
	addrs []uint64  // where each row starts
	rows  []lineRow // parallel to addrs
	files []string
}

// lineRow is the file and line from its address on; line < 0 ends a
// sequence.
type lineRow struct {
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
		lt.files = append(lt.files, d.intern(name))
	}
	type row struct {
		addr uint64
		lineRow
	}
	var rows []row
	var le dwarf.LineEntry
	for len(rows) < maxLineRows && lr.Next(&le) == nil {
		r := row{addr: le.Address, lineRow: lineRow{line: int32(min(le.Line, 1<<30))}}
		if le.EndSequence {
			r.line = -1
		} else if fi, ok := index[le.File]; ok {
			r.file = fi
		} else if le.File != nil {
			// A file defined by the line program itself (DWARF < 5).
			index[le.File] = uint32(len(lt.files))
			r.file = uint32(len(lt.files))
			lt.files = append(lt.files, d.intern(le.File.Name))
		}
		rows = append(rows, r)
	}
	// Sequences may come in any order; within one, rows ascend. Where a
	// sequence ends at the address the next one starts, the end comes
	// first; a lookup takes the last row at or below pc.
	slices.SortStableFunc(rows, func(a, b row) int {
		return cmp.Or(cmp.Compare(a.addr, b.addr), cmp.Compare(min(a.line, 0), min(b.line, 0)))
	})
	// Rows that change neither file nor line (a new column, statement
	// or view) change no lookup: they are not kept.
	n := 0
	for i, r := range rows {
		if n > 0 && rows[n-1].lineRow == r.lineRow {
			continue
		}
		if i+1 < len(rows) && rows[i+1].addr == r.addr {
			continue // the last row at an address wins
		}
		rows[n] = r
		n++
	}
	lt.addrs = make([]uint64, n)
	lt.rows = make([]lineRow, n)
	for i, r := range rows[:n] {
		lt.addrs[i], lt.rows[i] = r.addr, r.lineRow
	}
	return lt
}

// lookup returns the file and line of pc, whose row is among rows
// [lo, hi).
func (lt *lineTable) lookup(pc uint64, lo, hi int) (string, int) {
	i, found := slices.BinarySearch(lt.addrs[lo:hi], pc)
	if found {
		i++
	}
	if i == 0 {
		return "", 0
	}
	r := lt.rows[lo+i-1]
	if r.line < 0 || int(r.file) >= len(lt.files) {
		return "", 0
	}
	return lt.files[r.file], int(r.line)
}

// span returns the rows that give the file and line of [lo, hi): from
// the last row at or below lo to the first at or above hi.
func (lt *lineTable) span(lo, hi uint64) (int, int) {
	i, found := slices.BinarySearch(lt.addrs, lo)
	if !found && i > 0 {
		i--
	}
	j, _ := slices.BinarySearch(lt.addrs, hi)
	return i, max(i, j)
}

// unitInfo is what lookups need of one unit.
type unitInfo struct {
	funcs []pcRange // subprograms, sorted
	// rows holds per range of funcs the rows of the line table that
	// cover it, [rows[2i], rows[2i+1]): a lookup searches those only.
	rows []int32
	// trees holds per subprogram (pcRange.idx of funcs) its inlined
	// calls, read when first looked into.
	trees []*inlTree
	lines *lineTable
}

// pcRange is [lo, hi) of an entry at off, the idx-th entry indexed.
type pcRange struct {
	lo, hi uint64
	off    dwarf.Offset
	idx    int32
}

// findRange returns the index of the range in rs (sorted by lo) that
// contains pc; rs may overlap (a unit's ranges), so a few before are
// looked at too.
func findRange(rs []pcRange, pc uint64) (int, bool) {
	i, _ := slices.BinarySearchFunc(rs, pc, func(r pcRange, pc uint64) int {
		if r.lo <= pc {
			return -1
		}
		return 1
	})
	for j := i - 1; j >= 0 && j >= i-8; j-- {
		if pc >= rs[j].lo && pc < rs[j].hi {
			return j, true
		}
	}
	return 0, false
}

// index reads the ranges of every entry of the reader's current level that
// the tags name, descending into entries of other tags (namespaces,
// classes), until the level ends; sorted by lo. n is the number of
// entries: each range's idx is its entry's, in reading order.
func (d *dwarfLines) index(r *dwarf.Reader, tag dwarf.Tag) (out []pcRange, n int, err error) {
	depth := 0
	for {
		e, err := r.Next()
		if err != nil {
			return nil, 0, err
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
				added := false
				for _, x := range rs {
					if x[1] > x[0] {
						out = append(out, pcRange{x[0], x[1], e.Offset, int32(n)})
						added = true
					}
				}
				if added {
					n++
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
	return out, n, nil
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
	data, err := readSections(ef)
	if err != nil {
		return nil, err
	}
	return &dwarfLines{data: data, names: make(map[dwarf.Offset]string)}, nil
}

// readSections builds the dwarf.Data of ef from the sections lookups
// use only: not the location lists, type units, frame tables and
// indexes, which are often most of a library's DWARF. Files with old
// .zdebug_ sections or relocations to apply (ET_REL) are read whole by
// debug/elf.
func readSections(ef *elf.File) (*dwarf.Data, error) {
	if ef.Type == elf.ET_REL || slices.ContainsFunc(ef.Sections, func(s *elf.Section) bool { return strings.HasPrefix(s.Name, ".zdebug_") }) {
		return ef.DWARF()
	}
	data := func(name string) ([]byte, error) {
		s := ef.Section(name)
		if s == nil || s.Type == elf.SHT_NOBITS {
			return nil, nil
		}
		b, err := s.Data() // decompressed, for SHF_COMPRESSED
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		return b, nil
	}
	var sec [4][]byte
	for i, name := range []string{".debug_abbrev", ".debug_info", ".debug_line", ".debug_ranges"} {
		b, err := data(name)
		if err != nil {
			return nil, err
		}
		sec[i] = b
	}
	str, err := data(".debug_str")
	if err != nil {
		return nil, err
	}
	d, err := dwarf.New(sec[0], nil, nil, sec[1], sec[2], nil, sec[3], str)
	if err != nil {
		return nil, err
	}
	// DWARF 5's own sections, as debug/elf adds them.
	for _, name := range []string{".debug_addr", ".debug_line_str", ".debug_str_offsets", ".debug_rnglists"} {
		b, err := data(name)
		if err != nil {
			return nil, err
		}
		if b != nil {
			if err := d.AddSection(name, b); err != nil {
				return nil, err
			}
		}
	}
	return d, nil
}

// Addresses the DWARF does not describe.
var (
	errNoUnit     = errors.New("no unit")
	errNoFunction = errors.New("no function")
)

// appendChain appends the frames of pc from the innermost inlined
// function out to the function that contains it; nothing when the DWARF
// does not describe pc.
func (d *dwarfLines) appendChain(dst []inlFrame, pc uint64) []inlFrame {
	d.mu.Lock()
	defer d.mu.Unlock()
	out, err := d.lookup(dst, pc)
	if err != nil {
		return dst
	}
	return out
}

// lookup finds pc's compilation unit, the subprogram containing it and
// the inlined subroutines, nested in each other, that contain it.
func (d *dwarfLines) lookup(dst []inlFrame, pc uint64) (c []inlFrame, err error) {
	defer func() {
		if p := recover(); p != nil {
			c, err = nil, fmt.Errorf("debug/dwarf panicked: %v", p)
		}
	}()
	var r *dwarf.Reader
	if d.units == nil {
		r = d.data.Reader()
		units, n, err := d.index(r, dwarf.TagCompileUnit)
		if err != nil {
			units, n = nil, 0
		}
		d.units = append(make([]pcRange, 0, len(units)), units...)
		d.unitInfos = make([]*unitInfo, n)
		if err != nil {
			return nil, err
		}
	}
	ci, ok := findRange(d.units, pc)
	if !ok {
		return nil, errNoUnit
	}
	cu := d.units[ci]
	u := d.unitInfos[cu.idx]
	if u == nil {
		if r == nil {
			r = d.data.Reader()
		}
		r.Seek(cu.off)
		e, err := r.Next()
		if err != nil || e == nil {
			return nil, fmt.Errorf("unit at %#x: %v", cu.off, err)
		}
		u = &unitInfo{}
		var n int
		u.funcs, n, _ = d.index(r, dwarf.TagSubprogram)
		u.trees = make([]*inlTree, n)
		u.lines = d.lineTable(e)
		u.rows = make([]int32, 2*len(u.funcs))
		for i, f := range u.funcs {
			lo, hi := u.lines.span(f.lo, f.hi)
			u.rows[2*i], u.rows[2*i+1] = int32(lo), int32(hi)
		}
		d.unitInfos[cu.idx] = u
	}
	fi, ok := findRange(u.funcs, pc)
	fn := u.funcs[fi]
	if !ok {
		return nil, errNoFunction
	}
	tree := u.trees[fn.idx]
	if tree == nil {
		if r == nil {
			r = d.data.Reader()
		}
		if tree, err = d.inlineTree(r, fn.off); err != nil {
			return nil, err
		}
		u.trees[fn.idx] = tree
	}
	files := u.lines.files
	file, line := u.lines.lookup(pc, int(u.rows[2*fi]), int(u.rows[2*fi+1]))
	// Innermost first: each level's position is the call site recorded
	// on the level inside it.
	for k := tree.innermost(pc); k >= 0; {
		n := &tree.nodes[k]
		dst = append(dst, inlFrame{name: n.name, file: file, line: line})
		file, line = "", int(n.callLine)
		if n.callFile >= 0 && int(n.callFile) < len(files) {
			file = files[n.callFile]
		}
		if k == 0 {
			break
		}
		k = int(n.parent)
	}
	return dst, nil
}

// inlTree is a subprogram (nodes[0]) and the inlined calls in it, and an
// index of its code: segments sorted by address, each with the innermost
// node that contains it.
type inlTree struct {
	nodes []inlNode
	segs  []inlSeg
}

// inlNode is a subprogram or an inlined call.
type inlNode struct {
	name     string
	parent   int32 // the node it is inlined into; -1 for the subprogram
	callFile int32 // index in the unit's files, -1 if none
	callLine int32
}

// inlSeg says that node is the innermost node from lo up to the next
// segment's lo (the subprogram, 0, where no inlined call is).
type inlSeg struct {
	lo   uint64
	node int32
}

// innermost returns the innermost node containing pc, 0 (the subprogram)
// where no inlined call does.
func (t *inlTree) innermost(pc uint64) int {
	i, found := slices.BinarySearchFunc(t.segs, pc, func(s inlSeg, pc uint64) int { return cmp.Compare(s.lo, pc) })
	if found {
		i++
	}
	if i == 0 {
		return 0
	}
	return int(t.segs[i-1].node)
}

// maxInlNodes bounds the inlined calls kept for one subprogram.
const maxInlNodes = 1 << 16

// maxInlPaint bounds the work of building one subprogram's segments
// (segments times the nodes containing each); the nodes past it are
// left out of the index, as if not inlined.
const maxInlPaint = 1 << 24

// inlineTree reads the subprogram at off and every inlined call in it,
// through lexical blocks, and builds its segments.
func (d *dwarfLines) inlineTree(r *dwarf.Reader, off dwarf.Offset) (*inlTree, error) {
	r.Seek(off)
	fn, err := r.Next()
	if err != nil || fn == nil {
		return nil, fmt.Errorf("function at %#x: %v", off, err)
	}
	t := &inlTree{nodes: []inlNode{{name: d.name(fn), parent: -1, callFile: -1}}}
	if !fn.Children {
		return t, nil
	}
	// ranges and depth of each node, for the index only.
	ranges := [][][2]uint64{nil}
	depth := []int{0}
	// inl[i] says whether level i+1 below the subprogram is an inlined call.
	var inl []bool
	open := []int32{0} // the inlined calls being read, innermost last
	for len(t.nodes) <= maxInlNodes {
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
				open = open[:len(open)-1]
			}
			inl = inl[:len(inl)-1]
			continue
		}
		switch e.Tag {
		case dwarf.TagInlinedSubroutine:
			rs, _ := d.data.Ranges(e)
			parent := open[len(open)-1]
			n := inlNode{name: d.name(e), parent: parent, callFile: -1}
			if cf, ok := e.Val(dwarf.AttrCallFile).(int64); ok && cf >= 0 && cf < 1<<30 {
				n.callFile = int32(cf)
			}
			if cl, ok := e.Val(dwarf.AttrCallLine).(int64); ok && cl >= 0 && cl < 1<<30 {
				n.callLine = int32(cl)
			}
			t.nodes = append(t.nodes, n)
			ranges = append(ranges, rs)
			depth = append(depth, depth[parent]+1)
			if e.Children {
				inl = append(inl, true)
				open = append(open, int32(len(t.nodes)-1))
			}
		case dwarf.TagLexDwarfBlock:
			if e.Children {
				inl = append(inl, false)
			}
		default:
			r.SkipChildren() // variables, call sites, nested functions, types
		}
	}
	t.segs = paint(ranges, depth)
	return t, nil
}

// paint returns the segments of nodes 1.. (their ranges and depths; a
// parent before its children): each elementary interval between range
// bounds gets the deepest node containing it (of equal depths, the later
// node), adjacent ones with the same node merged.
func paint(ranges [][][2]uint64, depth []int) []inlSeg {
	var bounds []uint64
	for _, rs := range ranges[1:] {
		for _, r := range rs {
			if r[1] > r[0] {
				bounds = append(bounds, r[0], r[1])
			}
		}
	}
	if len(bounds) == 0 {
		return nil
	}
	slices.Sort(bounds)
	bounds = slices.Compact(bounds)
	owner := make([]int32, len(bounds)) // of [bounds[j], bounds[j+1])
	work := 0
	for i := 1; i < len(ranges) && work < maxInlPaint; i++ {
		for _, r := range ranges[i] {
			if r[1] <= r[0] {
				continue
			}
			j, _ := slices.BinarySearch(bounds, r[0])
			for ; j < len(bounds) && bounds[j] < r[1] && work < maxInlPaint; j++ {
				if depth[i] >= depth[owner[j]] {
					owner[j] = int32(i)
				}
				work++
			}
		}
	}
	segs := make([]inlSeg, 0, len(bounds))
	for j, b := range bounds {
		if n := len(segs); n > 0 && segs[n-1].node == owner[j] {
			continue
		}
		segs = append(segs, inlSeg{lo: b, node: owner[j]})
	}
	return slices.Clip(segs)
}

// name returns the name of a subprogram or inlined subroutine, following
// DW_AT_abstract_origin and DW_AT_specification (a few levels at most);
// C++ linkage names are demangled. The name found through a reference is
// remembered per reference: every call inlined from one function shares
// it.
func (d *dwarfLines) name(e *dwarf.Entry) string {
	var first dwarf.Offset
	for i := range 4 {
		for _, a := range []dwarf.Attr{dwarf.AttrLinkageName, dwarf.AttrName} {
			if n, ok := e.Val(a).(string); ok && n != "" {
				if a == dwarf.AttrLinkageName {
					n = demangleName(n)
				}
				if i > 0 {
					d.names[first] = n
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
		if i == 0 {
			if n, ok := d.names[ref]; ok {
				return n
			}
			first = ref
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
