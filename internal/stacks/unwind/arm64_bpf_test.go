package unwind_test

import (
	"debug/elf"
	"encoding/binary"
	"os"
	"slices"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"golang.org/x/sys/unix"

	"github.com/usdtkit/usdtkit/internal/bpf/stackcap"
	"github.com/usdtkit/usdtkit/internal/bpf/stackcap/stacktest"
	"github.com/usdtkit/usdtkit/internal/stacks/unwind"
	"github.com/usdtkit/usdtkit/internal/testutil"
)

// arm64RegsSize is the size of arm64's struct user_pt_regs: x0..x30, sp,
// pc, pstate.
const arm64RegsSize = 34 * 8

// runARM64Walk runs the walk stackcap.EmitCFIWalkID emits for arm64 in
// this x86-64 kernel, on a stack and registers arm64 code recorded: the
// program (a raw tracepoint program, run with BPF_PROG_TEST_RUN in this
// process) reads its registers from a map holding an arm64 user_pt_regs
// instead of its context; the recorded stack is mapped at its own
// addresses in this process, where the walk's bpf_probe_read_user reads
// it, and the tables of the recorded mappings are this process's in the
// maps of a BPFTables (none with noTables: every step by frame pointer).
// It returns the frames and why the walk ended.
func runARM64Walk(t *testing.T, rec arm64Record, u *unwind.Unwinder, noTables bool) ([]uint64, uint64) {
	t.Helper()
	testutil.RequireBPF(t)
	sp := unwind.NewSpace(os.Getpid(), rec.maps)
	tabs, err := unwind.NewBPFTables(u, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tabs.Close() })
	if !noTables {
		if err := tabs.AddProcess(sp); err != nil {
			t.Fatal(err)
		}
	}

	// The stack, at its addresses: whole pages from SP's.
	page := uint64(os.Getpagesize())
	lo := rec.stack.Base &^ (page - 1)
	hi := (rec.stack.Base + uint64(len(rec.stack.Data)) + page - 1) &^ (page - 1)
	addr, _, errno := unix.Syscall6(unix.SYS_MMAP, uintptr(lo), uintptr(hi-lo), unix.PROT_READ|unix.PROT_WRITE,
		unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_FIXED_NOREPLACE, ^uintptr(0), 0)
	if errno != 0 || uint64(addr) != lo {
		t.Fatalf("mapping the recorded stack at %#x..%#x in this process: %v (at %#x)", lo, hi, errno, addr)
	}
	t.Cleanup(func() { unix.Syscall(unix.SYS_MUNMAP, addr, uintptr(hi-lo), 0) })
	mem, err := os.OpenFile("/proc/self/mem", os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, err = mem.WriteAt(rec.stack.Data, int64(rec.stack.Base))
	if cerr := mem.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatalf("writing the recorded stack: %v", err)
	}

	// struct user_pt_regs (arch/arm64/include/uapi/asm/ptrace.h, the
	// start of the pt_regs a uprobe's program gets): regs[31], sp, pc,
	// pstate.
	regs := make([]byte, arm64RegsSize)
	for i, v := range map[int]uint64{29: rec.regs.FP, 30: rec.regs.LR, 31: rec.regs.SP, 32: rec.regs.PC} {
		binary.NativeEndian.PutUint64(regs[8*i:], v)
	}

	opts := &stackcap.CFIWalkOptions{Entry: rec.regs.Entry, Scratch: stackcap.StackIDSize, Stack: -32}
	coll := loadARM64Walk(t, opts, tabs.Maps())
	if err := coll.Maps["regs"].Put(uint32(0), regs); err != nil {
		t.Fatal(err)
	}
	if _, err := coll.Programs["walk"].Run(&ebpf.RunOptions{}); err != nil {
		t.Fatal(err)
	}
	var scratch []byte
	if err := coll.Maps["scratch"].Lookup(uint32(0), &scratch); err != nil {
		t.Fatal(err)
	}
	id, err := stackcap.DecodeStackID(scratch)
	if err != nil {
		t.Fatal(err)
	}
	var value []byte
	if err := coll.Maps["frames"].Lookup(uint64(id.ID), &value); err != nil {
		t.Fatalf("frames of id %#x: %v", id.ID, err)
	}
	var frames []uint64
	for i := 0; i+8 <= len(value); i += 8 {
		pc := binary.NativeEndian.Uint64(value[i:])
		if pc == 0 {
			break
		}
		frames = append(frames, pc)
	}
	stop := binary.NativeEndian.Uint64(scratch[stackcap.StackIDSize+stackcap.CFIStopOffset:])
	return frames, stop
}

// unwindHere unwinds rec with UnwindTables and an Unwinder of opts, its
// mappings taken as this process's (where runARM64Walk maps its stack).
func unwindHere(t *testing.T, rec arm64Record, opts *unwind.Options) (*unwind.Unwinder, *unwind.Space, unwind.Result) {
	t.Helper()
	u, err := unwind.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	sp := unwind.NewSpace(os.Getpid(), rec.maps)
	res, err := u.UnwindTables(sp, elf.EM_AARCH64, rec.regs, rec.stack)
	if err != nil {
		t.Fatal(err)
	}
	return u, sp, res
}

// TestBPFWalkARM64 runs the program's walk for arm64 on the stacks
// TestUnwindARM64 unwinds (arm64chain.c under qemu-user, with and without
// pointer authentication, levels and sort): the program finds the frames
// UnwindTables finds, to _start, and ends at the outermost row.
func TestBPFWalkARM64(t *testing.T) {
	forEachARM64Chain(t, func(t *testing.T, _, _ string, rec arm64Record) {
		u, sp, want := unwindHere(t, rec, &unwind.Options{Open: openHost})
		wantPCs := framePCs(want.Frames)
		have, stop := runARM64Walk(t, rec, u, false)
		n := &arm64Namer{sp: sp, u: u, syms: map[string][]elf.Symbol{}}
		var frames []unwind.Frame
		for _, pc := range have {
			frames = append(frames, unwind.Frame{PC: pc})
		}
		names, _ := n.names(t, frames)
		t.Logf("program: %v, stop %d", names, stop)
		if !slices.Equal(have, wantPCs) || want.Stop != unwind.StopEnd || stop != stackcap.CFIStopEnd {
			t.Fatalf("program: %x, stop %d\ntables: %x, stop %v (%v)", have, stop, wantPCs, want.Stop, want.Err)
		}
		if len(names) < 2 || names[1] != "leaf" {
			t.Errorf("have %v, want capture, leaf, …", names)
		}
	})
}

// TestBPFWalkARM64FramePointers runs the program's arm64 walk without
// tables, every step by frame pointer, on arm64chain.c built with frame
// pointers: at capture's entry the return address is in the link
// register, then the frame records {x29, x30} at x29 lead to main and
// through libc's start to _start. Its frames equal UnwindTables' with
// Options.NoCFI.
func TestBPFWalkARM64FramePointers(t *testing.T) {
	exe := buildARM64Chain(t, "-fno-omit-frame-pointer")
	rec := runARM64Chain(t, exe, "levels")
	u, sp, want := unwindHere(t, rec, &unwind.Options{Open: openHost, NoCFI: true})
	for _, f := range want.Frames {
		if f.Method == unwind.MethodCFI {
			t.Fatalf("frame %#x by CFI with NoCFI", f.PC)
		}
	}
	wantPCs := framePCs(want.Frames)
	have, stop := runARM64Walk(t, rec, u, true)
	n := &arm64Namer{sp: sp, u: u, syms: map[string][]elf.Symbol{}}
	names, _ := n.names(t, want.Frames)
	t.Logf("tables (none): %v, stop %v (%v); program: stop %d", names, want.Stop, want.Err, stop)
	chain := []string{"capture", "leaf", "level3", "level2", "level1", "main"}
	if len(names) < len(chain) || !slices.Equal(names[:len(chain)], chain) {
		t.Fatalf("have %v, want %v first", names, chain)
	}
	// Both end at _start's frame pointer, 0: the program without
	// reading it (CFIStopRead), UnwindTables outside its copy.
	if !slices.Equal(have, wantPCs) || stop != stackcap.CFIStopRead || want.Stop != unwind.StopOutsideCopy || names[len(names)-1] != "_start" {
		t.Fatalf("program: %x, stop %d\ntables: %x, stop %v (%v)", have, stop, wantPCs, want.Stop, want.Err)
	}
}

// loadARM64Walk loads a raw tracepoint program that runs the walk
// stackcap.EmitCFIWalkID emits for arm64 with opts, its registers an
// arm64 user_pt_regs in the array map "regs", its scratch (the stack id
// record, then opts.Scratch) in the array map "scratch", and its tables
// in the maps of tabs (nil: empty ones).
func loadARM64Walk(t *testing.T, opts *stackcap.CFIWalkOptions, tabs map[string]*ebpf.Map) *ebpf.Collection {
	t.Helper()
	walk, callback, err := stackcap.EmitCFIWalkID(elf.EM_AARCH64, asm.R6, asm.R7, 0, "frames", opts, "w")
	if err != nil {
		t.Fatal(err)
	}
	lookup := func(m string, dst asm.Register) asm.Instructions {
		return asm.Instructions{
			asm.StoreImm(asm.R10, -40, 0, asm.Word),
			asm.LoadMapPtr(asm.R1, 0).WithReference(m),
			asm.Mov.Reg(asm.R2, asm.R10),
			asm.Add.Imm(asm.R2, -40),
			asm.FnMapLookupElem.Call(),
			asm.JEq.Imm(asm.R0, 0, "exit"),
			asm.Mov.Reg(dst, asm.R0),
		}
	}
	insns := asm.Instructions{stackcap.WithProgramFunc(asm.Mov.Imm(asm.R0, 0), "walk")}
	insns = append(insns, lookup("regs", asm.R6)...)
	insns = append(insns, lookup("scratch", asm.R7)...)
	insns = append(insns, walk...)
	insns = append(insns, asm.Mov.Imm(asm.R0, 0).WithSymbol("exit"), asm.Return())
	insns = append(insns, callback...)
	spec := &ebpf.CollectionSpec{
		Maps: map[string]*ebpf.MapSpec{
			"regs":    {Name: "regs", Type: ebpf.Array, KeySize: 4, ValueSize: arm64RegsSize, MaxEntries: 1},
			"scratch": {Name: "scratch", Type: ebpf.Array, KeySize: 4, ValueSize: uint32(int(opts.Scratch) + stackcap.CFIWalkScratchSize(opts)), MaxEntries: 1},
			"frames":  stackcap.FramesMapSpec("frames", 16, opts.MaxFrames),

			stackcap.DefaultCFIProcsMap:  stackcap.CFIProcsMapSpec(stackcap.DefaultCFIProcsMap, 1),
			stackcap.DefaultCFITablesMap: stackcap.CFITablesMapSpec(stackcap.DefaultCFITablesMap, 1),
			stackcap.DefaultCFIRowsMap:   stackcap.CFIRowsMapSpec(stackcap.DefaultCFIRowsMap, 1),
			stackcap.DefaultCFIWantedMap: stackcap.CFIWantedMapSpec(stackcap.DefaultCFIWantedMap, 1),
		},
		Programs: map[string]*ebpf.ProgramSpec{"walk": {Name: "walk", Type: ebpf.RawTracepoint, License: "GPL", Instructions: insns}},
	}
	for name, m := range tabs {
		spec.Maps[name].MaxEntries = m.MaxEntries()
	}
	copts := ebpf.CollectionOptions{MapReplacements: tabs}
	copts.Programs.LogLevel = ebpf.LogLevelStats // "processed N insns"
	coll, err := ebpf.NewCollectionWithOptions(spec, copts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(coll.Close)
	return coll
}

// TestCFIWalkVerifierARM64: the kernel's verifier accepts the walk
// emitted for arm64 for 1 to MaxFrames frames, at a function's entry or
// not, and the instructions it processes do not grow with the frames
// (the x86-64 walk's TestCFIWalkVerifier, in internal/bpf/stackcap).
func TestCFIWalkVerifierARM64(t *testing.T) {
	testutil.RequireBPF(t)
	stacktest.CheckWalkVerifier(t, func(frames int, entry bool) string {
		coll := loadARM64Walk(t, &stackcap.CFIWalkOptions{MaxFrames: frames, Entry: entry, Scratch: stackcap.StackIDSize, Stack: -32}, nil)
		return coll.Programs["walk"].VerifierLog
	})
}
