package gofunc

import (
	"bytes"
	"compress/zlib"
	"debug/dwarf"
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"strings"

	pdwarf "github.com/go-delve/delve/pkg/dwarf"
	"github.com/go-delve/delve/pkg/dwarf/frame"
	"github.com/go-delve/delve/pkg/dwarf/godwarf"
	"github.com/go-delve/delve/pkg/dwarf/leb128"
	"github.com/go-delve/delve/pkg/dwarf/line"
)

// Limits of checkDWARF.
const (
	// maxSectionSize bounds one decompressed or uncompressed DWARF
	// section (and a NOBITS .eh_frame, which delve allocates zeroed).
	maxSectionSize = 1 << 30
	// maxInflate bounds the size a compressed section claims per byte it
	// occupies in the file. zlib and zstd compress DWARF 3 to 8 times.
	maxInflate = 64
	// maxDepth bounds the nesting of DWARF entries: delve's loader
	// recurses once per level of inlined calls, on a goroutine whose
	// stack overflow ends the process. Go's inliner nests a few levels.
	maxDepth = 256
)

// DWARFError says why the DWARF of a binary was not given to delve:
// Section and Off (a byte offset in the section's decompressed contents,
// or in the file for section headers; -1 if none applies) locate what is
// malformed.
type DWARFError struct {
	Section string
	Off     int64
	Msg     string
}

func (e *DWARFError) Error() string {
	switch {
	case e.Section == "":
		return "DWARF: " + e.Msg
	case e.Off < 0:
		return fmt.Sprintf("DWARF section %s: %s", e.Section, e.Msg)
	}
	return fmt.Sprintf("DWARF section %s at byte %#x: %s", e.Section, e.Off, e.Msg)
}

// checkDWARF reads the DWARF of the ELF file in r (size bytes) the way
// delve's loader will, and returns a *DWARFError if delve could crash on
// it, where a recover cannot help (its loader parses on goroutines of its
// own) or allocate without bound. The file must not change until delve
// has loaded it.
//
// What delve's goroutines parse is either parsed here first, with the
// same delve code on the same bytes under a recover (line table headers,
// .debug_frame and .eh_frame, the unit headers of .debug_info), or
// checked for the conditions under which delve fails (an entry tree that
// is not closed, which makes its inlined-call walk dereference nil;
// nesting deep enough to overflow its stack; a line table header whose
// counts make it allocate or loop without bound). Sizes that delve or
// debug/elf allocate before reading are bounded by the file's size.
func checkDWARF(r io.ReaderAt, size int64) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = &DWARFError{Off: -1, Msg: fmt.Sprintf("parser panic: %v", p)}
		}
	}()
	ef, err := elf.NewFile(r)
	if err != nil {
		return &DWARFError{Off: -1, Msg: err.Error()}
	}
	for _, s := range ef.Sections {
		if err := checkSection(r, size, ef.Class, s); err != nil {
			return err
		}
	}
	d, err := ef.DWARF()
	if err != nil {
		var de dwarf.DecodeError
		if errors.As(err, &de) {
			return &DWARFError{Section: ".debug_" + de.Name, Off: int64(de.Offset), Msg: de.Err}
		}
		return &DWARFError{Off: -1, Msg: err.Error()}
	}
	sec := func(name string) []byte {
		b, _ := godwarf.GetDebugSectionElf(ef, name)
		return b
	}
	info, lines, lineStr := sec("info"), sec("line"), sec("line_str")
	if err := checkUnits(info); err != nil {
		return err
	}
	var versions map[dwarf.Offset]uint8
	if err := replay(".debug_info", func() { versions = pdwarf.ReadUnitVersions(info) }); err != nil {
		return err
	}
	lc := &lineCheck{data: lines, str: lineStr, budget: int64(len(lines)) + 1024, done: make(map[int64]*line.DebugLineInfo)}
	w := &loadWalk{d: d, lc: lc, versions: versions}
	if err := w.run(); err != nil {
		return err
	}
	// delve reads the symbol table on two goroutines (function names, and
	// runtime.tlsg for the g register's TLS offset).
	if err := replay(".symtab", func() { ef.Symbols() }); err != nil {
		return err
	}
	order := frame.DwarfEndian(info)
	if b, ferr := godwarf.GetDebugSectionElf(ef, "frame"); ferr == nil {
		if err := replay(".debug_frame", func() { frame.Parse(b, order, 0, 8, 0) }); err != nil {
			return err
		}
	}
	if s := ef.Section(".eh_frame"); s != nil && s.Addr > 0 {
		var b []byte
		if s.Type == elf.SHT_NOBITS {
			b = make([]byte, s.Size)
		} else if b, err = s.Data(); err != nil {
			b = nil
		}
		if b != nil {
			if err := replay(".eh_frame", func() { frame.Parse(b, order, 0, 8, s.Addr) }); err != nil {
				return err
			}
		}
	}
	return nil
}

// replay runs a delve parser that delve's loader runs on a goroutine of
// its own, and turns its panic into a *DWARFError.
func replay(section string, fn func()) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = &DWARFError{Section: section, Off: -1, Msg: fmt.Sprintf("delve's parser panics: %v", p)}
		}
	}()
	fn()
	return nil
}

// checkSection bounds what reading section s allocates: debug/elf and
// delve allocate a compressed section's claimed size before they
// decompress it, and delve a NOBITS .eh_frame's size.
func checkSection(r io.ReaderAt, size int64, class elf.Class, s *elf.Section) error {
	fail := func(format string, args ...any) error {
		return &DWARFError{Section: s.Name, Off: -1, Msg: fmt.Sprintf(format, args...)}
	}
	if s.Type == elf.SHT_NOBITS {
		if s.Name == ".eh_frame" && (s.Size > uint64(size) || s.Size > maxSectionSize) {
			return fail("NOBITS section of %d bytes in a file of %d", s.Size, size)
		}
		return nil
	}
	if s.Name == ".note.gnu.build-id" {
		return checkBuildID(r, s)
	}
	debug := strings.HasPrefix(s.Name, ".debug_")
	zdebug := strings.HasPrefix(s.Name, ".zdebug_")
	if s.Offset > uint64(size) || s.FileSize > uint64(size)-s.Offset {
		if debug || zdebug || s.Flags&elf.SHF_COMPRESSED != 0 {
			return fail("%d bytes at file offset %#x, past the end of the file (%d bytes)", s.FileSize, s.Offset, size)
		}
		return nil
	}
	raw := io.NewSectionReader(r, int64(s.Offset), int64(s.FileSize))
	switch {
	case s.Flags&elf.SHF_COMPRESSED != 0:
		// debug/elf has read the compression header: Size is the
		// claimed decompressed size.
		if err := checkClaim(s, s.Size); err != nil {
			return err
		}
		if s.Flags&elf.SHF_ALLOC != 0 {
			return nil // debug/elf refuses to read it
		}
		hdr := int64(24) // sizeof(Elf64_Chdr)
		if class == elf.ELFCLASS32 {
			hdr = 12
		}
		if s.FileSize < uint64(hdr) {
			return fail("compressed section shorter than its header")
		}
		var typ [4]byte
		if _, err := raw.ReadAt(typ[:], 0); err != nil {
			return fail("read compression header: %v", err)
		}
		if elf.CompressionType(binary.LittleEndian.Uint32(typ[:])) == elf.COMPRESS_ZLIB {
			return checkInflate(s, io.NewSectionReader(raw, hdr, int64(s.FileSize)-hdr), s.Size)
		}
		// zstd: debug/elf checks the frame; read it all.
		n, err := io.Copy(io.Discard, io.LimitReader(s.Open(), int64(s.Size)))
		if err != nil || uint64(n) != s.Size {
			return fail("decompresses to %d bytes, not %d: %v", n, s.Size, err)
		}
	case zdebug:
		var h [12]byte
		if n, _ := raw.ReadAt(h[:], 0); n != 12 || string(h[:4]) != "ZLIB" {
			return nil
		}
		claim := binary.BigEndian.Uint64(h[4:])
		if err := checkClaim(s, claim); err != nil {
			return err
		}
		return checkInflate(s, io.NewSectionReader(raw, 12, int64(s.FileSize)-12), claim)
	case debug:
		// delve reads a section whole: a file (sparse, perhaps) that
		// holds a huge one would take as much memory.
		if s.FileSize > maxSectionSize {
			return fail("%d bytes, over the limit of %d", s.FileSize, maxSectionSize)
		}
		// A compressed section whose SHF_COMPRESSED flag was cleared
		// would be parsed as DWARF from its compression header on.
		var h [26]byte
		if n, _ := raw.ReadAt(h[:], 0); n == len(h) {
			typ := elf.CompressionType(binary.LittleEndian.Uint32(h[:4]))
			zlibHdr := h[24]&0x0f == 8 && (uint16(h[24])<<8|uint16(h[25]))%31 == 0
			if (typ == elf.COMPRESS_ZLIB && zlibHdr) || (typ == elf.COMPRESS_ZSTD && binary.LittleEndian.Uint16(h[24:]) == 0xb528) {
				return fail("holds %v-compressed data but SHF_COMPRESSED is not set", typ)
			}
		}
	}
	return nil
}

// checkClaim bounds a compressed section's claimed size.
func checkClaim(s *elf.Section, claim uint64) error {
	if claim > maxSectionSize || claim/maxInflate > s.FileSize+4096 {
		return &DWARFError{Section: s.Name, Off: -1,
			Msg: fmt.Sprintf("claims %d decompressed bytes from %d compressed", claim, s.FileSize)}
	}
	return nil
}

// checkInflate decompresses a zlib stream to its end, which checks its
// checksum, and compares its size with the claimed size.
func checkInflate(s *elf.Section, r io.Reader, claim uint64) error {
	fail := func(format string, args ...any) error {
		return &DWARFError{Section: s.Name, Off: -1, Msg: fmt.Sprintf(format, args...)}
	}
	zr, err := zlib.NewReader(r)
	if err != nil {
		return fail("%v", err)
	}
	n, err := io.Copy(io.Discard, io.LimitReader(zr, int64(claim)+1))
	if err != nil {
		return fail("%v", err)
	}
	if uint64(n) != claim {
		return fail("decompresses to more or less than the %d bytes claimed", claim)
	}
	return nil
}

// checkBuildID bounds the name and description sizes of the build-id
// note, which delve allocates before reading them.
func checkBuildID(r io.ReaderAt, s *elf.Section) error {
	var h [12]byte
	if s.FileSize < 12 {
		return nil
	}
	if _, err := r.ReadAt(h[:], int64(s.Offset)); err != nil {
		return nil
	}
	namesz, descsz := uint64(binary.LittleEndian.Uint32(h[0:])), uint64(binary.LittleEndian.Uint32(h[4:]))
	if namesz+descsz > s.FileSize-12 {
		return &DWARFError{Section: s.Name, Off: 0,
			Msg: fmt.Sprintf("note of %d+%d bytes in a section of %d", namesz, descsz, s.FileSize)}
	}
	return nil
}

// checkUnits walks the unit headers of .debug_info: each must fit, and
// together they must fill the section, as delve's ReadUnitVersions slices
// them without checks.
func checkUnits(info []byte) error {
	for off := int64(0); off < int64(len(info)); {
		fail := func(msg string) error { return &DWARFError{Section: ".debug_info", Off: off, Msg: msg} }
		rest := info[off:]
		if len(rest) < 4 {
			return fail("truncated unit header")
		}
		hdr, length := int64(4), uint64(binary.LittleEndian.Uint32(rest))
		if length == 0xffffffff {
			if len(rest) < 12 {
				return fail("truncated unit header")
			}
			hdr, length = 12, binary.LittleEndian.Uint64(rest[4:])
		} else if length >= 0xfffffff0 {
			return fail("reserved unit length")
		}
		// Version (2 bytes), then for DWARF 5 the unit type.
		if length < 3 || length > uint64(len(rest))-uint64(hdr) {
			return fail(fmt.Sprintf("unit length %d with %d bytes left", length, len(rest)-int(hdr)))
		}
		off += hdr + int64(length)
	}
	return nil
}

// loadWalk replays the walk of delve v1.27.2's loader over .debug_info
// (loadDebugInfoMaps and the functions it calls): the same debug/dwarf
// reader calls in the same order, so that the reader is where delve's
// will be. Where delve would dereference the nil entry that Next returns
// at the end of the section (inside a subprogram's or an inlined call's
// children, or at a DW_AT_import past the last entry), or recurse deeper
// than maxDepth, it returns a *DWARFError. It checks the line table of
// each compile unit (lc) on the way, as delve parses it there.
type loadWalk struct {
	d        *dwarf.Data
	lc       *lineCheck
	versions map[dwarf.Offset]uint8
}

func (w *loadWalk) fail(off dwarf.Offset, format string, args ...any) error {
	return &DWARFError{Section: ".debug_info", Off: int64(off), Msg: fmt.Sprintf(format, args...)}
}

func (w *loadWalk) run() error {
	rd := w.d.Reader()
	for {
		e, err := rd.Next()
		if err != nil || e == nil {
			return nil // delve records the error and stops
		}
		if e.Tag != dwarf.TagCompileUnit {
			rd.SkipChildren()
			continue
		}
		if _, err := w.ranges(e); err != nil {
			return err
		}
		cu := &walkUnit{offset: e.Offset, version: w.versions[e.Offset]}
		if cu.lines, err = w.lc.check(e); err != nil {
			return err
		}
		if e.Children {
			if err := w.unit(rd, cu, 1); err != nil {
				return err
			}
		}
	}
}

// walkUnit is what delve knows of a compile unit while it walks it.
type walkUnit struct {
	offset  dwarf.Offset
	version uint8
	lines   *line.DebugLineInfo
}

// unit replays loadDebugInfoMapsCompileUnit.
func (w *loadWalk) unit(rd *dwarf.Reader, cu *walkUnit, level int) error {
	if level > maxDepth {
		return w.fail(cu.offset, "imported units nest more than %d deep", maxDepth)
	}
	depth := 0
	for {
		e, err := rd.Next()
		if err != nil || e == nil {
			return nil
		}
		switch e.Tag {
		case 0:
			if depth == 0 {
				return nil
			}
			depth--
		case dwarf.TagImportedUnit:
			if off, ok := e.Val(dwarf.AttrImport).(dwarf.Offset); ok {
				r2 := w.d.Reader()
				r2.Seek(off)
				im, err := r2.Next()
				if err == nil && im == nil {
					return w.fail(e.Offset, "DW_AT_import %#x is past the last entry", off)
				}
				if err == nil && im.Tag == dwarf.TagPartialUnit {
					if err := w.unit(r2, cu, level+1); err != nil {
						return err
					}
				}
			}
			rd.SkipChildren()
		case dwarf.TagArrayType, dwarf.TagBaseType, dwarf.TagClassType, dwarf.TagStructType, dwarf.TagUnionType,
			dwarf.TagConstType, dwarf.TagVolatileType, dwarf.TagRestrictType, dwarf.TagEnumerationType,
			dwarf.TagPointerType, dwarf.TagSubroutineType, dwarf.TagTypedef, dwarf.TagUnspecifiedType,
			dwarf.TagVariable, dwarf.TagConstant:
			rd.SkipChildren()
		case dwarf.TagSubprogram:
			inl, _ := e.Val(dwarf.AttrInline).(int64)
			_, hasOrigin := e.Val(dwarf.AttrAbstractOrigin).(dwarf.Offset)
			ok, err := w.ranges(e)
			if err != nil {
				return err
			}
			if inl < 1 && hasOrigin && !ok {
				if e.Children {
					rd.SkipChildren()
				}
				continue
			}
			if e.Children {
				if err := w.inlinedCalls(rd, cu, e.Offset, 1); err != nil {
					return err
				}
			}
		default:
			if e.Children {
				depth++
			}
		}
	}
}

// inlinedCalls replays loadDebugInfoMapsInlinedCalls over the children
// of the entry at parent.
func (w *loadWalk) inlinedCalls(rd *dwarf.Reader, cu *walkUnit, parent dwarf.Offset, level int) error {
	if level > maxDepth {
		return w.fail(parent, "inlined calls nest more than %d deep", maxDepth)
	}
	for {
		e, err := rd.Next()
		if err != nil {
			return nil
		}
		if e == nil {
			return w.fail(parent, "the children of this entry run past the end of the section")
		}
		switch e.Tag {
		case 0:
			return nil
		case dwarf.TagInlinedSubroutine:
			_, okOrigin := e.Val(dwarf.AttrAbstractOrigin).(dwarf.Offset)
			okRange, err := w.ranges(e)
			if err != nil {
				return err
			}
			file, okFile := e.Val(dwarf.AttrCallFile).(int64)
			_, okLine := e.Val(dwarf.AttrCallLine).(int64)
			if !okOrigin || !okRange || !okFile || !okLine || !cu.hasFile(file) {
				rd.SkipChildren()
				continue
			}
			if e.Children {
				if err := w.inlinedCalls(rd, cu, e.Offset, level+1); err != nil {
					return err
				}
			}
		}
		rd.SkipChildren()
	}
}

// hasFile reports whether delve's compileUnit.filePath finds file.
func (cu *walkUnit) hasFile(file int64) bool {
	if cu.lines == nil {
		return false
	}
	idx := int(file)
	if cu.version < 5 {
		idx--
	}
	return idx >= 0 && idx < len(cu.lines.FileNames)
}

// ranges decodes an entry's address ranges as delve will, and reports
// whether there is one.
func (w *loadWalk) ranges(e *dwarf.Entry) (ok bool, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = w.fail(e.Offset, "ranges: debug/dwarf panics: %v", p)
		}
	}()
	r, _ := w.d.Ranges(e)
	return len(r) > 0, nil
}

// lineCheck checks the line table headers that compile units name.
type lineCheck struct {
	data, str []byte
	// budget bounds the directory and file entries of all the line
	// tables delve will parse (it parses one per compile unit, shared or
	// not), which it allocates before reading them.
	budget int64
	done   map[int64]*line.DebugLineInfo
}

// check checks the line table of compile unit cu, as delve's line.Parse
// reads it: from its offset to the end of .debug_line. It returns what
// line.Parse returns, nil if delve parses none.
func (lc *lineCheck) check(cu *dwarf.Entry) (*line.DebugLineInfo, error) {
	off, ok := cu.Val(dwarf.AttrStmtList).(int64)
	if !ok || off < 0 || off >= int64(len(lc.data)) {
		return nil, nil // delve does not parse it
	}
	dirs, files, err := lineHeaderCounts(lc.data[off:])
	if err != nil {
		return nil, &DWARFError{Section: ".debug_line", Off: off, Msg: err.Error()}
	}
	lc.budget -= int64(dirs + files)
	if lc.budget < 0 {
		return nil, &DWARFError{Section: ".debug_line", Off: off, Msg: "line tables list more directories and files than the section has bytes"}
	}
	if info, ok := lc.done[off]; ok {
		return info, nil
	}
	compdir, _ := cu.Val(dwarf.AttrCompDir).(string)
	var info *line.DebugLineInfo
	err = replay(".debug_line", func() {
		info = line.Parse(compdir, bytes.NewBuffer(lc.data[off:]), lc.str, nil, 0, false, 8)
	})
	lc.done[off] = info
	return info, err
}

var errLineHeader = errors.New("line table header")

// lineHeaderCounts reads a line table header as delve does and returns
// its DWARF 5 directory and file counts, checking that each entry they
// count is in the unit: delve allocates by the counts and loops over them
// even when the entries consume no bytes.
func lineHeaderCounts(b []byte) (dirs, files uint64, err error) {
	p := &lineBuf{b: b}
	unitLen := uint64(p.u32())
	if p.err != nil || unitLen > uint64(len(b)-4) {
		return 0, 0, fmt.Errorf("%w: unit length %d with %d bytes left", errLineHeader, unitLen, len(b)-4)
	}
	p.b = b[4 : 4+unitLen]
	version := p.u16()
	if version < 5 {
		return 0, 0, p.err
	}
	p.skip(2)            // address_size, segment_selector_size
	p.skip(4)            // header_length
	p.skip(5)            // min_inst_length, max_ops, default_is_stmt, line_base, line_range
	opcodeBase := p.u8() // delve reads opcode_base-1 lengths, wrapping at 0
	p.skip(int(uint8(opcodeBase - 1)))
	table := func() (uint64, error) {
		forms := make([]uint64, p.u8())
		for i := range forms {
			p.uleb()
			forms[i] = p.uleb()
			if !entryFormKnown(forms[i]) {
				return 0, fmt.Errorf("%w: unknown form %#x", errLineHeader, forms[i])
			}
		}
		n := p.uleb()
		if p.err != nil {
			return 0, p.err
		}
		if n > 0 && len(forms) == 0 || n > uint64(len(p.b)) {
			return 0, fmt.Errorf("%w: %d entries with %d bytes left", errLineHeader, n, len(p.b))
		}
		for range n {
			for _, f := range forms {
				p.form(f)
			}
			if p.err != nil {
				return 0, p.err
			}
		}
		return n, nil
	}
	if dirs, err = table(); err != nil {
		return 0, 0, err
	}
	if files, err = table(); err != nil {
		return 0, 0, err
	}
	return dirs, files, nil
}

// DWARF forms of line table entries (DWARF 5 section 7.5.6).
const (
	formBlock2   = 0x03
	formBlock4   = 0x04
	formData2    = 0x05
	formData4    = 0x06
	formData8    = 0x07
	formString   = 0x08
	formBlock    = 0x09
	formBlock1   = 0x0a
	formData1    = 0x0b
	formFlag     = 0x0c
	formSdata    = 0x0d
	formStrp     = 0x0e
	formUdata    = 0x0f
	formSecOff   = 0x17
	formStrx     = 0x1a
	formData16   = 0x1e
	formLineStrp = 0x1f
	formStrx1    = 0x25
	formStrx2    = 0x26
	formStrx3    = 0x27
	formStrx4    = 0x28
)

// entryFormKnown reports whether delve's line table reader consumes bytes
// for form f (it skips nothing for others).
func entryFormKnown(f uint64) bool {
	switch f {
	case formBlock2, formBlock4, formData2, formData4, formData8, formString, formBlock, formBlock1,
		formData1, formFlag, formSdata, formStrp, formUdata, formSecOff, formStrx, formData16,
		formLineStrp, formStrx1, formStrx2, formStrx3, formStrx4:
		return true
	}
	return false
}

// lineBuf reads a line table header; the first error sticks.
type lineBuf struct {
	b   []byte
	err error
}

func (p *lineBuf) skip(n int) {
	if p.err != nil {
		return
	}
	if n < 0 || n > len(p.b) {
		p.err = fmt.Errorf("%w: truncated", errLineHeader)
		p.b = nil
		return
	}
	p.b = p.b[n:]
}

func (p *lineBuf) u8() uint8 {
	b := p.b
	p.skip(1)
	if p.err != nil {
		return 0
	}
	return b[0]
}

func (p *lineBuf) u16() uint16 {
	b := p.b
	p.skip(2)
	if p.err != nil {
		return 0
	}
	return binary.LittleEndian.Uint16(b)
}

func (p *lineBuf) u32() uint32 {
	b := p.b
	p.skip(4)
	if p.err != nil {
		return 0
	}
	return binary.LittleEndian.Uint32(b)
}

func (p *lineBuf) uleb() uint64 {
	if p.err != nil {
		return 0
	}
	v, n := leb128.DecodeUnsigned(bytes.NewBuffer(p.b))
	if n == 0 {
		p.skip(1) // empty: an error
		return 0
	}
	p.skip(int(n))
	return v
}

// form skips a value of form f; every one takes at least a byte.
func (p *lineBuf) form(f uint64) {
	switch f {
	case formBlock:
		p.skipN(p.uleb())
	case formBlock1:
		p.skipN(uint64(p.u8()))
	case formBlock2:
		p.skipN(uint64(p.u16()))
	case formBlock4:
		p.skipN(uint64(p.u32()))
	case formData1, formFlag, formStrx1:
		p.skip(1)
	case formData2, formStrx2:
		p.skip(2)
	case formStrx3:
		p.skip(3)
	case formData4, formLineStrp, formSecOff, formStrp, formStrx4:
		p.skip(4)
	case formData8:
		p.skip(8)
	case formData16:
		p.skip(16)
	case formSdata, formUdata, formStrx:
		p.uleb()
	case formString:
		i := bytes.IndexByte(p.b, 0)
		if i < 0 {
			p.skip(len(p.b) + 1)
			return
		}
		p.skip(i + 1)
	}
}

func (p *lineBuf) skipN(n uint64) {
	if n > uint64(len(p.b)) {
		p.skip(-1)
		return
	}
	p.skip(int(n))
}
