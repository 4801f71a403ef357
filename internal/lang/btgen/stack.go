package btgen

import (
	"debug/elf"
	"encoding/binary"
	"fmt"
	"os"
	"slices"
	"sync"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"golang.org/x/sys/unix"

	"github.com/usdtkit/usdtkit/internal/bpf/argread"
	"github.com/usdtkit/usdtkit/internal/bpf/stackcap"
	"github.com/usdtkit/usdtkit/internal/lang/btlang"
)

// Stacks (ustack, ustack(N), ustack(perf[, N])).
//
// A stack in a map key is an id that equal stacks share, whose frames
// user space looks up when it prints the map in a map per frame count
// (StackInfo.Map). On x86-64 the program walks the stack itself: by
// default with the objects' call frame information (Options.StackKeys
// StackKeysCFI: stackcap.EmitCFIWalkID, one bpf_loop whose callback
// unwinds a frame, with the tables of the maps cfi_procs, cfi_tables and
// cfi_rows, which the runner fills for the traced processes and for the
// processes the walk asks for in cfi_wanted; frame pointers in processes
// and objects it has no table of), or with frame
// pointers alone (StackKeysFP: stackcap.EmitWalkID). Either way the id
// is a 64-bit hash of the frames, kept in a BPF hash. Elsewhere it is
// captured as bpftrace captures it: the id of the user stack in a
// BPF_MAP_TYPE_STACK_TRACE map (stackcap.EmitStackID).
// The key field is StackKeySize bytes: the stack id, the caller word read
// at a function's entry (see below; 0 with the walk, whose frames hold
// the caller) and the process id (tgid), which says
// whose mappings symbolize the frames (bpftrace keys stacks by id and pid
// too). A printf argument carries the stack itself, so a record needs no
// map: by default the registers and a copy of the top of the user stack
// (stackcap.EmitCopy, Options.StackCopy bytes), the pid and the site's
// entry flag, which user space unwinds with each object's CFI, or its
// frame pointers where it has none (internal/stacks/unwind): code built
// without frame pointers, such as Debian's C library, keeps every frame.
// With a negative Options.StackCopy, the kernel's frame-pointer walk
// (stackcap.EmitFrames) followed by the pid, as bpftrace.
//
// At a function's first instruction (Site.Entry) the frame-pointer walk
// misses the immediate caller unless the kernel adds it (see stackcap);
// the program's own walk takes it from the stack at every entry. For the
// kernel's walk:
// each site stores whether it is an entry in the block's scratch, and the
// capture reads the return address at the stack pointer only there, and
// not where the kernel adds the caller itself (kernelKeepsCaller: push
// %rbp on x86-64 since Linux 6.10), which saves a bpf_probe_read_user.
//
// Each new process whose stack is captured is announced once with a
// RecStackPID record (id 0, then the u64 pid), woken at once, so user
// space can remember the process's mappings while it lives: a process
// that exits before the maps are printed still symbolizes. A BPF hash
// "stackpids" remembers which processes were announced; when it is full,
// processes are no longer announced (user space still symbolizes them
// while they live). A word of the per-CPU scratch value holds the last
// process each CPU checked, so that the hits of one process after its
// first, the common case, skip the hash lookup. Where every site of a block agrees
// on the entry flag, the capture has only that path.

// A count() keyed by one stack alone (@[ustack] = count(), the profile
// of a flame graph) counts most hits in stack slots (MapInfo.Slots), a
// per-CPU array indexed by the stack id's low bits, whose lookup the
// verifier inlines, rather than in its BPF hash, whose lookup is a
// kernel call that hashes and compares the key: a slot holds one key
// (its tag, the stack id + 1, 0 for an empty slot; the caller word; the
// pid) and its count on that CPU. A hit whose key is the slot's adds one
// there; one whose slot is empty takes it; one whose slot holds another
// key (another stack of the same low bits, another caller at a function's
// entry, another process) counts in the hash as before. User space adds
// the slots' counts to the hash's (DecodeSlot). The block's busy flag
// keeps a slot to one program at a time, as it does the scratch value.
// Maps a delete() names have no slots.

// Stack slots: StackSlots per CPU of SlotSize bytes (tag, caller word,
// pid, count; u64 each).
const (
	StackSlots = 2048
	SlotSize   = 32
)

// Offsets in a stack slot.
const (
	slotTag    = 0
	slotCaller = 8
	slotPID    = 16
	slotCount  = 24
)

// hasSlots reports whether map m, if no delete() names it, counts in
// stack slots.
func hasSlots(m *btlang.Map) bool {
	return m.Agg == btlang.AggCount && len(m.Keys) == 1 && m.Keys[0].Kind == btlang.KindStack
}

// DecodeSlot returns the key (in the map's key layout, MapInfo.KeySize
// bytes) and count that one CPU's stack slot holds; ok is false for an
// empty slot. A slot's count may be 0 (after zero()): the key then
// prints with 0, as a zeroed hash entry does.
func DecodeSlot(mi *MapInfo, v []byte) (key []byte, count uint64, ok bool) {
	if len(v) < SlotSize || len(mi.KeyOffs) != 1 || mi.KeyOffs[0]+StackKeySize > mi.KeySize {
		return nil, 0, false
	}
	ne := binary.NativeEndian
	tag := ne.Uint64(v[slotTag:])
	if tag == 0 {
		return nil, 0, false
	}
	key = make([]byte, mi.KeySize)
	f := key[mi.KeyOffs[0]:]
	ne.PutUint64(f, tag-1)
	ne.PutUint64(f[8:], ne.Uint64(v[slotCaller:]))
	ne.PutUint64(f[stackcap.StackIDSize:], ne.Uint64(v[slotPID:]))
	return key, ne.Uint64(v[slotCount:]), true
}

// ClearSlot empties one CPU's stack slot v or, with zero, zeros its count
// and keeps its key.
func ClearSlot(v []byte, zero bool) {
	if len(v) < SlotSize {
		return
	}
	if !zero {
		clear(v[:SlotSize])
		return
	}
	clear(v[slotCount:SlotSize])
}

// slotCount adds one to the count of the key at scratch offset key in
// map mi's stack slot and jumps to done, when mi has slots and the slot
// is the key's or empty; else it falls through to the hash.
func (g *gen) slotCount(mi *MapInfo, key int, done string) {
	if mi.Slots == "" {
		return
	}
	f := int16(key + mi.KeyOffs[0])
	miss, claim := g.newLabel("slot_miss"), g.newLabel("slot_claim")
	g.emit(
		asm.LoadMem(asm.R1, asm.R7, f, asm.DWord),
		// A negative id is bpf_get_stackid's error: the hash keeps it.
		asm.JSLT.Imm(asm.R1, 0, miss),
		asm.And.Imm(asm.R1, StackSlots-1),
		asm.StoreMem(asm.R10, -4, asm.R1, asm.Word),
		asm.LoadMapPtr(asm.R1, 0).WithReference(mi.Slots),
		asm.Mov.Reg(asm.R2, asm.R10),
		asm.Add.Imm(asm.R2, -4),
		asm.FnMapLookupElem.Call(),
		asm.JEq.Imm(asm.R0, 0, miss),
		asm.LoadMem(asm.R2, asm.R7, f, asm.DWord),
		asm.Add.Imm(asm.R2, 1),
		asm.LoadMem(asm.R1, asm.R0, slotTag, asm.DWord),
		asm.JEq.Imm(asm.R1, 0, claim),
		asm.JNE.Reg(asm.R1, asm.R2, miss),
		asm.LoadMem(asm.R1, asm.R0, slotCaller, asm.DWord),
		asm.LoadMem(asm.R2, asm.R7, f+8, asm.DWord),
		asm.JNE.Reg(asm.R1, asm.R2, miss),
		asm.LoadMem(asm.R1, asm.R0, slotPID, asm.DWord),
		asm.LoadMem(asm.R2, asm.R7, f+stackcap.StackIDSize, asm.DWord),
		asm.JNE.Reg(asm.R1, asm.R2, miss),
		asm.LoadMem(asm.R1, asm.R0, slotCount, asm.DWord),
		asm.Add.Imm(asm.R1, 1),
		asm.StoreMem(asm.R0, slotCount, asm.R1, asm.DWord),
		asm.Ja.Label(done),
	)
	g.label(claim)
	g.emit(
		asm.StoreMem(asm.R0, slotTag, asm.R2, asm.DWord),
		asm.LoadMem(asm.R1, asm.R7, f+8, asm.DWord),
		asm.StoreMem(asm.R0, slotCaller, asm.R1, asm.DWord),
		asm.LoadMem(asm.R1, asm.R7, f+stackcap.StackIDSize, asm.DWord),
		asm.StoreMem(asm.R0, slotPID, asm.R1, asm.DWord),
		storeImm64(asm.R0, slotCount, 1),
		asm.Ja.Label(done),
	)
	g.label(miss)
	g.emit(nop())
}

// RecStackPID is the kind of a record announcing a process whose stacks
// were captured: u32 kind, u32 0, u64 pid.
const RecStackPID = 8

// MapStackPIDs is the hash of processes already announced by RecStackPID.
const MapStackPIDs = "stackpids"

// StackKeySize is the size of a stack field in a map key: s64 stack id
// (negative: bpf_get_stackid's error), u64 caller word (0: none), u64 pid.
const StackKeySize = stackcap.StackIDSize + 8

// MapStackConf is a frozen, read-only one-u64 array that user space fills
// before loading: the process every stack of the program is of, when
// every site is attached for that process alone, else 0. The verifier
// reads a constant there, so that with a process the pid costs no helper
// call (bpf_get_current_pid_tgid) and without one the test is gone. A
// thread of another process sharing the traced one's memory (a vfork
// child) then keys its stacks with the traced pid, whose mappings are
// the ones it runs in.
const MapStackConf = "stackconf"

// maxStackPIDs bounds MapStackPIDs.
const maxStackPIDs = 4096

// StackInfo says how a stack key field or printf argument was captured
// and prints.
type StackInfo struct {
	// Frames is the most frames kept (ustack(N)'s N; 127 for ustack).
	Frames int
	// Perf prints as ustack(perf): address, frame and object per line.
	Perf bool
	// Map is the stack map in Spec.Maps a key's stack id refers to
	// ("" for a printf argument, whose record holds the stack).
	Map string
	// Copy, for a printf argument, is the size of the stack copy
	// (stackcap.CopyOptions.Size) the record holds instead of frames;
	// 0: frames (stackcap.EmitFrames).
	Copy int
	// Machine is the traced objects' architecture (for unwinding).
	Machine elf.Machine
}

// DefaultStackCopy is the default Options.StackCopy: 8 KiB, perf's
// default dump size, so that a few printf'd stacks fit the per-CPU
// scratch value (32 KiB).
const DefaultStackCopy = 8 << 10

// stackMapName is the stack map of stacks of n frames.
func stackMapName(n int) string { return fmt.Sprintf("stacks%d", n) }

// stackInfo returns the StackInfo of a stack type.
func stackInfo(t btlang.Type) *StackInfo {
	return &StackInfo{Frames: t.Size, Perf: t.Perf, Map: stackMapName(t.Size)}
}

// addStackMaps adds the stack maps the program's stack keys use, the
// tables of the CFI walk when it walks them, and the announced
// processes' map when the program captures stacks at all.
func (out *Program) addStackMaps(o *Options) {
	entries, m := o.MaxEntries, o.Machine
	any, cfi := false, false
	for _, mi := range out.Maps {
		// usym() keys and values announce their processes as stacks do.
		any = any || slices.Contains(mi.KeyUsym, true) || mi.ValueUsym
		if mi.Slots != "" {
			out.Spec.Maps[mi.Slots] = &ebpf.MapSpec{Name: mi.Slots, Type: ebpf.PerCPUArray, KeySize: 4, ValueSize: SlotSize, MaxEntries: StackSlots}
		}
		for _, s := range mi.KeyStacks {
			if s == nil {
				continue
			}
			any = true
			if s.Map == "" {
				continue // a copy in a RecKey record (MapInfo.User)
			}
			if _, ok := out.Spec.Maps[s.Map]; !ok {
				if walks(m) {
					cfi = cfi || cfiWalks(o)
					out.Spec.Maps[s.Map] = stackcap.FramesMapSpec(s.Map, entries, s.Frames)
				} else {
					out.Spec.Maps[s.Map] = stackcap.StackMapSpec(s.Map, entries, s.Frames)
				}
			}
		}
	}
	for _, p := range out.Printfs {
		for _, a := range p.Args {
			any = any || a.Stack != nil || a.Usym
		}
	}
	if cfi {
		// Placeholders, one entry each: the runner replaces them with
		// the maps of its unwind.BPFTables (a program loaded with these
		// walks every stack with frame pointers).
		out.Spec.Maps[stackcap.DefaultCFIProcsMap] = stackcap.CFIProcsMapSpec(stackcap.DefaultCFIProcsMap, 1)
		out.Spec.Maps[stackcap.DefaultCFITablesMap] = stackcap.CFITablesMapSpec(stackcap.DefaultCFITablesMap, 1)
		out.Spec.Maps[stackcap.DefaultCFIRowsMap] = stackcap.CFIRowsMapSpec(stackcap.DefaultCFIRowsMap, 1)
		out.Spec.Maps[stackcap.DefaultCFIWantedMap] = stackcap.CFIWantedMapSpec(stackcap.DefaultCFIWantedMap, 1)
	}
	if any {
		out.Spec.Maps[MapStackPIDs] = &ebpf.MapSpec{Name: MapStackPIDs, Type: ebpf.Hash, KeySize: 4, ValueSize: 4, MaxEntries: maxStackPIDs}
		out.Spec.Maps[MapStackConf] = StackConfSpec(0)
	}
}

// StackConfSpec returns the spec of MapStackConf holding pid (0: none).
// The caller freezes the map it makes (ebpf.Map.Freeze) before loading the
// program: only then does the verifier read a constant there.
func StackConfSpec(pid int) *ebpf.MapSpec {
	return &ebpf.MapSpec{
		Name: MapStackConf, Type: ebpf.Array, KeySize: 4, ValueSize: 8, MaxEntries: 1,
		Flags:    unix.BPF_F_RDONLY_PROG,
		Contents: []ebpf.MapKV{{Key: uint32(0), Value: uint64(pid)}},
	}
}

// stackBit labels the entry flag's fetch (a constant: it never faults).
const stackBit = argread.MaxArgs + 3

// usesStack reports whether the block reads ustack.
func usesStack(b *btlang.ProbeBlock) bool {
	found := false
	btlang.Inspect(b, func(n btlang.Node) bool {
		switch e := n.(type) {
		case *btlang.Builtin:
			found = found || e.Name == "ustack"
		case *btlang.Call:
			found = found || e.Name == "ustack"
		}
		return !found
	})
	return found
}

// layoutStack reserves the block's entry flag when it reads ustack.
func (g *gen) layoutStack() {
	g.entryOff = -1
	if (g.special == 0 || g.special == btlang.ProbeProfile) && usesStack(g.block) {
		g.entryOff = g.alloc(8)
		if g.walks() {
			slots := stackcap.WalkStackSlots
			if g.cfiWalks() {
				slots = stackcap.CFIWalkStackSlots
			}
			for range slots {
				g.walkStack = g.push()
			}
		}
	}
}

// walks reports whether stack keys are walked in the program
// (stackcap.EmitWalkID, x86-64) rather than by bpf_get_stackid.
func (g *gen) walks() bool { return walks(g.opts.Machine) }

func walks(m elf.Machine) bool { return m == 0 || m == elf.EM_X86_64 }

// cfiWalks reports whether the program's walk of stack keys is the one
// with call frame information (stackcap.EmitCFIWalkID).
func (g *gen) cfiWalks() bool { return cfiWalks(g.opts) }

func cfiWalks(o *Options) bool { return walks(o.Machine) && o.StackKeys == StackKeysCFI }

// walkArea returns the scratch offset of the walk's area for stacks of
// frames frames.
func (g *gen) walkArea(frames int) int {
	if off, ok := g.walkScratch[frames]; ok {
		return off
	}
	if g.walkScratch == nil {
		g.walkScratch = map[int]int{}
	}
	size := stackcap.WalkScratchSize(&stackcap.WalkOptions{MaxFrames: frames})
	if g.cfiWalks() {
		size = stackcap.CFIWalkScratchSize(&stackcap.CFIWalkOptions{MaxFrames: frames})
	}
	off := g.alloc(size)
	g.walkScratch[frames] = off
	return off
}

// stackItems returns the fetch of site s's entry flag.
func (g *gen) stackItems(s *Site) []fetchItem {
	if g.entryOff < 0 {
		return nil
	}
	v := int64(g.entryFlag(s))
	return []fetchItem{{f: argread.Fetch{Kind: argread.FetchConst, Size: 8, Value: v}, slot: g.entryOff, bit: stackBit}}
}

// The entry flag of a site (stackItems): non-zero at a function's entry.
const (
	siteBody = 0 // not a function's entry
	// siteEntry: an entry, where the capture reads the caller word.
	siteEntry = 1
	// siteEntryKernel: an entry where the kernel's walk keeps the
	// caller itself (kernelKeepsCaller): no caller word needed.
	siteEntryKernel = 2
)

// entryFlag returns site s's entry flag.
func (g *gen) entryFlag(s *Site) int {
	switch {
	case !s.Entry || s.Return:
		return siteBody
	case (g.opts.Machine == 0 || g.opts.Machine == elf.EM_X86_64) && kernelKeepsCaller(s):
		return siteEntryKernel
	}
	return siteEntry
}

// kernelKeepsCaller reports whether the kernel's frame-pointer walk at
// entry site s keeps the immediate caller: since Linux 6.10, on x86-64,
// a uprobe on `push %rbp` adds the return address at the stack pointer
// to user stacks itself (perf_callchain_user with
// is_uprobe_at_func_entry); the caller knows s is an x86-64 site. The
// same at endbr64 is not seen on Linux 6.18 (TestStacksCallerAtPushRBP):
// there the caller word is read. Where the object cannot be read at s, or on
// older kernels and other machines, it says no, and the capture reads
// the caller (user space drops a caller the walk has already).
func kernelKeepsCaller(s *Site) bool {
	if !callerKernel() {
		return false
	}
	f, err := os.Open(s.Path)
	if err != nil {
		return false
	}
	defer f.Close()
	var b [1]byte
	if _, err := f.ReadAt(b[:], int64(s.Offset)); err != nil {
		return false
	}
	return b[0] == 0x55
}

// callerKernel reports whether the running kernel keeps the caller at
// an x86-64 uprobe on a function's first instruction (Linux 6.10 on) at push %rbp.
var callerKernel = sync.OnceValue(func() bool {
	var u unix.Utsname
	if unix.Uname(&u) != nil {
		return false
	}
	var major, minor int
	if _, err := fmt.Sscanf(unix.ByteSliceToString(u.Release[:]), "%d.%d", &major, &minor); err != nil {
		return false
	}
	return major > 6 || major == 6 && minor >= 10
})

// sitesEntry returns whether the block's sites need the caller word
// (entry flag siteEntry; with walk, any entry, since the walk in the
// program has no caller from the kernel) and whether every site agrees.
func (g *gen) sitesEntry(walk bool) (entry, same bool) {
	if g.special == btlang.ProbeProfile {
		// A sample is never at a probed function's entry.
		return false, true
	}
	if len(g.sites) == 0 {
		return false, false
	}
	isEntry := func(s *Site) bool {
		if walk {
			return g.entryFlag(s) != siteBody
		}
		return g.entryFlag(s) == siteEntry
	}
	first := isEntry(&g.sites[0])
	for i := range g.sites[1:] {
		if isEntry(&g.sites[i+1]) != first {
			return false, false
		}
	}
	return first, true
}

// stackCapture emits capture twice, with and without the caller word,
// chosen by the site's entry flag.
func (g *gen) stackCapture(walk bool, capture func(entry bool, prefix string) (asm.Instructions, error)) {
	noEntry, done := g.newLabel("stack_noentry"), g.newLabel("stack_done")
	if g.entryOff < 0 {
		g.fail(&btlang.Error{Pos: g.block.At, Msg: "ustack is not available in this block"})
		return
	}
	paths := []bool{true, false}
	if e, same := g.sitesEntry(walk); same {
		// Every site agrees: only its path, no test of the flag.
		insns, err := capture(e, g.newLabel("stack"))
		if err != nil {
			g.fail(&btlang.Error{Pos: g.block.At, Msg: err.Error()})
			return
		}
		g.emit(insns...)
		return
	}
	g.emit(asm.LoadMem(asm.R0, asm.R7, int16(g.entryOff), asm.DWord))
	if walk {
		g.emit(asm.JEq.Imm(asm.R0, siteBody, noEntry))
	} else {
		g.emit(asm.JNE.Imm(asm.R0, siteEntry, noEntry))
	}
	for _, entry := range paths {
		if !entry {
			g.label(noEntry)
		}
		insns, err := capture(entry, g.newLabel("stack"))
		if err != nil {
			g.fail(&btlang.Error{Pos: g.block.At, Msg: err.Error()})
			return
		}
		g.emit(insns...)
		if entry {
			g.emit(asm.Ja.Label(done))
		}
	}
	g.label(done)
	g.emit(nop())
}

// stackKey stores a stack key field (StackKeySize bytes) at scratch off.
func (g *gen) stackKey(off int, s *StackInfo) {
	if g.walks() {
		scratch := g.walkArea(s.Frames)
		done := g.noUserStack(off)
		g.stackCapture(true, func(entry bool, prefix string) (asm.Instructions, error) {
			if g.cfiWalks() {
				insns, callback, err := stackcap.EmitCFIWalkID(elf.EM_X86_64, asm.R6, asm.R7, int16(off), s.Map, &stackcap.CFIWalkOptions{MaxFrames: s.Frames, Entry: entry, Scratch: int16(scratch), Stack: g.walkStack}, prefix)
				g.callbacks = append(g.callbacks, callback...)
				return insns, err
			}
			return stackcap.EmitWalkID(elf.EM_X86_64, asm.R6, asm.R7, int16(off), s.Map, &stackcap.WalkOptions{MaxFrames: s.Frames, Entry: entry, Scratch: int16(scratch), Stack: g.walkStack}, prefix)
		})
		if done != "" {
			g.label(done)
			g.emit(nop())
		}
		g.stackPID(off + stackcap.StackIDSize)
		return
	}
	g.withContext(func() {
		g.stackCapture(false, func(entry bool, prefix string) (asm.Instructions, error) {
			return stackcap.EmitStackID(g.opts.Machine, asm.R6, asm.R7, int16(off), s.Map, &stackcap.FramesOptions{MaxFrames: s.Frames, Entry: entry}, prefix)
		})
	})
	g.stackPID(off + stackcap.StackIDSize)
}

// stackArgSize is the size of a printf stack argument in its record.
func stackArgSize(s *StackInfo) int {
	if s.Copy > 0 {
		// The copy, the pid, the entry flag.
		return stackcap.CopySize(&stackcap.CopyOptions{Size: s.Copy}) + 16
	}
	// The frames, the pid.
	return stackcap.FramesSize(&stackcap.FramesOptions{MaxFrames: s.Frames}) + 8
}

// stackArg stores a printf stack argument at scratch off: with s.Copy,
// the registers and stack copy (stackcap.EmitCopy), the pid and the
// site's entry flag; else the frames (FramesSize) and the pid.
func (g *gen) stackArg(pos btlang.Pos, off int, s *StackInfo) {
	if s.Copy == 0 {
		g.stackFrames(off, s)
		return
	}
	if g.entryOff < 0 {
		g.fail(&btlang.Error{Pos: g.block.At, Msg: "ustack is not available in this block"})
		return
	}
	opts := &stackcap.CopyOptions{Size: s.Copy}
	if off+stackArgSize(s) > maxScratch {
		g.fail(&btlang.Error{Pos: pos, Msg: fmt.Sprintf("this block's stacks unwound in user space (printf'd, or map keys with --unwind cfi) need more than the %d bytes of scratch space (each copies %d bytes of stack); capture fewer stacks per block, or use frame-pointer stacks", maxScratch, s.Copy)})
		return
	}
	insns, err := stackcap.EmitCopy(g.opts.Machine, asm.R6, asm.R7, int16(off), opts, g.newLabel("copy"))
	if err != nil {
		g.fail(&btlang.Error{Pos: g.block.At, Msg: err.Error()})
		return
	}
	g.emit(insns...)
	n := stackcap.CopySize(opts)
	g.emit(
		asm.LoadMem(asm.R0, asm.R7, int16(g.entryOff), asm.DWord),
		asm.StoreMem(asm.R7, int16(off+n+8), asm.R0, asm.DWord),
	)
	g.stackPID(off + n)
}

// stackFrames stores a printf stack argument (FramesSize, then the pid)
// at scratch off.
func (g *gen) stackFrames(off int, s *StackInfo) {
	opts := &stackcap.FramesOptions{MaxFrames: s.Frames}
	g.withContext(func() {
		g.stackCapture(false, func(entry bool, prefix string) (asm.Instructions, error) {
			opts.Entry = entry
			return stackcap.EmitFrames(g.opts.Machine, asm.R6, asm.R7, int16(off), opts, prefix)
		})
	})
	g.stackPID(off + stackcap.FramesSize(opts))
}

// stackPID stores the pid at scratch off and announces a process not seen
// before (RecStackPID).
func (g *gen) stackPID(off int) {
	seen, have := g.newLabel("pid_seen"), g.newLabel("pid_have")
	g.emit(
		// The traced process, a constant to the verifier (MapStackConf),
		// or the current one.
		asm.LoadMapValue(asm.R0, 0, 0).WithReference(MapStackConf),
		asm.LoadMem(asm.R0, asm.R0, 0, asm.DWord),
		asm.JNE.Imm(asm.R0, 0, have),
		asm.FnGetCurrentPidTgid.Call(),
		asm.RSh.Imm(asm.R0, 32),
	)
	g.label(have)
	g.emit(
		asm.StoreMem(asm.R7, int16(off), asm.R0, asm.DWord),
		// The process this CPU saw last was checked already: the same
		// again skips the hash. Another is checked below and becomes
		// the last seen (stackpids has it afterwards, or is full).
		asm.LoadMem(asm.R1, asm.R7, lastPIDOff, asm.DWord),
		asm.JEq.Reg(asm.R1, asm.R0, seen),
		asm.StoreMem(asm.R7, lastPIDOff, asm.R0, asm.DWord),
	)
	g.emit(
		asm.LoadMem(asm.R0, asm.R7, int16(off), asm.DWord),
		// stackpids[pid] = pid, only if absent: the first hit of a
		// process announces it. A lookup (inlined by the verifier)
		// first: an update attempt on every hit would cost more.
		asm.StoreMem(asm.R10, -8, asm.R0, asm.Word),
		asm.LoadMapPtr(asm.R1, 0).WithReference(MapStackPIDs),
		asm.Mov.Reg(asm.R2, asm.R10),
		asm.Add.Imm(asm.R2, -8),
		asm.FnMapLookupElem.Call(),
		asm.JNE.Imm(asm.R0, 0, seen),
		asm.LoadMapPtr(asm.R1, 0).WithReference(MapStackPIDs),
		asm.Mov.Reg(asm.R2, asm.R10),
		asm.Add.Imm(asm.R2, -8),
		asm.Mov.Reg(asm.R3, asm.R10),
		asm.Add.Imm(asm.R3, -8),
		asm.Mov.Imm(asm.R4, bpfNoExist),
		asm.FnMapUpdateElem.Call(),
		asm.JNE.Imm(asm.R0, 0, seen),
	)
	rec := g.alloc(16)
	g.emit(
		asm.StoreImm(asm.R7, int16(rec), RecStackPID, asm.Word),
		asm.StoreImm(asm.R7, int16(rec+4), 0, asm.Word),
		asm.LoadMem(asm.R0, asm.R7, int16(off), asm.DWord),
		asm.StoreMem(asm.R7, int16(rec+8), asm.R0, asm.DWord),
		asm.LoadMapPtr(asm.R1, 0).WithReference(MapEvents),
		asm.Mov.Reg(asm.R2, asm.R7),
		asm.Add.Imm(asm.R2, int32(rec)),
		asm.Mov.Imm(asm.R3, 16),
		asm.Mov.Imm(asm.R4, rbForceWakeup),
		asm.FnRingbufOutput.Call(),
		asm.JEq.Imm(asm.R0, 0, seen),
	)
	g.lost(LostEvents)
	g.label(seen)
	g.emit(nop())
}
