package btgen

import (
	"github.com/cilium/ebpf/asm"
	"golang.org/x/sys/unix"
)

// Sleepable string reads.
//
// bpf_probe_read_user_str runs with page faults disabled: a string in a
// page the process has not touched yet (a file page never read, an
// anonymous page never written, a page swapped out) reads as a fault, an
// empty string, as in bpftrace. The kfunc bpf_copy_from_user_str (Linux
// 6.12+, KF_SLEEPABLE) faults the page in, but only a sleepable program
// may call it. With Options.CopyStr, a block that reads user strings and
// no ustack (stack trace maps are not allowed in sleepable programs) is
// loaded with BPF_F_SLEEPABLE; it reads them as before and, where that
// faulted, again with the kfunc, and Go strings' bytes (args.NAME) with
// the helper bpf_copy_from_user (Linux 5.10+, sleepable programs only).
//
// The per-CPU scratch value stays the program's while it sleeps: the
// kernel runs uprobe_multi programs, sleepable or not, between
// migrate_disable and migrate_enable (kernel/trace/bpf_trace.c,
// uprobe_prog_run; classic uprobes likewise, bpf_prog_run_array_uprobe),
// so the program resumes on its CPU. While it sleeps, other tasks run on
// that CPU: their hits find the scratch value busy and are counted in
// lost[LostNested], as for a preempted program (see docs/architecture.md,
// "Code generation").

// copyStrPadZeros is BPF_F_PAD_ZEROS: the kfunc zeroes the buffer after
// the string, or all of it on a fault, as bpf_probe_read_user_str does.
// Without it a fault leaves the bytes read so far.
const copyStrPadZeros = 1

// readUserStr emits the read of the user string at R3 into the buffer at
// R1 of R2 bytes: at most R2-1 bytes and a NUL, the rest of the buffer
// zeroed, all of it on a fault. R0 is then the bytes written with the
// NUL, or a negative errno, sign-extended to 64 bits.
func (g *gen) readUserStr() {
	g.readFaulting(asm.FnProbeReadUserStr.Call(),
		asm.Mov.Imm(asm.R4, copyStrPadZeros),
		asm.Instruction{
			OpCode:   asm.OpCode(asm.JumpClass).SetJumpOp(asm.Call),
			Src:      asm.PseudoKfuncCall,
			Constant: int64(g.opts.CopyStr),
		},
		// The kfunc returns an int: only the low 32 bits of R0 are set.
		asm.LSh.Imm(asm.R0, 32),
		asm.ArSh.Imm(asm.R0, 32),
	)
}

// readUser emits the read of R2 bytes of user memory at R3 into R1 (a Go
// string's bytes), zeroing the buffer on a fault, with bpf_copy_from_user
// as the read that faults pages in.
func (g *gen) readUser() {
	g.readFaulting(asm.FnProbeReadUser.Call(), asm.FnCopyFromUser.Call())
}

// readFaulting emits fast, a helper call reading user memory with
// arguments R1, R2, R3 that cannot fault pages in, and in a sleepable
// block, when fast returned a negative errno, slow with the same
// arguments, which can. fast first: the helper is cheaper than the kfunc
// (BenchmarkStrRead), and a page not present is rare.
func (g *gen) readFaulting(fast asm.Instruction, slow ...asm.Instruction) {
	if !g.sleepable {
		g.couldSleep = g.couldSleep || (g.entryOff < 0 && g.special == 0)
		g.emit(fast)
		return
	}
	g.copied = true
	dst, size, src := g.push(), g.push(), g.push()
	defer func() { g.pop(); g.pop(); g.pop() }()
	done := g.newLabel("userread")
	g.emit(
		asm.StoreMem(asm.R10, dst, asm.R1, asm.DWord),
		asm.StoreMem(asm.R10, size, asm.R2, asm.DWord),
		asm.StoreMem(asm.R10, src, asm.R3, asm.DWord),
		fast,
		asm.JSGE.Imm(asm.R0, 0, done),
		asm.LoadMem(asm.R1, asm.R10, dst, asm.DWord),
		asm.LoadMem(asm.R2, asm.R10, size, asm.DWord),
		asm.LoadMem(asm.R3, asm.R10, src, asm.DWord),
	)
	g.emit(slow...)
	g.label(done)
	g.emit(nop())
}

// programFlags are the flags of a block's program.
func (g *gen) programFlags() uint32 {
	if g.copied {
		return unix.BPF_F_SLEEPABLE
	}
	return 0
}
