package features

import (
	"errors"
	"fmt"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/btf"
	"golang.org/x/sys/unix"
)

// CopyStrKfunc is the kfunc sleepable programs call to read a user string
// that may sit in a page not present yet: int bpf_copy_from_user_str(void
// *dst, u32 dst__sz, const void __user *src, u64 flags), Linux 6.12+
// (kernel/bpf/helpers.c, KF_SLEEPABLE). It copies at most dst__sz-1 bytes
// and a NUL, faulting pages in, and returns the bytes written with the NUL
// or a negative errno; with CopyStrPadZeros it zeroes dst after the string,
// or all of it on an error.
const (
	CopyStrKfunc    = "bpf_copy_from_user_str"
	CopyStrPadZeros = 1 // BPF_F_PAD_ZEROS
)

// SleepableCopyStr reports whether sleepable uprobe_multi programs may
// call bpf_copy_from_user_str (Linux 6.12+), and returns the kfunc's BTF
// type id in vmlinux, the immediate of its call instruction (src
// asm.PseudoKfuncCall, offset 0). It loads such a program (type Kprobe,
// attach type AttachTraceUprobeMulti, flag BPF_F_SLEEPABLE, a per-CPU
// array lookup, a ring buffer reservation and the kfunc call). It does
// not attach it: attaching and closing a link
// costs tens of milliseconds that every trace reading strings would pay
// at its start (package trace's TestStringInColdPage attaches such
// programs with uprobe_multi and classic links). Finding the id parses
// vmlinux's BTF. The error wraps ebpf.ErrNotSupported
// when the kernel cannot, and os.ErrPermission when this process may not
// load BPF programs. The result is cached.
func SleepableCopyStr() (uint32, error) {
	id, _, err := copyStrProbe.get()
	return id, err
}

func probeCopyStr() (uint32, string, error) {
	if err := requireBPF(); err != nil {
		return 0, "", err
	}
	kernel, err := btf.LoadKernelSpec()
	if err != nil {
		return 0, "", fmt.Errorf("%s: kernel BTF: %w", CopyStrKfunc, err)
	}
	var fn *btf.Func
	if err := kernel.TypeByName(CopyStrKfunc, &fn); err != nil {
		if errors.Is(err, btf.ErrNotFound) {
			err = fmt.Errorf("%w: %w (Linux 6.12+)", ebpf.ErrNotSupported, err)
		}
		return 0, "", fmt.Errorf("%s: %w", CopyStrKfunc, err)
	}
	tid, err := kernel.TypeID(fn)
	if err != nil {
		return 0, "", fmt.Errorf("%s: %w", CopyStrKfunc, err)
	}
	id := uint32(tid)
	prog, err := copyStrProgram(id, unix.BPF_F_SLEEPABLE)
	if err != nil {
		return 0, "", err
	}
	prog.Close()
	return id, fmt.Sprintf("%s is BTF type %d; a sleepable uprobe_multi program calling it loads", CopyStrKfunc, id), nil
}

// copyStrCall is the call instruction of bpf_copy_from_user_str whose BTF
// type id SleepableCopyStr returned.
func copyStrCall(id uint32) asm.Instruction {
	return asm.Instruction{
		OpCode:   asm.OpCode(asm.JumpClass).SetJumpOp(asm.Call),
		Src:      asm.PseudoKfuncCall,
		Constant: int64(id),
	}
}

// copyStrProgram loads what a sleepable block of btgen uses: a per-CPU
// array lookup, a ring buffer record filled by the kfunc; flags are the
// program's (unix.BPF_F_SLEEPABLE).
func copyStrProgram(id uint32, flags uint32) (*ebpf.Program, error) {
	scratch, err := ebpf.NewMap(&ebpf.MapSpec{Type: ebpf.PerCPUArray, KeySize: 4, ValueSize: 8, MaxEntries: 1})
	if err != nil {
		return nil, fmt.Errorf("sleepable uprobes: per-CPU array: %w", err)
	}
	defer scratch.Close()
	ring, err := ebpf.NewMap(&ebpf.MapSpec{Type: ebpf.RingBuf, MaxEntries: 4096})
	if err != nil {
		return nil, fmt.Errorf("sleepable uprobes: ring buffer: %w", err)
	}
	defer ring.Close()
	prog, err := ebpf.NewProgram(&ebpf.ProgramSpec{
		Name:       "usdtkit_copystr",
		Type:       ebpf.Kprobe,
		AttachType: ebpf.AttachTraceUprobeMulti,
		Flags:      flags,
		License:    "GPL",
		Instructions: asm.Instructions{
			asm.StoreImm(asm.R10, -4, 0, asm.Word),
			asm.LoadMapPtr(asm.R1, scratch.FD()),
			asm.Mov.Reg(asm.R2, asm.R10),
			asm.Add.Imm(asm.R2, -4),
			asm.FnMapLookupElem.Call(),
			asm.JEq.Imm(asm.R0, 0, "out"),
			asm.LoadMapPtr(asm.R1, ring.FD()),
			asm.Mov.Imm(asm.R2, 16),
			asm.Mov.Imm(asm.R3, 0),
			asm.FnRingbufReserve.Call(),
			asm.JEq.Imm(asm.R0, 0, "out"),
			asm.Mov.Reg(asm.R6, asm.R0),
			asm.Mov.Reg(asm.R1, asm.R6),
			asm.Mov.Imm(asm.R2, 16),
			asm.Mov.Imm(asm.R3, 0),
			asm.Mov.Imm(asm.R4, CopyStrPadZeros),
			copyStrCall(id),
			asm.Mov.Reg(asm.R1, asm.R6),
			asm.Mov.Imm(asm.R2, 0),
			asm.FnRingbufDiscard.Call(),
			asm.Mov.Imm(asm.R0, 0).WithSymbol("out"),
			asm.Return(),
		},
	})
	if err != nil {
		var ve *ebpf.VerifierError
		if errors.As(err, &ve) {
			// The last lines say why (e.g. "program must be sleepable to
			// call sleepable kfunc").
			return nil, fmt.Errorf("sleepable program calling %s: %w: %w", CopyStrKfunc, ebpf.ErrNotSupported, err)
		}
		if errors.Is(err, unix.EINVAL) {
			return nil, fmt.Errorf("sleepable program calling %s: %w: %w", CopyStrKfunc, ebpf.ErrNotSupported, err)
		}
		return nil, fmt.Errorf("sleepable program calling %s: %w", CopyStrKfunc, err)
	}
	return prog, nil
}
