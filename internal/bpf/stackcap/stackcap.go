package stackcap

import (
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/usdtkit/usdtkit/internal/bpf/argread"
)

// ErrUnsupported is wrapped by errors for machines the capture does not
// know.
var ErrUnsupported = argread.ErrUnsupported

// Limits.
const (
	// DefaultMaxFrames is kernel.perf_event_max_stack's default: the kernel
	// walks no deeper unless the sysctl is raised.
	DefaultMaxFrames = 127
	// MaxFrames bounds FramesOptions.MaxFrames.
	MaxFrames = 1024
	// DefaultCopySize is the default number of stack bytes EmitCopy copies.
	DefaultCopySize = 16 << 10
	// MaxCopySize bounds CopyOptions.Size (a per-CPU array value holds
	// at most 32 KiB, a ring buffer record is not bounded as tightly, but
	// the emitted offsets are 16-bit).
	MaxCopySize = 28 << 10
	// chunk is the granularity of the copy: a page, the unit in which
	// memory is mapped or not.
	chunk = 4096
)

// Flags of a frames record.
const (
	FlagCaller   = 1 << 0 // the caller word was read (FramesOptions.Entry)
	FlagStackErr = 1 << 1 // bpf_get_stack failed
)

// bpfUserStack is BPF_F_USER_STACK (include/uapi/linux/bpf.h).
const bpfUserStack = 1 << 8

// Header sizes.
const (
	framesHeader = 16
	// StackIDSize is the size of a stack id record.
	StackIDSize = 16
	copyHeader  = 48
)

// regs are the context offsets of the registers a capture reads.
type regs struct {
	ip, sp, fp, lr int16
	hasLR          bool
}

func machineRegs(m elf.Machine) (regs, error) {
	var names [4]string
	switch m {
	case elf.EM_X86_64:
		names = [4]string{"rip", "rsp", "rbp", ""}
	case elf.EM_AARCH64:
		names = [4]string{"pc", "sp", "x29", "x30"}
	default:
		return regs{}, fmt.Errorf("stackcap: machine %v: %w", m, ErrUnsupported)
	}
	var offs [4]int16
	for i, n := range names {
		if n == "" {
			continue
		}
		o, err := argread.PtRegs(m, n)
		if err != nil {
			return regs{}, fmt.Errorf("stackcap: %w", err)
		}
		offs[i] = o
	}
	return regs{ip: offs[0], sp: offs[1], fp: offs[2], lr: offs[3], hasLR: names[3] != ""}, nil
}

func checkRegs(ctx, dst asm.Register) error {
	for _, r := range []asm.Register{ctx, dst} {
		if r < asm.R6 || r > asm.R9 {
			return fmt.Errorf("stackcap: register %v is not one of R6..R9", r)
		}
	}
	if ctx == dst {
		return errors.New("stackcap: ctx and dst are the same register")
	}
	return nil
}

// FramesOptions configures EmitFrames and EmitStackID. The zero value
// walks DefaultMaxFrames frames at a site that is not a function's entry.
type FramesOptions struct {
	// MaxFrames is the number of frames the kernel may write: 1 to
	// MaxFrames; 0 means DefaultMaxFrames. For EmitStackID it must equal
	// the stack map's value size divided by 8.
	MaxFrames int
	// Entry says the site is a function's first instruction (a symbol's
	// start): the return address at the stack pointer is read too, so the
	// immediate caller is not lost (see docs/architecture.md, "Stacks").
	Entry bool
}

func (o *FramesOptions) maxFrames() (int, error) {
	if o == nil || o.MaxFrames == 0 {
		return DefaultMaxFrames, nil
	}
	if o.MaxFrames < 0 || o.MaxFrames > MaxFrames {
		return 0, fmt.Errorf("stackcap: FramesOptions.MaxFrames %d is not in 1..%d", o.MaxFrames, MaxFrames)
	}
	return o.MaxFrames, nil
}

// FramesSize is the number of bytes EmitFrames writes for opts.
func FramesSize(opts *FramesOptions) int {
	n, err := opts.maxFrames()
	if err != nil {
		return 0
	}
	return framesHeader + 8*n
}

// EmitFrames returns instructions that store the frame-pointer walk of the
// user stack at dst+off in the frames layout (docs/architecture.md, "Stacks"): ctx
// holds the uprobe's context, dst a pointer to FramesSize(opts) writable
// bytes (a map value or a ring buffer record). R0..R5 are clobbered.
func EmitFrames(m elf.Machine, ctx, dst asm.Register, off int16, opts *FramesOptions, prefix string) (asm.Instructions, error) {
	r, err := machineRegs(m)
	if err != nil {
		return nil, err
	}
	if err := checkRegs(ctx, dst); err != nil {
		return nil, err
	}
	n, err := opts.maxFrames()
	if err != nil {
		return nil, err
	}
	if int(off) < 0 || int(off)+framesHeader+8*n > 1<<15-1 {
		return nil, fmt.Errorf("stackcap: offset %d: frames end past 32 KiB", off)
	}
	done := prefix + "_frames_done"
	insns := asm.Instructions{
		storeImm64(dst, off, 0),
		storeImm64(dst, off+8, 0),
	}
	if opts != nil && opts.Entry {
		// The caller's return address, read before the walk so a
		// failed walk still says where the function was called from.
		insns = append(insns, emitCaller(r, ctx, dst, off+8)...)
		insns = append(insns,
			asm.JNE.Imm(asm.R0, 0, prefix+"_frames_walk"),
			asm.StoreImm(dst, off+4, FlagCaller, asm.Word),
		)
	}
	insns = append(insns,
		asm.Mov.Reg(asm.R1, ctx).WithSymbol(prefix+"_frames_walk"),
		asm.Mov.Reg(asm.R2, dst),
		asm.Add.Imm(asm.R2, int32(off)+framesHeader),
		asm.Mov.Imm(asm.R3, int32(8*n)),
		asm.Mov.Imm(asm.R4, bpfUserStack),
		asm.FnGetStack.Call(),
		asm.JSGE.Imm(asm.R0, 0, prefix+"_frames_ok"),
		asm.LoadMem(asm.R1, dst, off+4, asm.Word),
		asm.Or.Imm(asm.R1, FlagStackErr),
		asm.StoreMem(dst, off+4, asm.R1, asm.Word),
		asm.Ja.Label(done),
		asm.RSh.Imm(asm.R0, 3).WithSymbol(prefix+"_frames_ok"),
		asm.StoreMem(dst, off, asm.R0, asm.Word),
		asm.Mov.Imm(asm.R0, 0).WithSymbol(done),
	)
	return insns, nil
}

// DecodeFrames returns the instruction pointers of a frames record (b
// starts at the record), innermost first, with the caller word merged
// after the first as docs/architecture.md says. A record shorter
// than its count claims gives an error.
func DecodeFrames(b []byte) ([]uint64, error) {
	if len(b) < framesHeader {
		return nil, fmt.Errorf("stackcap: frames record of %d bytes, want at least %d", len(b), framesHeader)
	}
	ne := binary.NativeEndian
	n := int(ne.Uint32(b))
	flags := ne.Uint32(b[4:])
	if n > (len(b)-framesHeader)/8 {
		return nil, fmt.Errorf("stackcap: frames record of %d bytes holds fewer than its %d frames", len(b), n)
	}
	pcs := make([]uint64, 0, n+1)
	for i := range n {
		pcs = append(pcs, ne.Uint64(b[framesHeader+8*i:]))
	}
	if flags&FlagCaller != 0 {
		pcs = MergeCaller(pcs, ne.Uint64(b[8:]))
	}
	return pcs, nil
}

// MergeCaller puts caller, the return address read at the stack pointer at
// a function's entry, after the first of pcs, unless it is 0, pcs is
// empty, or the kernel's walk already has it second. It may modify pcs.
func MergeCaller(pcs []uint64, caller uint64) []uint64 {
	if caller == 0 || len(pcs) == 0 || (len(pcs) > 1 && pcs[1] == caller) {
		return pcs
	}
	pcs = append(pcs, 0)
	copy(pcs[2:], pcs[1:])
	pcs[1] = caller
	return pcs
}

// StackMapSpec returns the spec of a BPF_MAP_TYPE_STACK_TRACE map for
// EmitStackID: entries stacks of maxFrames frames (0: DefaultMaxFrames).
func StackMapSpec(name string, entries, maxFrames int) *ebpf.MapSpec {
	if maxFrames == 0 {
		maxFrames = DefaultMaxFrames
	}
	return &ebpf.MapSpec{Name: name, Type: ebpf.StackTrace, KeySize: 4, ValueSize: uint32(8 * maxFrames), MaxEntries: uint32(entries)}
}

// EmitStackID returns instructions that store at dst+off the id of the
// user stack in the stack map named stackMap (bpf_get_stackid with
// BPF_F_USER_STACK; a negative id is the helper's error, e.g. -EEXIST for
// a hash collision or -ENOMEM for a full map) and, with opts.Entry, the
// caller word (0 when unreadable or not Entry): StackIDSize bytes, usable
// as (part of) a map key. The map reference is resolved by the caller's
// CollectionSpec. R0..R5 are clobbered.
func EmitStackID(m elf.Machine, ctx, dst asm.Register, off int16, stackMap string, opts *FramesOptions, prefix string) (asm.Instructions, error) {
	r, err := machineRegs(m)
	if err != nil {
		return nil, err
	}
	if err := checkRegs(ctx, dst); err != nil {
		return nil, err
	}
	if _, err := opts.maxFrames(); err != nil {
		return nil, err
	}
	if int(off) < 0 || int(off)+StackIDSize > 1<<15-1 {
		return nil, fmt.Errorf("stackcap: offset %d: stack id ends past 32 KiB", off)
	}
	insns := asm.Instructions{storeImm64(dst, off+8, 0)}
	if opts != nil && opts.Entry {
		insns = append(insns, emitCaller(r, ctx, dst, off+8)...)
	}
	insns = append(insns,
		asm.Mov.Reg(asm.R1, ctx),
		asm.LoadMapPtr(asm.R2, 0).WithReference(stackMap),
		asm.Mov.Imm(asm.R3, bpfUserStack),
		asm.FnGetStackid.Call(),
		asm.StoreMem(dst, off, asm.R0, asm.DWord),
	)
	return insns, nil
}

// StackID is a decoded stack id record.
type StackID struct {
	ID     int64  // the stack map key; negative: the helper's error
	Caller uint64 // the caller word at a function's entry, 0 if none
}

// DecodeStackID decodes a stack id record.
func DecodeStackID(b []byte) (StackID, error) {
	if len(b) < StackIDSize {
		return StackID{}, fmt.Errorf("stackcap: stack id record of %d bytes, want %d", len(b), StackIDSize)
	}
	ne := binary.NativeEndian
	return StackID{ID: int64(ne.Uint64(b)), Caller: ne.Uint64(b[8:])}, nil
}

// LookupStack returns the frames of stack id in a stack map made from
// StackMapSpec (EmitStackID's) or a frames map made from FramesMapSpec
// (EmitWalkID's), innermost first, with the caller merged (MergeCaller).
// The map is not modified.
func LookupStack(stacks *ebpf.Map, id StackID) ([]uint64, error) {
	if id.ID < 0 || id.ID > 1<<32-1 && stacks.Type() != ebpf.Hash {
		return nil, fmt.Errorf("stackcap: stack id %d is an error", id.ID)
	}
	b := make([]byte, stacks.ValueSize())
	var key any = uint32(id.ID)
	if stacks.Type() == ebpf.Hash {
		key = uint64(id.ID) // a frames map (FramesMapSpec)
	}
	if err := stacks.Lookup(key, &b); err != nil {
		return nil, fmt.Errorf("stackcap: stack %d: %w", id.ID, err)
	}
	ne := binary.NativeEndian
	var pcs []uint64
	for i := 0; i+8 <= len(b); i += 8 {
		pc := ne.Uint64(b[i:])
		if pc == 0 {
			break
		}
		pcs = append(pcs, pc)
	}
	return MergeCaller(pcs, id.Caller), nil
}

// emitCaller stores the return address at a function's entry at dst+at
// and leaves 0 in R0 when it is there: on x86-64 the word at the stack
// pointer (read with bpf_probe_read_user, which zeroes dst+at and returns
// an error if it cannot), on arm64 the link register x30.
func emitCaller(r regs, ctx, dst asm.Register, at int16) asm.Instructions {
	if r.hasLR {
		return asm.Instructions{
			asm.LoadMem(asm.R1, ctx, r.lr, asm.DWord),
			asm.StoreMem(dst, at, asm.R1, asm.DWord),
			asm.Mov.Imm(asm.R0, 0),
		}
	}
	return asm.Instructions{
		asm.Mov.Reg(asm.R1, dst),
		asm.Add.Imm(asm.R1, int32(at)),
		asm.Mov.Imm(asm.R2, 8),
		asm.LoadMem(asm.R3, ctx, r.sp, asm.DWord),
		asm.FnProbeReadUser.Call(),
	}
}

// storeImm64 stores a sign-extended 32-bit immediate in 8 bytes (BPF_ST
// with BPF_DW, which asm.StoreImm refuses to build).
func storeImm64(dst asm.Register, off int16, v int32) asm.Instruction {
	return asm.Instruction{OpCode: asm.StoreImmOp(asm.DWord), Dst: dst, Offset: off, Constant: int64(v)}
}
