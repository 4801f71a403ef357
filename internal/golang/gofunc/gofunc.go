package gofunc

import (
	"debug/dwarf"
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"
	"strconv"
	"strings"

	"github.com/go-delve/delve/pkg/dwarf/frame"
	"github.com/go-delve/delve/pkg/dwarf/godwarf"
	"github.com/go-delve/delve/pkg/dwarf/op"
	"github.com/go-delve/delve/pkg/dwarf/reader"
	"github.com/go-delve/delve/pkg/proc"

	"github.com/usdtkit/usdtkit/elfnotes"
	"github.com/usdtkit/usdtkit/internal/elf/symtab"
	"github.com/usdtkit/usdtkit/internal/golang/goabi"
)

// Errors of Open and Binary.Func.
var (
	// ErrNotFound: the binary has no function of that name.
	ErrNotFound = errors.New("no such Go function")
	// ErrNotGo: the file is not a Go binary.
	ErrNotGo = errors.New("not a Go binary")
	// ErrUnsupportedArch: a Go binary of a machine other than amd64 and
	// arm64.
	ErrUnsupportedArch = errors.New("Go binary of an unsupported machine")
)

// Kind is how a Param's words make a value.
type Kind uint8

const (
	// Int is a signed integer of Size bytes in one word.
	Int Kind = iota + 1
	// Uint is an unsigned integer (uintptr included) of Size bytes.
	Uint
	// Bool is a bool: one byte, 0 or 1.
	Bool
	// Pointer is an address: pointers, maps, channels, funcs,
	// unsafe.Pointer.
	Pointer
	// String has two words: the data pointer and the length in bytes.
	String
	// Slice has three words: data pointer, length and capacity (in
	// elements of ElemSize bytes, ElemKind).
	Slice
	// Interface has two words: the type (itab for a non-empty interface)
	// and the data pointer. Both are 0 for nil.
	Interface
	// Unreadable is a value a uprobe cannot read; Reason says why.
	Unreadable
)

var kindNames = [...]string{Int: "int", Uint: "uint", Bool: "bool", Pointer: "pointer", String: "string",
	Slice: "slice", Interface: "interface", Unreadable: "unreadable"}

func (k Kind) String() string {
	if int(k) < len(kindNames) && kindNames[k] != "" {
		return kindNames[k]
	}
	return "Kind(" + strconv.Itoa(int(k)) + ")"
}

// Word is where one machine word of a value is at a site: in the register
// Reg (a name argread.PtRegs knows: "rax", "x0"), or when Reg is "" in
// memory at the stack pointer plus SPOffset.
type Word struct {
	Reg      string
	SPOffset int64
	// Size is the number of bytes of the word that belong to the value:
	// 1, 2, 4 or 8.
	Size int64
}

// Param is one parameter or result, or one field of a struct passed by
// value ("p.X").
type Param struct {
	// Name is the name in the source; unnamed results are r0, r1, ... by
	// position, unnamed parameters arg0, arg1, ...
	Name string
	// Type is the Go type as DWARF names it: "int", "*main.Server".
	Type string
	Kind Kind
	// Size is the value's size in bytes for Int, Uint, Bool and Pointer.
	Size int64
	// ElemKind and ElemSize describe a Slice's elements (ElemKind 0 when
	// they are not integers, bools or pointers).
	ElemKind Kind
	ElemSize int64
	// Words are where the value is: 1 for Int, Uint, Bool and Pointer, 2
	// for String and Interface, 3 for Slice; none when Unreadable.
	Words []Word
	// Reason says why an Unreadable value cannot be read.
	Reason string
	// Struct is the Go type of the pointed-to struct for a Pointer to a
	// struct, nil otherwise: Field resolves paths through it.
	Struct *godwarf.StructType
	// Of is, for a field of a struct passed by value ("p.X", "p.in.Y"),
	// the name of the parameter or result the struct is ("p"), and OfType
	// its type ("main.Point"); "" for other values.
	Of, OfType string
}

// Func is what a tracer needs of one Go function. Addresses are link-time
// virtual addresses of the binary (st_value units).
type Func struct {
	Name string
	// Entry and End bound the function's code.
	Entry, End uint64
	// Site is the entry site: the first instruction after the prologue.
	Site uint64
	// Returns are the addresses of the function's RET instructions.
	Returns []uint64
	// Params are the arguments at Site, Results the results at every RET.
	Params, Results []Param
	// Optimized reports that the compiler optimized the function (values
	// may be unavailable at the site: such a Param is Unreadable).
	Optimized bool
	// Problems say what of the function cannot be decoded and why.
	Problems []string
}

// Binary is an open Go binary. It is not safe for concurrent use.
type Binary struct {
	Path    string
	Machine elf.Machine
	// GoidOffset is the byte offset of goid in runtime.g, -1 if unknown;
	// GReg is the register that holds the current g ("r14", "x28").
	GoidOffset int64
	GReg       string
	// DWARF reports that the binary has debug information: without it
	// functions have no parameters or results.
	DWARF bool
	// DWARFError is why the binary's DWARF was ignored (a *DWARFError):
	// it could crash delve or make it allocate without bound. The
	// binary is then read as if it had no DWARF.
	DWARFError error

	bi     *proc.BinaryInfo
	file   *os.File
	ef     *elfnotes.File
	frames frame.FrameDescriptionEntries
	intArg []string
	// funcs are the functions of a binary without DWARF, which is read
	// without delve (bi nil).
	funcs map[string]symtab.Symbol
	// subs indexes subprograms by low PC once lookups says it pays.
	subs    map[uint64]dwarf.Offset
	lookups int
	// types caches godwarf types across functions.
	types map[dwarf.Offset]godwarf.Type
}

// Open reads the Go binary at path. Close it when done.
func Open(path string) (b *Binary, err error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			f.Close()
		}
	}()
	ef, err := elfnotes.NewFile(f)
	if err != nil {
		return nil, err
	}
	b = &Binary{Path: path, Machine: ef.Machine, file: f, ef: ef, GoidOffset: -1, types: make(map[dwarf.Offset]godwarf.Type)}
	var goarch string
	switch ef.Machine {
	case elf.EM_X86_64:
		goarch, b.GReg = "amd64", "r14"
	case elf.EM_AARCH64:
		goarch, b.GReg = "arm64", "x28"
	default:
		return nil, fmt.Errorf("%s: %w (%v)", path, ErrUnsupportedArch, ef.Machine)
	}
	if ef.Section(".gopclntab") == nil && ef.Section(".go.buildinfo") == nil {
		return nil, fmt.Errorf("%s: %w", path, ErrNotGo)
	}
	hasDWARF := ef.Section(".debug_info") != nil || ef.Section(".zdebug_info") != nil
	if hasDWARF {
		st, err := f.Stat()
		if err != nil {
			return nil, err
		}
		b.DWARFError = checkDWARF(f, st.Size())
	}
	if !hasDWARF || b.DWARFError != nil {
		// No DWARF, or DWARF delve must not see: function bounds come
		// from the symbol table or .gopclntab. (delve would find the
		// same, and print a warning on our stderr.)
		syms, err := symtab.Read(ef)
		if err != nil {
			return nil, fmt.Errorf("read Go binary %s: %w", path, err)
		}
		b.funcs = make(map[string]symtab.Symbol)
		for _, s := range syms {
			if s.Type == elf.STT_FUNC && s.Size > 0 {
				b.funcs[s.Name] = s
			}
		}
		return b, nil
	}
	// delve opens the file again by name: give it the file that was
	// checked, not whatever the path names now.
	loadPath := path
	if fdPath := fmt.Sprintf("/proc/self/fd/%d", f.Fd()); fileIs(fdPath, f) {
		loadPath = fdPath
	}
	if err := guard(func() error {
		// attaching=true: for a binary without DWARF, delve would
		// otherwise run debuginfod-find, which may download debug
		// information from the network.
		b.bi = proc.NewBinaryInfo("linux", goarch, true)
		// The link-time entry point: addresses stay link-time (static
		// base 0) for PIE binaries too.
		return b.bi.LoadBinaryInfo(loadPath, ef.Entry, nil)
	}); err != nil {
		return nil, fmt.Errorf("read Go binary %s: %w", path, err)
	}
	img := b.bi.Images[0]
	b.DWARF = img.LoadError() == nil && !img.Stripped()
	if b.DWARF {
		if t, err := b.bi.FindType("runtime.g"); err == nil {
			if st, ok := Resolve(t).(*godwarf.StructType); ok {
				for _, fld := range st.Field {
					if fld.Name == "goid" {
						b.GoidOffset = fld.ByteOffset
					}
				}
			}
		}
		if sec := ef.Section(".debug_frame"); sec != nil {
			data, err := sectionData(path, ".debug_frame")
			if err == nil {
				_ = guard(func() error {
					fdes, err := frame.Parse(data, binary.LittleEndian, 0, 8, 0)
					b.frames = fdes
					return err
				})
			}
		}
	}
	return b, nil
}

// fileIs reports whether path names the open file f.
func fileIs(path string, f *os.File) bool {
	a, err := os.Stat(path)
	if err != nil {
		return false
	}
	b, err := f.Stat()
	return err == nil && os.SameFile(a, b)
}

// TypeNames returns the names of the executable's itabs and type
// descriptors by address ("*errors.errorString" for the itab of
// *errors.errorString as an error), to name the dynamic type of interface
// values; nil for a position-independent executable, whose run-time
// addresses differ from its symbols'.
func (b *Binary) TypeNames() map[uint64]string {
	if b.ef.Type != elf.ET_EXEC {
		return nil
	}
	syms, err := symtab.Read(b.ef)
	if err != nil {
		return nil
	}
	names := make(map[uint64]string)
	for _, s := range syms {
		if rest, ok := strings.CutPrefix(s.Name, "go:itab."); ok {
			// go:itab.CONCRETE,INTERFACE; CONCRETE has no comma unless
			// it is generic, so cut at the last comma.
			if i := strings.LastIndexByte(rest, ','); i > 0 {
				names[s.Value] = rest[:i]
			}
		} else if rest, ok := strings.CutPrefix(s.Name, "type:"); ok && !strings.HasPrefix(rest, ".") {
			names[s.Value] = rest
		}
	}
	return names
}

// Close releases the file.
func (b *Binary) Close() error {
	if b.file == nil {
		return nil
	}
	err := b.file.Close()
	b.file = nil
	if b.bi != nil {
		_ = b.bi.Close()
	}
	return err
}

// guard calls fn and turns a panic into an error: delve reads the file
// with debug/elf and debug/dwarf, which are not hardened.
func guard(fn func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("malformed binary: %v", r)
		}
	}()
	return fn()
}

// sectionData returns the decompressed contents of a section, read with
// debug/elf under guard.
func sectionData(path, name string) (data []byte, err error) {
	err = guard(func() error {
		f, err := elf.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		s := f.Section(name)
		if s == nil {
			return fmt.Errorf("no section %s", name)
		}
		data, err = s.Data()
		return err
	})
	return data, err
}

// Func returns the layout of the function named name
// ("main.(*Server).handle").
func (b *Binary) Func(name string) (fn *Func, err error) {
	err = guard(func() error {
		fn, err = b.readFunc(name)
		return err
	})
	return fn, err
}

func (b *Binary) readFunc(name string) (*Func, error) {
	if b.bi == nil {
		s, ok := b.funcs[name]
		if !ok {
			return nil, fmt.Errorf("%s in %s: %w", name, b.Path, ErrNotFound)
		}
		return b.readCode(&Func{Name: name, Entry: s.Value, End: s.Value + s.Size}, nil)
	}
	fns := b.bi.LookupFunc()[name]
	if len(fns) == 0 {
		return nil, fmt.Errorf("%s in %s: %w", name, b.Path, ErrNotFound)
	}
	// delve also lists functions that exist only inlined into their
	// callers, with no code of their own (Entry 0).
	var pf *proc.Function
	for _, f := range fns {
		if f.Entry != 0 {
			pf = f
			break
		}
	}
	if pf == nil {
		return nil, fmt.Errorf("%s in %s: %w (it is inlined into every caller; build with -gcflags=-l or mark it //go:noinline)", name, b.Path, ErrNotFound)
	}
	return b.readCode(&Func{Name: name, Entry: pf.Entry, End: pf.End}, pf)
}

// readCode fills in fn from its code and, with pf (delve's function,
// nil without DWARF), its parameters.
func (b *Binary) readCode(fn *Func, pf *proc.Function) (*Func, error) {
	name := fn.Name
	if fn.End <= fn.Entry || fn.End-fn.Entry > 16<<20 {
		return nil, fmt.Errorf("%s in %s: function bounds %#x..%#x", name, b.Path, fn.Entry, fn.End)
	}
	code := make([]byte, fn.End-fn.Entry)
	off, err := b.ef.AddrToOffset(fn.Entry)
	if err != nil {
		return nil, fmt.Errorf("%s in %s: %w", name, b.Path, err)
	}
	if _, err := b.file.ReadAt(code, int64(off)); err != nil && err != io.EOF {
		return nil, fmt.Errorf("%s in %s: read code: %w", name, b.Path, err)
	}
	dec, err := decode(b.Machine, code, fn.Entry)
	if err != nil {
		return nil, fmt.Errorf("%s in %s: %w", name, b.Path, err)
	}
	fn.Returns = dec.returns
	if len(fn.Returns) == 0 {
		fn.Problems = append(fn.Problems, "no RET instruction: the function does not return (results are not traced)")
	}
	fn.Site = fn.Entry
	if b.DWARF {
		fn.Optimized = pf.Optimized()
		if pc := pf.PrologueEndPC(); pc > fn.Entry && pc < fn.End {
			fn.Site = pc
		}
	}
	if fn.Site < dec.afterCheck {
		fn.Site = dec.afterCheck
	}
	// On x86-64 the kernel emulates PUSH (and branches) at a uprobe, but
	// single-steps other instructions out of line, which costs ten times
	// as much here (~1 us against ~12 us a hit). When the stack check is
	// followed by PUSH RBP, probe that: the arguments are still in their
	// registers, and the check is behind us.
	if b.Machine == elf.EM_X86_64 && dec.afterCheck > fn.Entry && dec.afterCheck < fn.Site {
		if i := dec.afterCheck - fn.Entry; i < uint64(len(code)) && code[i] == 0x55 {
			fn.Site = dec.afterCheck
		}
	}
	if b.DWARFError != nil {
		fn.Problems = append(fn.Problems, "the binary's DWARF is malformed and was ignored ("+b.DWARFError.Error()+"): parameter and result names, types and places are unknown")
		return fn, nil
	}
	if !b.DWARF {
		fn.Problems = append(fn.Problems, "the binary has no DWARF (built with -ldflags=-w or -s, or stripped): parameter and result names, types and places are unknown")
		return fn, nil
	}
	if err := b.readParams(fn); err != nil {
		return nil, fmt.Errorf("%s in %s: %w", name, b.Path, err)
	}
	return fn, nil
}

// cfaOffset returns k such that the CFA is SP + k at pc.
func (b *Binary) cfaOffset(pc uint64) (int64, bool) {
	if b.frames == nil {
		return 0, false
	}
	fde, err := b.frames.FDEForPC(pc)
	if err != nil {
		return 0, false
	}
	ctx, err := fde.EstablishFrame(pc)
	if err != nil || ctx.CFA.Rule != frame.RuleCFA {
		return 0, false
	}
	sp := uint64(7)
	if b.Machine == elf.EM_AARCH64 {
		sp = 31
	}
	if ctx.CFA.Reg != sp {
		return 0, false
	}
	return ctx.CFA.Offset, true
}

// readParams fills fn.Params and fn.Results from the function's DWARF.
func (b *Binary) readParams(fn *Func) error {
	rdr := b.bi.Images[0].DwarfReader()
	var sub *dwarf.Entry
	// The first few lookups scan the function's compile unit; after that
	// one pass indexes every subprogram (usdtkit list -v reads them all).
	b.lookups++
	if b.subs == nil && b.lookups > 8 {
		b.subs = indexSubprograms(b.bi.Images[0].DwarfReader())
	}
	if b.subs != nil {
		off, ok := b.subs[fn.Entry]
		if !ok {
			return fmt.Errorf("no DWARF subprogram at %#x", fn.Entry)
		}
		rdr.Seek(off)
		e, err := rdr.Next()
		if err != nil || e == nil {
			return fmt.Errorf("no DWARF subprogram at %#x: %v", fn.Entry, err)
		}
		sub = e
	} else if _, err := rdr.SeekPC(fn.Entry); err != nil {
		return fmt.Errorf("no DWARF compile unit: %w", err)
	}
	for sub == nil {
		e, err := rdr.Next()
		if err != nil {
			return err
		}
		if e == nil || e.Tag == dwarf.TagCompileUnit {
			return fmt.Errorf("no DWARF subprogram at %#x", fn.Entry)
		}
		if e.Tag == dwarf.TagSubprogram {
			if lo, _ := e.Val(dwarf.AttrLowpc).(uint64); lo == fn.Entry {
				sub = e
				continue
			}
		}
		if e.Children {
			rdr.SkipChildren()
		}
	}
	if !sub.Children {
		return nil
	}
	cfa, cfaOK := b.cfaOffset(fn.Site)
	var results []resultDIE
	var params []paramDIE
	seen := make(map[string]bool)
	for {
		e, err := rdr.Next()
		if err != nil {
			return err
		}
		if e == nil || e.Tag == 0 {
			break
		}
		if e.Children {
			rdr.SkipChildren()
		}
		if e.Tag != dwarf.TagFormalParameter {
			continue
		}
		// The out-of-line copy of a function the compiler also inlines
		// describes its parameters by DW_AT_abstract_origin: name, type
		// and kind are on the abstract entry, the location here.
		attrs := e
		if off, ok := e.Val(dwarf.AttrAbstractOrigin).(dwarf.Offset); ok {
			if origin := b.entryAt(off); origin != nil {
				attrs = origin
			}
		}
		name, _ := attrs.Val(dwarf.AttrName).(string)
		// Go lists a named result that a deferred closure assigns twice.
		// Names in a signature are unique but for "_", so a repeated
		// name is the same value; placing it twice would shift every
		// later result by a register.
		if name != "" && name != "_" {
			if seen[name] {
				continue
			}
			seen[name] = true
		}
		toff, _ := attrs.Val(dwarf.AttrType).(dwarf.Offset)
		typ, terr := b.typ(toff)
		if isRet, _ := attrs.Val(dwarf.AttrVarParam).(bool); isRet {
			if name == "" || strings.HasPrefix(name, "~r") || strings.HasPrefix(name, "~b") {
				name = "r" + strconv.Itoa(len(results))
			}
			results = append(results, resultDIE{name: name, typ: typ, err: terr})
			continue
		}
		if name == "" || name == "_" {
			name = "arg" + strconv.Itoa(len(params))
		}
		params = append(params, paramDIE{name: name, typ: typ, err: terr, entry: e})
	}
	stack := b.stackParams(fn, params, cfa, cfaOK)
	for i, p := range params {
		if p.err != nil {
			fn.Params = append(fn.Params, Param{Name: p.name, Kind: Unreadable, Reason: "type: " + p.err.Error()})
			continue
		}
		if stack[i] != nil {
			fn.Params = append(fn.Params, b.values(p.name, p.typ, stack[i], "")...)
			continue
		}
		// Go's DWARF frame base is DW_OP_call_frame_cfa: DW_OP_fbreg
		// offsets are from the CFA too.
		regs := op.DwarfRegisters{CFA: cfa, FrameBase: cfa}
		addr, pieces, _, lerr := b.bi.Location(p.entry, dwarf.AttrLocation, fn.Entry, regs, nil)
		if lerr != nil {
			fn.Params = append(fn.Params, unreadable(p.name, p.typ, "no location at the entry (optimized away)"))
			continue
		}
		words, reason := b.pieceWords(pieces, addr, cfaOK, p.typ.Size())
		fn.Params = append(fn.Params, b.values(p.name, p.typ, words, reason)...)
	}
	if len(results) > 0 {
		b.placeResults(fn, params, results)
	}
	return nil
}

// stackParams returns, for each parameter the ABI passes on the stack, its
// words as offsets from SP at fn.Site; nil for the others, and all nil if
// the frame at the site or a parameter's type is unknown. The ABI, not
// DWARF, places these: the optimizing compiler describes a stack-passed
// value of which only a part is live by that part's address alone (a
// slice of which only the length is used is "DW_OP_fbreg +24", its len
// word), which would shift every word. A generic function's dictionary,
// its first argument, has no DWARF entry, so its parameters keep DWARF's
// locations.
func (b *Binary) stackParams(fn *Func, params []paramDIE, cfa int64, cfaOK bool) [][]Word {
	out := make([][]Word, len(params))
	cfaEntry, ok := b.cfaOffset(fn.Entry)
	if !cfaOK || !ok {
		return out
	}
	var pts []*goabi.Type
	for _, p := range params {
		if p.err != nil || p.typ == nil {
			return out
		}
		if _, generic := p.typ.(*godwarf.ParametricType); generic {
			return out
		}
		at, err := goabi.FromDWARF(p.typ)
		if err != nil {
			return out
		}
		pts = append(pts, at)
	}
	frame, err := goabi.Assign(b.Machine, pts, nil)
	if err != nil {
		return out
	}
	// The stack arguments begin StackArgsOffset above SP at the entry,
	// which is the CFA less cfaEntry; SP at the site is the CFA less cfa.
	base := cfa - cfaEntry + goabi.StackArgsOffset(b.Machine)
	for i, a := range frame.Params {
		if !a.Stack {
			continue
		}
		out[i] = stackWords(base+a.StackOffset, params[i].typ.Size())
	}
	return out
}

// paramDIE and resultDIE are a parameter's and a result's name and type.
type paramDIE struct {
	name  string
	typ   godwarf.Type
	err   error
	entry *dwarf.Entry
}

type resultDIE paramDIE

// indexSubprograms maps the low PC of every subprogram to its entry.
func indexSubprograms(r *reader.Reader) map[uint64]dwarf.Offset {
	subs := make(map[uint64]dwarf.Offset)
	for {
		e, err := r.Next()
		if err != nil || e == nil {
			return subs
		}
		if e.Tag == dwarf.TagSubprogram {
			if lo, ok := e.Val(dwarf.AttrLowpc).(uint64); ok {
				subs[lo] = e.Offset
			}
		}
		if e.Children && e.Tag != dwarf.TagCompileUnit {
			r.SkipChildren()
		}
	}
}

// entryAt returns the DWARF entry at off, or nil.
func (b *Binary) entryAt(off dwarf.Offset) *dwarf.Entry {
	r := b.bi.Images[0].DwarfReader()
	r.Seek(off)
	e, err := r.Next()
	if err != nil {
		return nil
	}
	return e
}

// typ returns the godwarf type at off, cached.
func (b *Binary) typ(off dwarf.Offset) (godwarf.Type, error) {
	if t, ok := b.types[off]; ok {
		return t, nil
	}
	t, err := b.bi.Images[0].Type(off)
	if err != nil {
		return nil, err
	}
	b.types[off] = t
	return t, nil
}

// pieceWords turns a DWARF location into words of 8 bytes (the last may be
// shorter): register pieces, or a stack address (CFA-relative; addr is SP
// relative because the CFA passed was SP's offset).
func (b *Binary) pieceWords(pieces []op.Piece, addr int64, cfaOK bool, size int64) ([]Word, string) {
	if len(pieces) == 0 {
		if !cfaOK {
			return nil, "passed on the stack, and the stack frame at the entry site is unknown"
		}
		return stackWords(addr, max(size, 1)), ""
	}
	var words []Word
	for _, p := range pieces {
		psize := int64(p.Size)
		if psize == 0 {
			psize = min(size, 8)
		}
		switch p.Kind {
		case op.RegPiece:
			reg, ok := dwarfRegName(b.Machine, p.Val)
			if !ok {
				return nil, "in register " + regDesc(b.Machine, p.Val) + ", which a uprobe cannot read"
			}
			words = append(words, Word{Reg: reg, Size: psize})
		case op.AddrPiece:
			if !cfaOK {
				return nil, "partly on the stack, and the stack frame at the entry site is unknown"
			}
			words = append(words, Word{SPOffset: int64(p.Val), Size: psize})
		default:
			return nil, "a constant or composite location"
		}
	}
	return words, ""
}

// stackWords returns the 8-byte words of a size-byte value at SP+off (the
// last one shorter).
func stackWords(off, size int64) []Word {
	words := []Word{}
	for o := int64(0); o < size; o += 8 {
		words = append(words, Word{SPOffset: off + o, Size: min(8, size-o)})
	}
	return words
}

func unreadable(name string, typ godwarf.Type, reason string) Param {
	p := Param{Name: name, Kind: Unreadable, Reason: reason}
	if typ != nil {
		p.Type = typ.String()
	}
	return p
}

// values turns a value of type typ in words into Params: one, or one per
// field of a struct.
func (b *Binary) values(name string, typ godwarf.Type, words []Word, reason string) []Param {
	if reason != "" {
		return []Param{unreadable(name, typ, reason)}
	}
	t := Resolve(typ)
	p := Param{Name: name, Type: typ.String()}
	need := 1
	switch t := t.(type) {
	case *godwarf.IntType:
		p.Kind, p.Size = Int, t.ByteSize
	case *godwarf.UintType:
		p.Kind, p.Size = Uint, t.ByteSize
	case *godwarf.BoolType:
		p.Kind, p.Size = Bool, 1
	case *godwarf.PtrType:
		p.Kind, p.Size = Pointer, 8
		if st, ok := Resolve(t.Type).(*godwarf.StructType); ok {
			p.Struct = st
		}
	case *godwarf.MapType, *godwarf.ChanType, *godwarf.FuncType:
		p.Kind, p.Size = Pointer, 8
	case *godwarf.StringType:
		p.Kind, need = String, 2
	case *godwarf.SliceType:
		p.Kind, need = Slice, 3
		p.ElemSize = t.ElemType.Size()
		switch Resolve(t.ElemType).(type) {
		case *godwarf.IntType:
			p.ElemKind = Int
		case *godwarf.UintType:
			p.ElemKind = Uint
		case *godwarf.BoolType:
			p.ElemKind = Bool
		case *godwarf.PtrType:
			p.ElemKind = Pointer
		}
	case *godwarf.InterfaceType:
		p.Kind, need = Interface, 2
	case *godwarf.StructType:
		fields := b.structFields(name, t, words)
		for i := range fields {
			// The outermost struct is the value by its name.
			fields[i].Of, fields[i].OfType = name, typ.String()
		}
		return fields
	case *godwarf.FloatType, *godwarf.ComplexType:
		return []Param{unreadable(name, typ, "floating point, in a register a uprobe cannot read")}
	default:
		if t.Common().ReflectKind == reflect.UnsafePointer {
			p.Kind, p.Size = Pointer, 8
			break
		}
		return []Param{unreadable(name, typ, "type "+typ.String()+" is not decoded")}
	}
	ws, ok := splitWords(words, need)
	if !ok {
		return []Param{unreadable(name, typ, "location does not match the type")}
	}
	p.Words = ws
	return []Param{p}
}

// splitWords returns words as need 8-byte words: DWARF pieces are one per
// word for register values; stack values come as 8-byte words already.
func splitWords(words []Word, need int) ([]Word, bool) {
	if len(words) != need {
		return nil, false
	}
	return words, true
}

// structFields splits a struct passed by value into one Param per field.
// Register-passed structs have one DWARF piece per scalar field, in field
// order; stack-passed ones are addressed by field offset.
func (b *Binary) structFields(name string, st *godwarf.StructType, words []Word) []Param {
	var out []Param
	onStack := len(words) > 0 && words[0].Reg == ""
	i := 0
	for _, f := range st.Field {
		fname := name + "." + f.Name
		var fw []Word
		if onStack {
			fw = stackWords(words[0].SPOffset+f.ByteOffset, max(f.Type.Size(), 1))
		} else {
			n := scalarWords(f.Type)
			if n < 0 || i+n > len(words) {
				return append(out, unreadable(fname, f.Type, "struct layout not decoded"))
			}
			fw = words[i : i+n]
			i += n
		}
		out = append(out, b.values(fname, f.Type, fw, "")...)
	}
	return out
}

// scalarWords returns the number of register pieces a value of type t
// takes, -1 for types not split here.
func scalarWords(t godwarf.Type) int {
	switch t := Resolve(t).(type) {
	case *godwarf.StringType, *godwarf.InterfaceType:
		return 2
	case *godwarf.SliceType:
		return 3
	case *godwarf.StructType:
		n := 0
		for _, f := range t.Field {
			k := scalarWords(f.Type)
			if k < 0 {
				return -1
			}
			n += k
		}
		return n
	case *godwarf.ArrayType:
		if t.Count == 0 {
			return 0
		}
		if t.Count == 1 {
			return scalarWords(t.Type)
		}
		return -1
	}
	if t.Size() == 0 {
		return 0
	}
	return 1
}

// Resolve strips typedefs, qualifiers and a generic function's shape
// parameters from t.
func Resolve(t godwarf.Type) godwarf.Type {
	for range 32 {
		switch tt := t.(type) {
		case *godwarf.TypedefType:
			t = tt.Type
		case *godwarf.QualType:
			t = tt.Type
		case *godwarf.ParametricType:
			// A generic function's parameter: .paramN, a typedef
			// of the shape type it is instantiated with.
			t = tt.Type
		default:
			return t
		}
	}
	return t
}

// dwarfRegName returns the pt_regs name of DWARF register n, if pt_regs
// has it.
func dwarfRegName(m elf.Machine, n uint64) (string, bool) {
	switch m {
	case elf.EM_X86_64:
		names := [...]string{"rax", "rdx", "rcx", "rbx", "rsi", "rdi", "rbp", "rsp",
			"r8", "r9", "r10", "r11", "r12", "r13", "r14", "r15"}
		if n < uint64(len(names)) {
			return names[n], true
		}
	case elf.EM_AARCH64:
		if n <= 30 {
			return "x" + strconv.FormatUint(n, 10), true
		}
		if n == 31 {
			return "sp", true
		}
	}
	return "", false
}

func regDesc(m elf.Machine, n uint64) string {
	switch {
	case m == elf.EM_X86_64 && n >= 17 && n <= 32:
		return "xmm" + strconv.FormatUint(n-17, 10)
	case m == elf.EM_AARCH64 && n >= 64 && n <= 95:
		return "v" + strconv.FormatUint(n-64, 10)
	}
	return "DWARF " + strconv.FormatUint(n, 10)
}
