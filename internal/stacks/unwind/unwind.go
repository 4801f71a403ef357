package unwind

import (
	"debug/elf"
	"errors"
	"fmt"
	"os"
	"sort"
	"sync"

	"github.com/go-delve/delve/pkg/dwarf/frame"
	"github.com/usdtkit/usdtkit/internal/bpf/stackcap"
	"github.com/usdtkit/usdtkit/internal/proc/procfs"
)

// Method says how a frame's address was found.
type Method uint8

const (
	MethodRegs Method = iota + 1 // the captured instruction pointer (frame 0)
	MethodCFI                    // the callee's call frame information
	MethodFP                     // the callee's frame pointer
)

func (m Method) String() string {
	switch m {
	case MethodRegs:
		return "regs"
	case MethodCFI:
		return "cfi"
	case MethodFP:
		return "fp"
	}
	return fmt.Sprintf("Method(%d)", uint8(m))
}

// Stop says why a walk ended.
type Stop uint8

const (
	StopEnd         Stop = iota + 1 // return address undefined or 0: the outermost frame
	StopNoMapping                   // a PC in no executable mapping of the Space
	StopOutsideCopy                 // a word the rules read is not in the stack copy
	StopNoRegister                  // a register the rules need was not captured
	StopCFI                         // the CFI cannot be evaluated (see docs/architecture.md)
	StopNoProgress                  // the caller's SP is not above the callee's
	StopMaxDepth                    // Options.MaxDepth frames
)

var stopNames = [...]string{"", "end", "no mapping", "outside copy", "no register", "cfi", "no progress", "max depth"}

func (s Stop) String() string {
	if int(s) < len(stopNames) && s != 0 {
		return stopNames[s]
	}
	return fmt.Sprintf("Stop(%d)", uint8(s))
}

var (
	errNoRegister  = errors.New("register not captured")
	errOutsideCopy = errors.New("address outside the stack copy")
)

// Frame is one frame of an unwound stack.
type Frame struct {
	// PC is the captured instruction pointer (frame 0) or a return
	// address: the instruction after the call.
	PC     uint64
	Method Method // how PC was found
}

// Result is an unwound stack, innermost frame first.
type Result struct {
	Frames []Frame
	Stop   Stop
	// Err says more about StopCFI, StopNoRegister and StopOutsideCopy.
	Err error
}

// Regs are the registers captured with the stack: x86-64 rip, rsp, rbp;
// arm64 pc, sp, x29 and x30 (LR).
type Regs struct {
	PC, SP, FP, LR uint64
	// Entry says PC is a function's first instruction (the probe is at a
	// symbol's start). Frame 0 then unwinds by frame pointer, when its
	// object has no CFI for it, from the return address at SP (x86-64)
	// or in LR (arm64) instead of the frame record, which is still the
	// caller's.
	Entry bool
}

// Stack is a copy of user memory: Data holds the bytes at Base.
type Stack struct {
	Base uint64
	Data []byte
}

func (s *Stack) read(addr uint64) (uint64, bool) {
	if addr < s.Base || addr-s.Base > uint64(len(s.Data)) || uint64(len(s.Data))-(addr-s.Base) < 8 {
		return 0, false
	}
	i := addr - s.Base
	b := s.Data[i : i+8]
	return uint64(b[0]) | uint64(b[1])<<8 | uint64(b[2])<<16 | uint64(b[3])<<24 |
		uint64(b[4])<<32 | uint64(b[5])<<40 | uint64(b[6])<<48 | uint64(b[7])<<56, true
}

// Space is the memory map of one process, as remembered: immutable.
type Space struct {
	PID  int
	exec []procfs.Mapping // executable mappings by address
	all  []procfs.Mapping
}

// NewSpace makes the Space of process pid from its mappings (procfs.ReadMaps).
func NewSpace(pid int, maps []procfs.Mapping) *Space {
	s := &Space{PID: pid, all: append([]procfs.Mapping(nil), maps...)}
	for _, m := range maps {
		if m.Exec() {
			s.exec = append(s.exec, m)
		}
	}
	sort.Slice(s.exec, func(i, j int) bool { return s.exec[i].Start < s.exec[j].Start })
	return s
}

// Mapping returns the executable mapping holding pc.
func (s *Space) Mapping(pc uint64) (procfs.Mapping, bool) {
	i := sort.Search(len(s.exec), func(i int) bool { return s.exec[i].End > pc })
	if i < len(s.exec) && s.exec[i].Start <= pc {
		return s.exec[i], true
	}
	return procfs.Mapping{}, false
}

// object builds the procfs.Object of the file mapped by m.
func (s *Space) object(m procfs.Mapping) procfs.Object {
	o := procfs.Object{PID: s.PID, Path: m.Path, Major: m.Major, Minor: m.Minor, Inode: m.Inode, Deleted: m.Deleted}
	for _, x := range s.all {
		if x.Major == m.Major && x.Minor == m.Minor && x.Inode == m.Inode {
			o.Mappings = append(o.Mappings, x)
		}
	}
	return o
}

// Spaces remembers the Space of each process the first time it is asked
// for, so that stacks of processes that exit still unwind. Safe for
// concurrent use.
type Spaces struct {
	mu sync.Mutex
	m  map[int]*Space
}

// Get returns the remembered Space of pid, reading /proc/PID/maps the
// first time (errors as procfs.ReadMaps).
func (s *Spaces) Get(pid int) (*Space, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if sp, ok := s.m[pid]; ok {
		return sp, nil
	}
	maps, err := procfs.ReadMaps(pid)
	if err != nil {
		return nil, err
	}
	if s.m == nil {
		s.m = map[int]*Space{}
	}
	sp := NewSpace(pid, maps)
	s.m[pid] = sp
	return sp, nil
}

// Refresh rereads the mappings of pid (after a dlopen, say) and replaces
// the remembered Space if the process still exists.
func (s *Spaces) Refresh(pid int) (*Space, error) {
	maps, err := procfs.ReadMaps(pid)
	if err != nil {
		return nil, err
	}
	sp := NewSpace(pid, maps)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		s.m = map[int]*Space{}
	}
	s.m[pid] = sp
	return sp, nil
}

// Forget drops the Space of pid.
func (s *Spaces) Forget(pid int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.m, pid)
}

// DefaultMaxDepth is the default Options.MaxDepth.
const DefaultMaxDepth = 128

// Options configures an Unwinder. The zero value is the default.
type Options struct {
	// MaxDepth is the most frames a walk returns; 0 means
	// DefaultMaxDepth.
	MaxDepth int
	// Open opens an object's file; nil means procfs.Open. The Unwinder
	// closes what it returns.
	Open func(procfs.Object) (*os.File, error)
	// NoCFI makes every object unwind with frame pointers (for
	// comparisons and benchmarks).
	NoCFI bool
	// DebugDirs are the global debug directories, inside the process's
	// root, in which the separate debug file of an object without
	// .debug_frame is looked for (symtab.OpenDebugFile), for the
	// .debug_frame it may have there. Empty means symtab.DefaultDebugDir.
	DebugDirs []string
}

type fileID struct {
	major, minor uint32
	inode        uint64
}

// Unwinder unwinds captured stacks, caching each object's CFI by device
// and inode. Safe for concurrent use.
type Unwinder struct {
	opts Options
	mu   sync.Mutex
	objs map[fileID]*cfi
}

// New returns an Unwinder; opts may be nil.
func New(opts *Options) (*Unwinder, error) {
	u := &Unwinder{objs: map[fileID]*cfi{}}
	if opts != nil {
		u.opts = *opts
	}
	if u.opts.MaxDepth < 0 {
		return nil, fmt.Errorf("unwind: Options.MaxDepth %d is negative", u.opts.MaxDepth)
	}
	if u.opts.MaxDepth == 0 {
		u.opts.MaxDepth = DefaultMaxDepth
	}
	if u.opts.Open == nil {
		u.opts.Open = procfs.Open
	}
	return u, nil
}

// object returns the CFI of the file mapped by m, parsing it once.
func (u *Unwinder) object(sp *Space, m procfs.Mapping) *cfi {
	id := fileID{m.Major, m.Minor, m.Inode}
	u.mu.Lock()
	c, ok := u.objs[id]
	u.mu.Unlock()
	if ok {
		return c
	}
	f, err := u.opts.Open(sp.object(m))
	if err != nil {
		c = &cfi{err: err, rows: map[uint64]*row{}}
		if errors.Is(err, procfs.ErrNoProcess) {
			// Says nothing of the file: another process mapping it
			// may open it.
			return c
		}
	} else {
		c = loadCFI(f, u.debugOpener(sp, m))
		f.Close()
	}
	u.mu.Lock()
	if prev, ok := u.objs[id]; ok {
		c = prev
	} else {
		u.objs[id] = c
	}
	u.mu.Unlock()
	return c
}

// Load parses the CFI of every file sp maps executable that the Unwinder
// has not parsed yet, so that the process's stacks still unwind with CFI
// after it exits (its files can then no longer be opened through it).
// Call it when a process is first seen. It returns the errors of objects
// that cannot be opened or parsed, joined; those unwind with frame
// pointers.
func (u *Unwinder) Load(sp *Space) error {
	var errs []error
	for _, m := range sp.exec {
		if !m.FileBacked() {
			continue
		}
		if err := u.object(sp, m).err; err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", m.Path, err))
		}
	}
	return errors.Join(errs...)
}

// ObjectError reports why the object mapped by m has no usable CFI: nil
// when it has some, or has none and nothing went wrong. It parses the
// object if no walk did yet.
func (u *Unwinder) ObjectError(sp *Space, m procfs.Mapping) error {
	return u.object(sp, m).err
}

// arch holds the DWARF register numbers of a machine.
type arch struct {
	m              elf.Machine
	sp, fp, lr, ra uint64 // lr: ^0 when none
	// raMask keeps the address bits of a return address. On arm64 a
	// return address saved by code built with pointer authentication
	// (-mbranch-protection) carries a signature in its high bits; user
	// addresses have 48 bits (Linux maps above 2^48 only for a process
	// that asks with an mmap hint).
	raMask uint64
}

// ARM64AddressBits is the number of address bits the unwinders keep of an
// arm64 return address: the rest is a pointer authentication code. The
// program's walk keeps as many.
const ARM64AddressBits = stackcap.ARM64AddressBits

func archOf(m elf.Machine) (arch, error) {
	switch m {
	case elf.EM_X86_64:
		return arch{m: m, sp: 7, fp: 6, lr: ^uint64(0), ra: 16, raMask: ^uint64(0)}, nil
	case elf.EM_AARCH64:
		return arch{m: m, sp: 31, fp: 29, lr: 30, ra: 30, raMask: 1<<ARM64AddressBits - 1}, nil
	}
	return arch{}, fmt.Errorf("unwind: machine %v is not supported", m)
}

// walker is the state of one walk: the registers known in the current
// frame and the stack.
type walker struct {
	a     arch
	stack *Stack
	pc    uint64
	regs  regFile
}

// regFile holds the registers a walk tracks: SP, the frame pointer and
// (arm64) the link register, by DWARF number.
type regFile struct {
	sp, fp, lr          uint64
	spOK, fpOK, lrOK    bool
	spNum, fpNum, lrNum uint64
}

func (f *regFile) get(r uint64) (uint64, bool) {
	switch r {
	case f.spNum:
		return f.sp, f.spOK
	case f.fpNum:
		return f.fp, f.fpOK
	case f.lrNum:
		return f.lr, f.lrOK
	}
	return 0, false
}

func (f *regFile) set(r, v uint64) {
	switch r {
	case f.spNum:
		f.sp, f.spOK = v, true
	case f.fpNum:
		f.fp, f.fpOK = v, true
	case f.lrNum:
		f.lr, f.lrOK = v, true
	}
}

// cleared returns the file with the same numbering and nothing known.
func (f *regFile) cleared() regFile {
	return regFile{spNum: f.spNum, fpNum: f.fpNum, lrNum: f.lrNum}
}

func (w *walker) reg(r uint64) (uint64, bool) {
	if r == w.a.ra && w.a.lr == ^uint64(0) {
		return w.pc, true
	}
	return w.regs.get(r)
}

func (w *walker) read(addr uint64) (uint64, bool) { return w.stack.read(addr) }

// Unwind walks the stack of a thread of sp from regs and the copy stack.
// It returns an error only for an unknown machine; how the walk ended is
// Result.Stop.
func (u *Unwinder) Unwind(sp *Space, m elf.Machine, regs Regs, stack Stack) (Result, error) {
	return u.walk(m, regs, stack, func(w *walker, first bool) (uint64, Method, Stop, error) {
		return u.step(sp, w, first, regs.Entry)
	})
}

// walk runs step from regs until it stops, the return address is 0, SP
// does not grow or MaxDepth frames.
func (u *Unwinder) walk(m elf.Machine, regs Regs, stack Stack, step func(w *walker, first bool) (uint64, Method, Stop, error)) (Result, error) {
	a, err := archOf(m)
	if err != nil {
		return Result{}, err
	}
	w := &walker{a: a, stack: &stack, pc: regs.PC}
	w.regs = regFile{spNum: a.sp, fpNum: a.fp, lrNum: a.lr}
	w.regs.set(a.sp, regs.SP)
	w.regs.set(a.fp, regs.FP)
	if a.lr != ^uint64(0) {
		w.regs.set(a.lr, regs.LR)
	}
	res := Result{Frames: make([]Frame, 1, min(u.opts.MaxDepth, 32))}
	res.Frames[0] = Frame{PC: regs.PC, Method: MethodRegs}
	for {
		if len(res.Frames) >= u.opts.MaxDepth {
			res.Stop = StopMaxDepth
			return res, nil
		}
		curSP := w.regs.sp
		next, method, stop, err := step(w, len(res.Frames) == 1)
		if stop != 0 {
			res.Stop, res.Err = stop, err
			return res, nil
		}
		next &= a.raMask
		if next == 0 {
			res.Stop = StopEnd
			return res, nil
		}
		// Only a frameless function at frame 0 (an arm64 leaf, its
		// return address in LR) leaves SP as it is.
		if newSP := w.regs.sp; newSP < curSP || newSP == curSP && len(res.Frames) > 1 {
			res.Stop = StopNoProgress
			return res, nil
		}
		w.pc = next
		res.Frames = append(res.Frames, Frame{PC: next, Method: method})
	}
}

// step unwinds one frame: it updates w's registers to the caller's and
// returns the caller's PC.
func (u *Unwinder) step(sp *Space, w *walker, first, entry bool) (uint64, Method, Stop, error) {
	mp, ok := sp.Mapping(w.pc)
	if !ok {
		return 0, 0, StopNoMapping, nil
	}
	if mp.FileBacked() && !u.opts.NoCFI {
		c := u.object(sp, mp)
		lookup := w.pc
		if !first {
			// A return address follows the call, which may be the
			// last instruction of its function.
			lookup--
		}
		if va, ok := c.loads.OffsetToAddr(lookup - mp.Start + mp.Offset); ok {
			if r := c.row(va); r != nil {
				next, err := w.applyCFI(r)
				if err != nil {
					switch {
					case errors.Is(err, errOutsideCopy):
						return 0, 0, StopOutsideCopy, err
					case errors.Is(err, errNoRegister):
						return 0, 0, StopNoRegister, err
					}
					return 0, 0, StopCFI, err
				}
				return next, MethodCFI, 0, nil
			}
		}
	}
	return w.stepFP(first, entry)
}

// stepFP unwinds one frame without CFI: from the frame record at the
// frame pointer, or at a function's entry (frame 0) from SP or LR.
func (w *walker) stepFP(first, entry bool) (uint64, Method, Stop, error) {
	if first && entry {
		next, err := w.applyEntry()
		if err != nil {
			return 0, 0, StopOutsideCopy, err
		}
		return next, MethodFP, 0, nil
	}
	next, err := w.applyFP()
	if err != nil {
		if errors.Is(err, errNoRegister) {
			return 0, 0, StopNoRegister, err
		}
		return 0, 0, StopOutsideCopy, err
	}
	return next, MethodFP, 0, nil
}

// applyFP unwinds with the frame record at the frame pointer: {caller's
// frame pointer, return address} on both machines.
func (w *walker) applyFP() (uint64, error) {
	fp, ok := w.regs.get(w.a.fp)
	if !ok {
		return 0, fmt.Errorf("frame pointer: %w", errNoRegister)
	}
	prev, ok1 := w.stack.read(fp)
	ret, ok2 := w.stack.read(fp + 8)
	if !ok1 || !ok2 {
		return 0, fmt.Errorf("frame record at %#x: %w", fp, errOutsideCopy)
	}
	w.regs = w.regs.cleared()
	w.regs.set(w.a.sp, fp+16)
	w.regs.set(w.a.fp, prev)
	return ret, nil
}

// applyEntry unwinds a function stopped at its first instruction: it has
// pushed nothing, so the return address is at SP (x86-64, the caller's SP
// is 8 above) or in LR (arm64, SP unchanged), and the frame pointer is
// still the caller's.
func (w *walker) applyEntry() (uint64, error) {
	if w.a.lr != ^uint64(0) {
		lr, ok := w.regs.get(w.a.lr)
		if !ok {
			return 0, fmt.Errorf("link register: %w", errNoRegister)
		}
		w.regs.lrOK = false
		return lr, nil
	}
	ret, ok := w.stack.read(w.regs.sp)
	if !ok {
		return 0, fmt.Errorf("return address at %#x: %w", w.regs.sp, errOutsideCopy)
	}
	w.regs.set(w.a.sp, w.regs.sp+8)
	return ret, nil
}

// applyCFI unwinds with row r.
func (w *walker) applyCFI(r *row) (uint64, error) {
	if r.err != nil {
		return 0, r.err
	}
	var cfa uint64
	switch r.cfa.Rule {
	case frame.RuleCFA:
		v, ok := w.reg(r.cfa.Reg)
		if !ok {
			return 0, fmt.Errorf("CFA register %d: %w", r.cfa.Reg, errNoRegister)
		}
		cfa = v + uint64(r.cfa.Offset)
	case frame.RuleExpression:
		v, err := evalExpr(r.cfa.Expression, w, nil)
		if err != nil {
			return 0, fmt.Errorf("CFA expression: %w", err)
		}
		cfa = v
	default:
		return 0, fmt.Errorf("CFA rule %d is not supported", r.cfa.Rule)
	}
	vals := w.regs.cleared()
	vals.set(w.a.sp, cfa)
	tracked := [3]uint64{w.a.fp, r.ra, w.a.lr}
	n := 2
	if w.a.lr != ^uint64(0) && w.a.lr != r.ra {
		n = 3
	}
	var ret uint64
	for _, reg := range tracked[:n] {
		rule, ok := r.regs[reg]
		var v uint64
		known := true
		if !ok {
			// No rule: callee-saved registers keep their value;
			// for the return address column that means the link
			// register (arm64 leaf) or, on x86-64, nothing.
			rule = frame.DWRule{Rule: frame.RuleSameVal}
			if reg == r.ra && w.a.lr == ^uint64(0) {
				rule.Rule = frame.RuleUndefined
			}
		}
		switch rule.Rule {
		case frame.RuleUndefined:
			known = false
		case frame.RuleSameVal:
			v, known = w.regs.get(reg)
		case frame.RuleOffset:
			var ok bool
			if v, ok = w.stack.read(cfa + uint64(rule.Offset)); !ok {
				if reg != r.ra {
					known = false
					break
				}
				return 0, fmt.Errorf("return address at %#x: %w", cfa+uint64(rule.Offset), errOutsideCopy)
			}
		case frame.RuleValOffset:
			v = cfa + uint64(rule.Offset)
		case frame.RuleRegister:
			v, known = w.reg(rule.Reg)
		case frame.RuleExpression, frame.RuleValExpression:
			addr, err := evalExpr(rule.Expression, w, &cfa)
			if err != nil {
				if reg != r.ra {
					known = false
					break
				}
				return 0, fmt.Errorf("return address expression: %w", err)
			}
			v = addr
			if rule.Rule == frame.RuleExpression {
				var ok bool
				if v, ok = w.stack.read(addr); !ok {
					if reg != r.ra {
						known = false
						break
					}
					return 0, fmt.Errorf("return address at %#x: %w", addr, errOutsideCopy)
				}
			}
		default:
			if reg == r.ra {
				return 0, fmt.Errorf("return address rule %d is not supported", rule.Rule)
			}
			known = false
		}
		if reg == r.ra {
			if !known {
				return 0, nil // undefined return address: the outermost frame
			}
			ret = v
		}
		if known && reg != r.ra || known && reg == w.a.lr {
			vals.set(reg, v)
		}
	}
	w.regs = vals
	return ret, nil
}
