package symbolize

import (
	"debug/dwarf"
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"path"
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
	cu, err := r.SeekPC(pc)
	if err != nil {
		return nil, err
	}
	// scopes holds the subprogram and then each inlined subroutine that
	// contains pc, outermost first. Scopes that do not contain pc are
	// skipped whole; the walk ends when it leaves the innermost one.
	var scopes []*dwarf.Entry
	depth := 0  // nesting below the unit of the next entry
	found := -1 // depth of the children of the innermost containing scope
walk:
	for {
		e, err := r.Next()
		if err != nil {
			return nil, err
		}
		if e == nil {
			break walk
		}
		if e.Tag == 0 {
			depth--
			if depth < 0 || depth < found {
				break walk
			}
			continue
		}
		switch e.Tag {
		case dwarf.TagSubprogram, dwarf.TagInlinedSubroutine, dwarf.TagLexDwarfBlock:
			if !d.contains(e, pc) {
				r.SkipChildren()
				continue
			}
			if e.Tag != dwarf.TagLexDwarfBlock {
				scopes = append(scopes, e)
			}
			if !e.Children {
				break walk
			}
			depth++
			found = depth
			continue
		}
		if e.Children {
			if found >= 0 {
				r.SkipChildren() // call sites, types: nothing to find
				continue
			}
			depth++ // namespaces, classes hold subprograms
		}
	}
	if len(scopes) == 0 {
		return nil, errors.New("no function")
	}
	lr, err := d.data.LineReader(cu)
	if err != nil || lr == nil {
		return nil, fmt.Errorf("no line table: %v", err)
	}
	files := lr.Files()
	// Names relative to the compilation directory are made absolute,
	// as addr2line prints them.
	compDir, _ := cu.Val(dwarf.AttrCompDir).(string)
	abs := func(name string) string {
		if name != "" && !path.IsAbs(name) && compDir != "" {
			return path.Join(compDir, name)
		}
		return name
	}
	var le dwarf.LineEntry
	file, line := "", 0
	if lr.SeekPC(pc, &le) == nil && le.File != nil {
		file, line = abs(le.File.Name), le.Line
	}
	// Innermost first: each level's position is the call site recorded
	// on the level inside it.
	out := make([]inlFrame, 0, len(scopes))
	for i := len(scopes) - 1; i >= 0; i-- {
		e := scopes[i]
		out = append(out, inlFrame{name: d.name(e), file: file, line: line})
		file, line = "", 0
		if cf, ok := e.Val(dwarf.AttrCallFile).(int64); ok && cf >= 0 && cf < int64(len(files)) && files[cf] != nil {
			file = abs(files[cf].Name)
		}
		if cl, ok := e.Val(dwarf.AttrCallLine).(int64); ok {
			line = int(cl)
		}
	}
	return out, nil
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
