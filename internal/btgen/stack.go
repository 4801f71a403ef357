package btgen

import (
	"debug/elf"
	"fmt"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"

	"github.com/usdtkit/usdtkit/internal/bpfgen"
	"github.com/usdtkit/usdtkit/internal/btlang"
	"github.com/usdtkit/usdtkit/internal/stackcap"
)

// Stacks (ustack, ustack(N), ustack(perf[, N])).
//
// A stack in a map key is captured as bpftrace captures it: the id of the
// user stack in a BPF_MAP_TYPE_STACK_TRACE map (stackcap.EmitStackID),
// one map per frame count (StackInfo.Map), so that equal stacks share a
// key; user space looks the frames up when it prints the map. The key
// field is StackKeySize bytes: the stack id, the caller word read at a
// function's entry (see below) and the process id (tgid), which says
// whose mappings symbolize the frames (bpftrace keys stacks by id and pid
// too). A printf argument carries the stack itself, so a record needs no
// map: by default the registers and a copy of the top of the user stack
// (stackcap.EmitCopy, Options.StackCopy bytes), the pid and the site's
// entry flag, which user space unwinds with each object's CFI, or its
// frame pointers where it has none (internal/unwind): code built
// without frame pointers, such as Debian's C library, keeps every frame.
// With a negative Options.StackCopy, the kernel's frame-pointer walk
// (stackcap.EmitFrames) followed by the pid, as bpftrace.
//
// At a function's first instruction (Site.Entry) the frame-pointer walk
// misses the immediate caller unless the kernel adds it (see stackcap):
// each site stores whether it is an entry in the block's scratch, and the
// capture reads the return address at the stack pointer only there.
//
// Each new process whose stack is captured is announced once with a
// RecStackPID record (id 0, then the u64 pid), woken at once, so user
// space can remember the process's mappings while it lives: a process
// that exits before the maps are printed still symbolizes. A BPF hash
// "stackpids" remembers which processes were announced; when it is full,
// processes are no longer announced (user space still symbolizes them
// while they live).

// RecStackPID is the kind of a record announcing a process whose stacks
// were captured: u32 kind, u32 0, u64 pid.
const RecStackPID = 8

// MapStackPIDs is the hash of processes already announced by RecStackPID.
const MapStackPIDs = "stackpids"

// StackKeySize is the size of a stack field in a map key: s64 stack id
// (negative: bpf_get_stackid's error), u64 caller word (0: none), u64 pid.
const StackKeySize = stackcap.StackIDSize + 8

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

// addStackMaps adds the stack maps the program's stack keys use, and the
// announced processes' map when the program captures stacks at all.
func (out *Program) addStackMaps(entries int) {
	any := false
	for _, mi := range out.Maps {
		for _, s := range mi.KeyStacks {
			if s == nil {
				continue
			}
			any = true
			if _, ok := out.Spec.Maps[s.Map]; !ok {
				out.Spec.Maps[s.Map] = stackcap.StackMapSpec(s.Map, entries, s.Frames)
			}
		}
	}
	for _, p := range out.Printfs {
		for _, a := range p.Args {
			any = any || a.Stack != nil
		}
	}
	if any {
		out.Spec.Maps[MapStackPIDs] = &ebpf.MapSpec{Name: MapStackPIDs, Type: ebpf.Hash, KeySize: 4, ValueSize: 4, MaxEntries: maxStackPIDs}
	}
}

// stackBit labels the entry flag's fetch (a constant: it never faults).
const stackBit = bpfgen.MaxArgs + 3

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
	if g.special == 0 && usesStack(g.block) {
		g.entryOff = g.alloc(8)
	}
}

// stackItems returns the fetch of site s's entry flag.
func (g *gen) stackItems(s *Site) []fetchItem {
	if g.entryOff < 0 {
		return nil
	}
	v := int64(0)
	if s.Entry && !s.Return {
		v = 1
	}
	return []fetchItem{{f: bpfgen.Fetch{Kind: bpfgen.FetchConst, Size: 8, Value: v}, slot: g.entryOff, bit: stackBit}}
}

// stackCapture emits capture twice, with and without the caller word,
// chosen by the site's entry flag.
func (g *gen) stackCapture(capture func(entry bool, prefix string) (asm.Instructions, error)) {
	noEntry, done := g.newLabel("stack_noentry"), g.newLabel("stack_done")
	if g.entryOff < 0 {
		g.fail(&btlang.Error{Pos: g.block.At, Msg: "ustack is not available in this block"})
		return
	}
	g.emit(asm.LoadMem(asm.R0, asm.R7, int16(g.entryOff), asm.DWord), asm.JEq.Imm(asm.R0, 0, noEntry))
	for _, entry := range []bool{true, false} {
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
	g.stackCapture(func(entry bool, prefix string) (asm.Instructions, error) {
		return stackcap.EmitStackID(g.opts.Machine, asm.R6, asm.R7, int16(off), s.Map, &stackcap.FramesOptions{MaxFrames: s.Frames, Entry: entry}, prefix)
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
		g.fail(&btlang.Error{Pos: pos, Msg: fmt.Sprintf("this block's printf'd stacks need more than the %d bytes of scratch space (each copies %d bytes of stack to unwind); print fewer stacks per block, or use frame-pointer stacks", maxScratch, s.Copy)})
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
	g.stackCapture(func(entry bool, prefix string) (asm.Instructions, error) {
		opts.Entry = entry
		return stackcap.EmitFrames(g.opts.Machine, asm.R6, asm.R7, int16(off), opts, prefix)
	})
	g.stackPID(off + stackcap.FramesSize(opts))
}

// stackPID stores the pid at scratch off and announces a process not seen
// before (RecStackPID).
func (g *gen) stackPID(off int) {
	seen := g.newLabel("pid_seen")
	g.emit(
		asm.FnGetCurrentPidTgid.Call(),
		asm.RSh.Imm(asm.R0, 32),
		asm.StoreMem(asm.R7, int16(off), asm.R0, asm.DWord),
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
