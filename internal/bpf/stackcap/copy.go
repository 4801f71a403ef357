package stackcap

import (
	"debug/elf"
	"encoding/binary"
	"fmt"

	"github.com/cilium/ebpf/asm"
)

// CopyOptions configures EmitCopy. The zero value copies DefaultCopySize
// bytes.
type CopyOptions struct {
	// Size is the number of stack bytes copied, counted from the stack
	// pointer rounded down to 4 KiB: a multiple of 4096 up to MaxCopySize,
	// or a power of two from 512 to 2048 (copied from sp rounded down to
	// Size); 0 means DefaultCopySize.
	Size int
}

func (o *CopyOptions) size() (int, error) {
	if o == nil || o.Size == 0 {
		return DefaultCopySize, nil
	}
	s := o.Size
	switch {
	case s >= chunk && s%chunk == 0 && s <= MaxCopySize:
	case s >= 512 && s < chunk && s&(s-1) == 0:
	default:
		return 0, fmt.Errorf("stackcap: CopyOptions.Size %d is not a multiple of 4096 up to %d nor a power of two from 512 to 2048", s, MaxCopySize)
	}
	return s, nil
}

// CopySize is the number of bytes EmitCopy writes for opts (0 for invalid
// options).
func CopySize(opts *CopyOptions) int {
	s, err := opts.size()
	if err != nil {
		return 0
	}
	return copyHeader + s
}

// EmitCopy returns instructions that store the registers unwinding needs
// and a copy of the top of the user stack at dst+off, in the copy layout
// (docs/architecture.md, "Stacks"): ctx holds the uprobe's context, dst a pointer
// to CopySize(opts) writable bytes. R0..R5 are clobbered.
func EmitCopy(m elf.Machine, ctx, dst asm.Register, off int16, opts *CopyOptions, prefix string) (asm.Instructions, error) {
	r, err := machineRegs(m)
	if err != nil {
		return nil, err
	}
	if err := checkRegs(ctx, dst); err != nil {
		return nil, err
	}
	size, err := opts.size()
	if err != nil {
		return nil, err
	}
	if int(off) < 0 || int(off)+copyHeader+size > 1<<15-1 {
		return nil, fmt.Errorf("stackcap: offset %d: stack copy ends past 32 KiB", off)
	}
	step := min(size, chunk)
	done := prefix + "_copy_done"
	insns := asm.Instructions{
		asm.LoadMem(asm.R1, ctx, r.ip, asm.DWord),
		asm.StoreMem(dst, off, asm.R1, asm.DWord),
		asm.LoadMem(asm.R1, ctx, r.fp, asm.DWord),
		asm.StoreMem(dst, off+16, asm.R1, asm.DWord),
		storeImm64(dst, off+24, 0),
	}
	if r.hasLR {
		insns = append(insns,
			asm.LoadMem(asm.R1, ctx, r.lr, asm.DWord),
			asm.StoreMem(dst, off+24, asm.R1, asm.DWord),
		)
	}
	insns = append(insns,
		asm.LoadMem(asm.R1, ctx, r.sp, asm.DWord),
		asm.StoreMem(dst, off+8, asm.R1, asm.DWord),
		asm.And.Imm(asm.R1, int32(-step)),
		asm.StoreMem(dst, off+32, asm.R1, asm.DWord),
		asm.StoreImm(dst, off+40, 0, asm.Word),
		asm.StoreImm(dst, off+44, int64(size), asm.Word),
	)
	for i := 0; i < size/step; i++ {
		at := int32(off) + copyHeader + int32(i*step)
		insns = append(insns,
			asm.Mov.Reg(asm.R1, dst),
			asm.Add.Imm(asm.R1, at),
			asm.Mov.Imm(asm.R2, int32(step)),
			asm.LoadMem(asm.R3, dst, off+32, asm.DWord),
			asm.Add.Imm(asm.R3, int32(i*step)),
			asm.FnProbeReadUser.Call(),
			asm.JNE.Imm(asm.R0, 0, done),
			asm.StoreImm(dst, off+40, int64((i+1)*step), asm.Word),
		)
	}
	insns = append(insns, asm.Mov.Imm(asm.R0, 0).WithSymbol(done))
	return insns, nil
}

// Copy is a decoded stack copy record. Stack aliases the record's bytes.
type Copy struct {
	IP, SP, FP, LR uint64
	Base           uint64 // address of Stack[0]
	Stack          []byte // the bytes copied, len as the record says
}

// DecodeCopy decodes a copy record (b starts at the record). A length
// beyond the record's capacity or its bytes gives an error.
func DecodeCopy(b []byte) (Copy, error) {
	if len(b) < copyHeader {
		return Copy{}, fmt.Errorf("stackcap: copy record of %d bytes, want at least %d", len(b), copyHeader)
	}
	ne := binary.NativeEndian
	c := Copy{IP: ne.Uint64(b), SP: ne.Uint64(b[8:]), FP: ne.Uint64(b[16:]), LR: ne.Uint64(b[24:]), Base: ne.Uint64(b[32:])}
	n, size := ne.Uint32(b[40:]), ne.Uint32(b[44:])
	if n > size || uint64(n) > uint64(len(b)-copyHeader) {
		return Copy{}, fmt.Errorf("stackcap: copy record of %d bytes claims %d of %d stack bytes", len(b), n, size)
	}
	c.Stack = b[copyHeader : copyHeader+int(n)]
	return c, nil
}
