package stackcap

import (
	"debug/elf"
	"fmt"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
)

// The program's own frame-pointer walk (EmitWalkID): see "Stacks" in
// docs/architecture.md.

// WalkOptions configures EmitWalkID.
type WalkOptions struct {
	// MaxFrames is the most frames kept, the instruction pointer
	// included: 1 to MaxFrames; 0 means DefaultMaxFrames. It must equal
	// the frames map's value size divided by 8 (FramesMapSpec).
	MaxFrames int
	// Entry says the site is a function's first instruction: the word at
	// the stack pointer, the return address into the caller, is the
	// second frame, and the walk goes on from the caller's frame pointer.
	Entry bool
	// Scratch is the offset from dst of WalkScratchSize(opts) bytes the
	// walk may overwrite (a per-CPU map value): the chunk of stack it
	// reads, then the frames it found.
	Scratch int16
	// Stack is the offset from R10 (negative, 8-aligned) of the lowest of
	// WalkStackSlots 8-byte slots of the BPF stack the walk may overwrite.
	Stack int16
}

// WalkStackSlots is the number of 8-byte BPF stack slots EmitWalkID uses.
const WalkStackSlots = 5

// walkChunk is the most bytes of stack one read of the walk copies: a
// page, so that a read from an address up to its page's end never
// crosses into memory that may be unmapped.
const walkChunk = 4096

// Hash constants of the walk (a multiplicative hash of the frames and a
// final mix); any odd constants with well-spread bits would do.
const (
	walkSeed = 0x2545f4914f6cdd1d
	walkMul  = -0x61c8864680b583eb // 0x9e3779b97f4a7c15 as an int64
	walkMix  = -0x40a7b892e31b1a47 // 0xbf58476d1ce4e5b9 as an int64
)

// WalkScratchSize is the number of scratch bytes EmitWalkID uses for
// opts: the chunk, then the frames.
func WalkScratchSize(opts *WalkOptions) int {
	if opts == nil {
		return scratchSize(walkChunk, 0)
	}
	return scratchSize(walkChunk, opts.MaxFrames)
}

// scratchSize is head bytes followed by maxFrames frames (0:
// DefaultMaxFrames), or 0 when maxFrames is out of range.
func scratchSize(head, maxFrames int) int {
	n, err := (&FramesOptions{MaxFrames: maxFrames}).maxFrames()
	if err != nil {
		return 0
	}
	return head + 8*n
}

// FramesMapSpec returns the spec of the BPF hash EmitWalkID stores stacks
// in: entries stacks of maxFrames frames (0: DefaultMaxFrames), keyed by
// their u64 hash, each a zero-terminated (or full) array of instruction
// pointers, innermost first. LookupStack reads it as it reads a stack
// map.
func FramesMapSpec(name string, entries, maxFrames int) *ebpf.MapSpec {
	if maxFrames == 0 {
		maxFrames = DefaultMaxFrames
	}
	return &ebpf.MapSpec{Name: name, Type: ebpf.Hash, KeySize: 8, ValueSize: uint32(8 * maxFrames), MaxEntries: uint32(entries)}
}

// bpfNoExist is BPF_NOEXIST; eexist is EEXIST.
const (
	bpfNoExist = 1
	eexist     = 17
)

// EmitWalkID returns instructions that walk the user stack's frame-pointer
// chain in the program and store at dst+off a stack id record
// (StackIDSize bytes, the layout of EmitStackID's, usable as a map key):
// the stack's hash, never negative or 0, whose frames are in the BPF hash
// named framesMap (FramesMapSpec), or a negative error when the frames
// could not be stored there (-E2BIG: the map is full); the caller word is
// 0, since the frames hold the caller. x86-64 only: other machines give an
// error wrapping ErrUnsupported (use EmitStackID there). R0..R5 are
// clobbered.
func EmitWalkID(m elf.Machine, ctx, dst asm.Register, off int16, framesMap string, opts *WalkOptions, prefix string) (asm.Instructions, error) {
	if m != elf.EM_X86_64 {
		return nil, fmt.Errorf("stackcap: a walk in the program on %v: %w", m, ErrUnsupported)
	}
	r, err := machineRegs(m)
	if err != nil {
		return nil, err
	}
	if err := checkRegs(ctx, dst); err != nil {
		return nil, err
	}
	if opts == nil {
		return nil, fmt.Errorf("stackcap: EmitWalkID needs WalkOptions (its scratch and stack)")
	}
	max, err := (&FramesOptions{MaxFrames: opts.MaxFrames}).maxFrames()
	if err != nil {
		return nil, err
	}
	if int(off) < 0 || int(off)+StackIDSize > 1<<15-1 {
		return nil, fmt.Errorf("stackcap: offset %d: stack id ends past 32 KiB", off)
	}
	if opts.Scratch < 0 || int(opts.Scratch)+WalkScratchSize(opts) > 1<<15-1 {
		return nil, fmt.Errorf("stackcap: scratch at %d: the walk's %d bytes end past 32 KiB", opts.Scratch, WalkScratchSize(opts))
	}
	if opts.Stack >= 0 || opts.Stack%8 != 0 || int(opts.Stack)+8*WalkStackSlots > 0 || opts.Stack < -512 {
		return nil, fmt.Errorf("stackcap: BPF stack offset %d cannot hold %d slots", opts.Stack, WalkStackSlots)
	}
	buf := opts.Scratch
	frames := opts.Scratch + walkChunk
	// The walk's state, in BPF stack slots (they survive helper calls,
	// and the verifier tracks the scalars spilled there): frames found,
	// the frame pointer, the chunk's address and length, the hash.
	sN, sFP, sBase, sLen, sH := opts.Stack, opts.Stack+8, opts.Stack+16, opts.Stack+24, opts.Stack+32
	l := func(s string) string { return prefix + "_walk_" + s }

	// frameAt stores R2 (a return address) as frame n and adds it to the
	// hash: n is reloaded and checked here, where the verifier needs its
	// bound. Clobbers R0, R3, R4, R5.
	frameAt := func() asm.Instructions {
		return asm.Instructions{
			asm.LoadMem(asm.R5, asm.R10, sN, asm.DWord),
			asm.JGE.Imm(asm.R5, int32(max), l("end")),
			asm.Mov.Reg(asm.R4, asm.R5),
			asm.LSh.Imm(asm.R4, 3),
			asm.Add.Reg(asm.R4, dst),
			asm.StoreMem(asm.R4, frames, asm.R2, asm.DWord),
			asm.Add.Imm(asm.R5, 1),
			asm.StoreMem(asm.R10, sN, asm.R5, asm.DWord),
			asm.LoadMem(asm.R0, asm.R10, sH, asm.DWord),
			asm.Xor.Reg(asm.R0, asm.R2),
			asm.LoadImm(asm.R3, walkMul, asm.DWord),
			asm.Mul.Reg(asm.R0, asm.R3),
			asm.StoreMem(asm.R10, sH, asm.R0, asm.DWord),
		}
	}

	insns := asm.Instructions{
		// The first chunk: from the stack pointer to its page's end.
		asm.LoadMem(asm.R3, ctx, r.sp, asm.DWord),
		asm.StoreMem(asm.R10, sBase, asm.R3, asm.DWord),
		asm.Mov.Reg(asm.R2, asm.R3),
		asm.And.Imm(asm.R2, walkChunk-1),
		asm.Mov.Imm(asm.R1, walkChunk),
		asm.Sub.Reg(asm.R1, asm.R2),
		asm.StoreMem(asm.R10, sLen, asm.R1, asm.DWord),
		asm.Mov.Reg(asm.R2, asm.R1),
		asm.Mov.Reg(asm.R1, dst),
		asm.Add.Imm(asm.R1, int32(buf)),
		asm.FnProbeReadUser.Call(),
		asm.Mov.Reg(asm.R1, asm.R0),
		// Frame 0, the instruction pointer.
		storeImm64(asm.R10, sN, 0),
		asm.LoadImm(asm.R0, walkSeed, asm.DWord),
		asm.StoreMem(asm.R10, sH, asm.R0, asm.DWord),
		asm.LoadMem(asm.R2, ctx, r.fp, asm.DWord),
		asm.StoreMem(asm.R10, sFP, asm.R2, asm.DWord),
		asm.LoadMem(asm.R2, ctx, r.ip, asm.DWord),
	}
	// R1 holds the read's result (frameAt keeps R1): when it failed (sp
	// not mapped), the stack is the instruction pointer alone.
	insns = append(insns, frameAt()...)
	insns = append(insns, asm.JNE.Imm(asm.R1, 0, l("end")))
	if opts.Entry {
		// Frame 1, the return address at the stack pointer, when the
		// chunk has it (and it is not 0, which would end the stack).
		insns = append(insns,
			asm.LoadMem(asm.R1, asm.R10, sLen, asm.DWord),
			asm.JLT.Imm(asm.R1, 8, l("loop")),
			asm.LoadMem(asm.R2, dst, buf, asm.DWord),
			asm.JEq.Imm(asm.R2, 0, l("loop")),
		)
		insns = append(insns, frameAt()...)
	}
	insns = append(insns,
		// The walk: a frame is the saved frame pointer and, above it,
		// the return address. A frame pointer in the first page (the
		// 0 at the bottom of a stack) or not 8-aligned ends the stack
		// without a read; the kernel's walk reads there, takes a fault
		// and ends it too. Frames need not lie above the one before: a
		// chain may go on on another stack (a signal handler's, C
		// called from Go), as the kernel's does.
		asm.LoadMem(asm.R1, asm.R10, sFP, asm.DWord).WithSymbol(l("loop")),
		asm.JLT.Imm(asm.R1, walkChunk, l("end")),
		asm.Mov.Reg(asm.R2, asm.R1),
		asm.And.Imm(asm.R2, 7),
		asm.JNE.Imm(asm.R2, 0, l("end")),
		asm.LoadMem(asm.R3, asm.R10, sBase, asm.DWord),
		asm.Mov.Reg(asm.R4, asm.R1),
		asm.Sub.Reg(asm.R4, asm.R3),
		// Offsets past the chunk (and below it: negative, so large
		// unsigned) read a new chunk; the constant bound is the
		// verifier's.
		asm.JGT.Imm(asm.R4, walkChunk-16, l("read")),
		asm.Mov.Reg(asm.R2, asm.R4),
		asm.Add.Imm(asm.R2, 16),
		asm.LoadMem(asm.R3, asm.R10, sLen, asm.DWord),
		asm.JGT.Reg(asm.R2, asm.R3, l("read")),
		asm.Ja.Label(l("have")),

		// A chunk at the frame: to its page's end, at least the frame.
		asm.Mov.Reg(asm.R2, asm.R1).WithSymbol(l("read")),
		asm.And.Imm(asm.R2, walkChunk-1),
		asm.Mov.Imm(asm.R3, walkChunk),
		asm.Sub.Reg(asm.R3, asm.R2),
		asm.JGE.Imm(asm.R3, 16, l("size")),
		asm.Mov.Imm(asm.R3, 16),
		asm.StoreMem(asm.R10, sLen, asm.R3, asm.DWord).WithSymbol(l("size")),
		asm.StoreMem(asm.R10, sBase, asm.R1, asm.DWord),
		asm.Mov.Reg(asm.R2, asm.R3),
		asm.Mov.Reg(asm.R3, asm.R1),
		asm.Mov.Reg(asm.R1, dst),
		asm.Add.Imm(asm.R1, int32(buf)),
		asm.FnProbeReadUser.Call(),
		asm.JNE.Imm(asm.R0, 0, l("end")),
		asm.Mov.Imm(asm.R4, 0),

		// R4: the frame's offset in the chunk, at most walkChunk-16.
		asm.Mov.Reg(asm.R3, dst).WithSymbol(l("have")),
		asm.Add.Reg(asm.R3, asm.R4),
		asm.LoadMem(asm.R1, asm.R3, buf, asm.DWord),
		asm.LoadMem(asm.R2, asm.R3, buf+8, asm.DWord),
		asm.JEq.Imm(asm.R2, 0, l("end")),
		asm.StoreMem(asm.R10, sFP, asm.R1, asm.DWord),
	)
	insns = append(insns, frameAt()...)
	insns = append(insns, asm.Ja.Label(l("loop")))
	insns = append(insns, emitStoreFrames(dst, off, frames, sN, sH, max, framesMap, l)...)
	return insns, nil
}

// emitStoreFrames ends a walk whose frames are at dst+frames, their
// number in BPF stack slot sN and their running hash in slot sH: it
// zero-terminates the frames unless there are max, finishes the hash,
// stores the stack id record at dst+off and adds the frames to the
// frames map unless there. The walk's code jumps to l("end") to run it.
// R0..R5 are clobbered.
func emitStoreFrames(dst asm.Register, off, frames, sN, sH int16, max int, framesMap string, l func(string) string) asm.Instructions {
	return asm.Instructions{
		// A zero after the last frame, unless the frames fill the
		// value; the hash of the frames and their number.
		asm.LoadMem(asm.R5, asm.R10, sN, asm.DWord).WithSymbol(l("end")),
		asm.JGE.Imm(asm.R5, int32(max), l("hash")),
		asm.Mov.Reg(asm.R4, asm.R5),
		asm.LSh.Imm(asm.R4, 3),
		asm.Add.Reg(asm.R4, dst),
		storeImm64(asm.R4, frames, 0),
		asm.LoadMem(asm.R0, asm.R10, sH, asm.DWord).WithSymbol(l("hash")),
		asm.Xor.Reg(asm.R0, asm.R5),
		asm.Mov.Reg(asm.R1, asm.R0),
		asm.RSh.Imm(asm.R1, 32),
		asm.Xor.Reg(asm.R0, asm.R1),
		asm.LoadImm(asm.R1, walkMix, asm.DWord),
		asm.Mul.Reg(asm.R0, asm.R1),
		asm.Mov.Reg(asm.R1, asm.R0),
		asm.RSh.Imm(asm.R1, 29),
		asm.Xor.Reg(asm.R0, asm.R1),
		// Never negative (an error) or 0.
		asm.LSh.Imm(asm.R0, 1),
		asm.RSh.Imm(asm.R0, 1),
		asm.JNE.Imm(asm.R0, 0, l("id")),
		asm.Mov.Imm(asm.R0, 1),
		asm.StoreMem(asm.R10, sH, asm.R0, asm.DWord).WithSymbol(l("id")),
		asm.StoreMem(dst, off, asm.R0, asm.DWord),
		storeImm64(dst, off+8, 0),

		// The frames map: known, or added now.
		asm.LoadMapPtr(asm.R1, 0).WithReference(framesMap),
		asm.Mov.Reg(asm.R2, asm.R10),
		asm.Add.Imm(asm.R2, int32(sH)),
		asm.FnMapLookupElem.Call(),
		asm.JNE.Imm(asm.R0, 0, l("done")),
		asm.LoadMapPtr(asm.R1, 0).WithReference(framesMap),
		asm.Mov.Reg(asm.R2, asm.R10),
		asm.Add.Imm(asm.R2, int32(sH)),
		asm.Mov.Reg(asm.R3, dst),
		asm.Add.Imm(asm.R3, int32(frames)),
		asm.Mov.Imm(asm.R4, bpfNoExist),
		asm.FnMapUpdateElem.Call(),
		asm.JEq.Imm(asm.R0, 0, l("done")),
		asm.JEq.Imm(asm.R0, -eexist, l("done")),
		asm.StoreMem(dst, off, asm.R0, asm.DWord),
		asm.Mov.Imm(asm.R0, 0).WithSymbol(l("done")),
	}
}
