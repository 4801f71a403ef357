package btgen

import (
	"debug/elf"
	"time"

	"github.com/cilium/ebpf/asm"

	"github.com/usdtkit/usdtkit/internal/bpf/argread"
	"github.com/usdtkit/usdtkit/internal/lang/btlang"
)

// Profile blocks (profile:hz:N, profile:s|ms|us:N).
//
// A profile block is a program of type BPF_PROG_TYPE_PERF_EVENT that the
// runner attaches to a software CPU clock event on every CPU (Block.Freq
// samples a second, or one every Block.Period), as bpftrace does. Its
// context is struct bpf_perf_event_data, whose registers are those the
// timer interrupted: in the kernel when the task was in a system call.
// The user stack is the task's all the same: a block that reads ustack
// starts from the task's user registers (bpf_task_pt_regs of
// bpf_get_current_task_btf, Linux 5.15+), which equal the context's when
// the sample is in user mode, and keeps them in R6, where the walk in the
// program and the stack copy read their registers; the context itself
// waits in a stack slot for the kernel's stack helpers (bpf_get_stackid,
// bpf_get_stack), which the generator gives it around their call
// (withContext). A task without user registers (a kernel thread, the idle
// task: instruction pointer 0) has an empty stack, stack id 0, whose
// frames the map does not hold.
//
// Samples are of every process, unless the runner restricts them: the
// program first looks the current process (tgid) up in MapProfilePIDs and
// skips the sample when neither it nor key 0 (every process) is there.
// The runner writes key 0 when it traces every process, else the
// processes it traces (-p, -c).

// MapProfilePIDs is the hash of processes profile blocks sample (u32 tgid
// → u32 1); key 0 means every process. The runner fills it before it
// attaches.
const MapProfilePIDs = "profpids"

// maxProfilePIDs bounds MapProfilePIDs.
const maxProfilePIDs = 1024

// profileRate returns a profile probe's sampling: freq samples a second
// (hz), or a period.
func profileRate(p *btlang.Probe) (freq uint64, period time.Duration, err error) {
	var unit time.Duration
	switch p.Unit {
	case "hz":
		if p.Period == 0 || p.Period > 1_000_000 {
			return 0, 0, &btlang.Error{Pos: p.At, Msg: "a profile rate must be from 1 to 1000000 hz"}
		}
		return p.Period, 0, nil
	case "s":
		unit = time.Second
	case "ms":
		unit = time.Millisecond
	case "us":
		unit = time.Microsecond
	default:
		return 0, 0, &btlang.Error{Pos: p.At, Msg: "profile unit " + p.Unit + " is not hz, s, ms or us"}
	}
	if p.Period == 0 || p.Period > uint64(24*time.Hour/unit) {
		return 0, 0, &btlang.Error{Pos: p.At, Msg: "a profile period must be from 1 to a day"}
	}
	return 0, time.Duration(p.Period) * unit, nil
}

// profilePrologue emits what a profile block runs before its predicate:
// the process filter, the probe's id and, for a block that reads ustack,
// the task's user registers in R6 (the context saved in ctxSlot).
func (g *gen) profilePrologue() error {
	b := g.block
	g.emit(
		asm.FnGetCurrentPidTgid.Call(),
		asm.RSh.Imm(asm.R0, 32),
		asm.StoreMem(asm.R10, -4, asm.R0, asm.Word),
	)
	g.lookupStored(MapProfilePIDs)
	g.emit(asm.JNE.Imm(asm.R0, 0, "profile_pid"))
	g.lookupAt(MapProfilePIDs, 0)
	g.emit(asm.JEq.Imm(asm.R0, 0, "exit"))
	g.label("profile_pid")
	g.emit(storeImm64(asm.R7, probeOff, int32(g.probeID(b.Probes[0].String()))))
	if g.entryOff >= 0 {
		ip, err := argread.PtRegs(elf.EM_X86_64, "rip")
		if err != nil {
			return &btlang.Error{Pos: b.At, Msg: err.Error()}
		}
		g.ptRegsIP = ip
		g.ctxSlot = g.push()
		g.emit(
			storeImm64(asm.R7, int16(g.entryOff), siteBody),
			asm.StoreMem(asm.R10, g.ctxSlot, asm.R6, asm.DWord),
			asm.FnGetCurrentTaskBtf.Call(),
			asm.Mov.Reg(asm.R1, asm.R0),
			asm.FnTaskPtRegs.Call(),
			asm.Mov.Reg(asm.R6, asm.R0),
		)
	}
	g.emit(asm.Ja.Label("body"))
	return nil
}

// withContext runs emit, which calls a kernel stack helper with R6 as
// its context, with the context in R6: in a profile block R6 holds the
// task's user registers, which are put back after.
func (g *gen) withContext(emit func()) {
	if g.special != btlang.ProbeProfile {
		emit()
		return
	}
	regs := g.push()
	g.emit(
		asm.StoreMem(asm.R10, regs, asm.R6, asm.DWord),
		asm.LoadMem(asm.R6, asm.R10, g.ctxSlot, asm.DWord),
	)
	emit()
	g.emit(asm.LoadMem(asm.R6, asm.R10, regs, asm.DWord))
	g.pop()
}

// noUserStack emits, in a profile block, the test for a task without
// user registers (instruction pointer 0: a kernel thread, the idle task),
// whose stack key at scratch off is stack id 0 and no caller; it returns
// the label to place after the stack's capture, "" outside profile blocks.
func (g *gen) noUserStack(off int) string {
	if g.special != btlang.ProbeProfile {
		return ""
	}
	r, done := g.newLabel("user_regs"), g.newLabel("stack_none")
	g.emit(
		asm.LoadMem(asm.R0, asm.R6, g.ptRegsIP, asm.DWord),
		asm.JNE.Imm(asm.R0, 0, r),
		storeImm64(asm.R7, int16(off), 0),
		storeImm64(asm.R7, int16(off+8), 0),
		asm.Ja.Label(done),
	)
	g.label(r)
	g.emit(nop())
	return done
}
