package stackcap

import (
	"debug/elf"
	"fmt"

	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/btf"
)

// The program's walk with call frame information (EmitCFIWalkID): see "Stacks" in
// docs/architecture.md.

// CFIWalkOptions configures EmitCFIWalkID.
type CFIWalkOptions struct {
	// MaxFrames is the most frames kept, the instruction pointer
	// included: 1 to MaxFrames; 0 means DefaultMaxFrames. It must equal
	// the frames map's value size divided by 8 (FramesMapSpec).
	MaxFrames int
	// Entry says the site is a function's first instruction. The rows
	// of a table unwind it as any other address; it matters where the
	// walk steps by frame pointer: there the return address is the word
	// at the stack pointer (arm64: the link register), and the frame
	// pointer is still the caller's.
	Entry bool
	// Scratch is the offset from dst of CFIWalkScratchSize(opts) bytes
	// the walk may overwrite (a per-CPU map value): its state, then the
	// frames it found.
	Scratch int16
	// Stack is the offset from R10 (negative, 8-aligned) of the lowest of
	// CFIWalkStackSlots 8-byte slots of the BPF stack the walk may
	// overwrite.
	Stack int16
	// Procs, Tables, Rows and Wanted name the maps of processes'
	// mappings, of tables, of rows and of the processes whose mappings
	// the walk asks for (CFIProcsMapSpec, CFITablesMapSpec,
	// CFIRowsMapSpec, CFIWantedMapSpec); "" means DefaultCFIProcsMap and
	// its siblings.
	Procs, Tables, Rows, Wanted string
}

// CFIWalkStackSlots is the number of 8-byte BPF stack slots
// EmitCFIWalkID uses.
const CFIWalkStackSlots = 4

// The walk's state at the start of its scratch: every value the frame
// loop keeps between frames and helper calls. The verifier tracks no
// values in map memory, so the unrolled searches that keep their bounds
// there reach the same state at each step and are pruned.
const (
	cfiPC    = 0   // the frame's PC
	cfiSP    = 8   // its SP
	cfiFP    = 16  // its frame pointer (when cfiFPKnown)
	cfiN     = 24  // frames found
	cfiHash  = 32  // their running hash
	cfiFlags = 40  // cfiFPKnown, cfiFirst
	cfiBuf   = 48  // 16 bytes bpf_probe_read_user reads into
	cfiStop  = 64  // why the walk ended (CFIStop…)
	cfiKey   = 72  // u32 key of a map lookup
	cfiLo    = 80  // binary search: first candidate
	cfiCount = 88  // binary search: candidates left
	cfiRel   = 96  // the PC looked up, relative to the object's image
	cfiLook  = 104 // the PC looked up: the PC, or a return address - 1
	cfiFirst = 112 // the table's first row
	cfiCFA   = 120 // the CFA the row gave

	// The mapping of the last frame looked up (empty before the
	// first): consecutive frames are often in one object, whose PCs skip
	// the search of the mappings and the lookup of the table.
	cfiMStart = 128 // its start
	cfiMEnd   = 136 // its end (0: none yet)
	cfiMBias  = 144 // its bias
	cfiMRows  = 152 // its table's rows (cfiFirst the first), 0: none
	cfiMIndex = 160 // its table's page index (CFITable…)
	cfiMPages = 168
	cfiMBase  = 176
	cfiMShift = 184
	cfiState  = 192 // then the frames

	// arm64: frame 0's link register, stored before the loop. It
	// shares the second half of cfiBuf: only frame 0 uses it (a row
	// with CFIRAInLR, or the entry's step), before any read into the
	// buffer.
	cfiLR = cfiBuf + 8

	cfiFPKnown = 1 << 0 // the frame pointer is known
	cfiFirstF  = 1 << 1 // the frame is frame 0: its PC is the instruction pointer
	cfiStale   = 1 << 2 // the process's mappings do not hold the instruction pointer: every step is by frame pointer
)

// Why a walk with call frame information ended, at offset CFIStopOffset
// of its scratch after the walk (for tests).
const (
	CFIStopOffset    = cfiStop
	CFIStopEnd       = 1 // a KindEnd row or a return address of 0
	CFIStopNoMapping = 2 // the PC is in no mapping of a known process
	CFIStopRead      = 3 // reading the stack failed
	CFIStopNoFP      = 4 // the rule needs a frame pointer no longer known
	CFIStopCFI       = 5 // a row the walk cannot follow
	CFIStopProgress  = 6 // the caller's SP is not above the callee's
	CFIStopMax       = 7 // MaxFrames frames
	CFIStopNoLR      = 8 // arm64: the return address is in the link register, known only in frame 0
)

// ARM64AddressBits is the number of low bits of an arm64 return address
// the walk keeps: code built with pointer authentication saves it signed
// in the bits above (user addresses have 48 bits unless a process asks
// mmap for more). unwind.ARM64AddressBits is the same.
const ARM64AddressBits = 48

// CFIWalkScratchSize is the number of scratch bytes EmitCFIWalkID uses
// for opts: its state, then the frames.
func CFIWalkScratchSize(opts *CFIWalkOptions) int {
	if opts == nil {
		return scratchSize(cfiState, 0)
	}
	return scratchSize(cfiState, opts.MaxFrames)
}

// EmitCFIWalkID returns instructions that walk the user stack with the
// call frame information tables of the maps opts names and store at
// dst+off a stack id record in the frames map named framesMap, as
// EmitWalkID does (the same record, hash and frames map), and the
// callback the walk's bpf_loop calls, a function the caller appends to
// the program after its last instruction (none for one frame). A
// program with a callback
// needs BTF function information: its first instruction must be marked
// with WithProgramFunc. x86-64 and arm64; other machines give an error
// wrapping ErrUnsupported. Needs bpf_loop (kernel 5.17). R0..R5 are
// clobbered.
func EmitCFIWalkID(m elf.Machine, ctx, dst asm.Register, off int16, framesMap string, opts *CFIWalkOptions, prefix string) (insns, callback asm.Instructions, err error) {
	r, err := machineRegs(m)
	if err != nil {
		return nil, nil, err
	}
	if err := checkRegs(ctx, dst); err != nil {
		return nil, nil, err
	}
	if opts == nil {
		return nil, nil, fmt.Errorf("stackcap: EmitCFIWalkID needs CFIWalkOptions (its scratch and stack)")
	}
	max, err := (&FramesOptions{MaxFrames: opts.MaxFrames}).maxFrames()
	if err != nil {
		return nil, nil, err
	}
	if int(off) < 0 || int(off)+StackIDSize > 1<<15-1 {
		return nil, nil, fmt.Errorf("stackcap: offset %d: stack id ends past 32 KiB", off)
	}
	if opts.Scratch < 0 || int(opts.Scratch)+CFIWalkScratchSize(opts) > 1<<15-1 {
		return nil, nil, fmt.Errorf("stackcap: scratch at %d: the walk's %d bytes end past 32 KiB", opts.Scratch, CFIWalkScratchSize(opts))
	}
	if opts.Stack >= 0 || opts.Stack%8 != 0 || int(opts.Stack)+8*CFIWalkStackSlots > 0 || opts.Stack < -512 {
		return nil, nil, fmt.Errorf("stackcap: BPF stack offset %d cannot hold %d slots", opts.Stack, CFIWalkStackSlots)
	}
	names := [4]string{opts.Procs, opts.Tables, opts.Rows, opts.Wanted}
	for i, d := range [4]string{DefaultCFIProcsMap, DefaultCFITablesMap, DefaultCFIRowsMap, DefaultCFIWantedMap} {
		if names[i] == "" {
			names[i] = d
		}
	}
	w := cfiWalk{
		max: max, entry: opts.Entry, lr: r.hasLR, procs: names[0], tables: names[1], rows: names[2], wanted: names[3],
		l: func(s string) string { return prefix + "_cfi_" + s },
	}
	s := opts.Scratch
	// BPF stack slots: the callback's context (the scratch's address
	// and the process's mappings, adjacent), then the frames' number
	// and hash for emitStoreFrames (the first also the tgid key).
	sCtx, sProc, sN, sH := opts.Stack, opts.Stack+8, opts.Stack+16, opts.Stack+24
	l := w.l
	insns = asm.Instructions{
		asm.LoadMem(asm.R1, ctx, r.ip, asm.DWord),
		asm.StoreMem(dst, s+cfiPC, asm.R1, asm.DWord),
		asm.StoreMem(dst, s+cfiState, asm.R1, asm.DWord),
		asm.LoadImm(asm.R0, walkSeed, asm.DWord),
		asm.Xor.Reg(asm.R0, asm.R1),
		asm.LoadImm(asm.R2, walkMul, asm.DWord),
		asm.Mul.Reg(asm.R0, asm.R2),
		asm.StoreMem(dst, s+cfiHash, asm.R0, asm.DWord),
		storeImm64(dst, s+cfiN, 1),
		asm.LoadMem(asm.R1, ctx, r.sp, asm.DWord),
		asm.StoreMem(dst, s+cfiSP, asm.R1, asm.DWord),
		asm.LoadMem(asm.R1, ctx, r.fp, asm.DWord),
		asm.StoreMem(dst, s+cfiFP, asm.R1, asm.DWord),
		storeImm64(dst, s+cfiFlags, cfiFPKnown|cfiFirstF),
		storeImm64(dst, s+cfiStop, CFIStopMax),
		storeImm64(dst, s+cfiMEnd, 0),
	}
	if r.hasLR {
		insns = append(insns,
			asm.LoadMem(asm.R1, ctx, r.lr, asm.DWord),
			asm.StoreMem(dst, s+cfiLR, asm.R1, asm.DWord),
		)
	}
	insns = append(insns,
		// The process's mappings, or 0: then every step is by frame
		// pointer.
		asm.FnGetCurrentPidTgid.Call(),
		asm.RSh.Imm(asm.R0, 32),
		asm.StoreMem(asm.R10, sN, asm.R0, asm.Word),
		asm.LoadMapPtr(asm.R1, 0).WithReference(w.procs),
		asm.Mov.Reg(asm.R2, asm.R10),
		asm.Add.Imm(asm.R2, int32(sN)),
		asm.FnMapLookupElem.Call(),
		asm.StoreMem(asm.R10, sProc, asm.R0, asm.DWord),
		asm.JNE.Imm(asm.R0, 0, l("proc")),
		storeImm64(asm.R10, sProc, 0),
		// Unknown: asked for (once: BPF_NOEXIST; the tgid is both key
		// and value), this hit walks by frame pointer.
		asm.LoadMapPtr(asm.R1, 0).WithReference(w.wanted),
		asm.Mov.Reg(asm.R2, asm.R10),
		asm.Add.Imm(asm.R2, int32(sN)),
		asm.Mov.Reg(asm.R3, asm.R2),
		asm.Mov.Imm(asm.R4, bpfNoExist),
		asm.FnMapUpdateElem.Call(),
		asm.Mov.Reg(asm.R1, dst).WithSymbol(l("proc")),
		asm.Add.Imm(asm.R1, int32(s)),
		asm.StoreMem(asm.R10, sCtx, asm.R1, asm.DWord),
	)
	if max > 1 {
		insns = append(insns,
			asm.Mov.Imm(asm.R1, int32(max-1)),
			asm.Instruction{OpCode: asm.LoadImmOp(asm.DWord), Dst: asm.R2, Src: asm.PseudoFunc, Constant: -1}.WithReference(l("step")),
			asm.Mov.Reg(asm.R3, asm.R10),
			asm.Add.Imm(asm.R3, int32(sCtx)),
			asm.Mov.Imm(asm.R4, 0),
			asm.FnLoop.Call(),
		)
	} else {
		insns = append(insns, storeImm64(dst, s+cfiStop, CFIStopMax))
	}
	insns = append(insns,
		asm.LoadMem(asm.R1, dst, s+cfiN, asm.DWord),
		asm.StoreMem(asm.R10, sN, asm.R1, asm.DWord),
		asm.LoadMem(asm.R1, dst, s+cfiHash, asm.DWord),
		asm.StoreMem(asm.R10, sH, asm.R1, asm.DWord),
	)
	insns = append(insns, emitStoreFrames(dst, off, s+cfiState, sN, sH, max, framesMap, l)...)
	if max == 1 {
		return insns, nil, nil
	}
	return insns, w.step(), nil
}

type cfiWalk struct {
	max                         int
	entry                       bool
	lr                          bool // arm64: a link register, signed return addresses
	procs, tables, rows, wanted string
	l                           func(string) string
}

// Registers of the callback: the scratch (its state at 0), the process's
// mappings (or 0), the mapping of the PC, the row.
const (
	cbS    = asm.R6
	cbProc = asm.R7
	cbMap  = asm.R8
	cbRow  = asm.R9
)

func ldS(dst asm.Register, off int16) asm.Instruction {
	return asm.LoadMem(dst, cbS, off, asm.DWord)
}

func stS(off int16, src asm.Register) asm.Instruction {
	return asm.StoreMem(cbS, off, src, asm.DWord)
}

// lookup looks up the u32 key at cfiKey of the scratch in the map named
// m: the value's address in R0, or a frame-pointer step when there is
// none.
func (w *cfiWalk) lookup(m string) asm.Instructions {
	return asm.Instructions{
		asm.LoadMapPtr(asm.R1, 0).WithReference(m),
		asm.Mov.Reg(asm.R2, cbS),
		asm.Add.Imm(asm.R2, cfiKey),
		asm.FnMapLookupElem.Call(),
		asm.JEq.Imm(asm.R0, 0, w.l("fp")),
	}
}

// search unrolls steps steps of a binary search for the last of the
// cfiCount candidates from cfiLo that is at most the key, ending at the
// label name+"done" with the answer + 1 at cfiLo (0: none). Each step
// runs compare with the candidates' number in R2: it leaves the middle
// candidate's index in R4 and half the number in R3, and jumps to low
// when the middle is above the key; count is the register that then
// holds the number of candidates.
func (w *cfiWalk) search(name string, steps int, count asm.Register, compare func(low string) asm.Instructions) asm.Instructions {
	l := w.l
	done := l(name + "done")
	var insns asm.Instructions
	for i := range steps {
		low, next := l(fmt.Sprintf("%slow%d", name, i)), l(fmt.Sprintf("%s%d", name, i+1))
		if i == steps-1 {
			next = done
		}
		insns = append(insns,
			ldS(asm.R2, cfiCount).WithSymbol(l(fmt.Sprintf("%s%d", name, i))),
			asm.JEq.Imm(asm.R2, 0, done),
		)
		insns = append(insns, compare(low)...)
		insns = append(insns,
			asm.Add.Imm(asm.R4, 1),
			stS(cfiLo, asm.R4),
			asm.Sub.Reg(count, asm.R3),
			asm.Sub.Imm(count, 1),
			stS(cfiCount, count),
			asm.Ja.Label(next),
			stS(cfiCount, asm.R3).WithSymbol(low),
		)
	}
	return insns
}

// readUser reads n bytes of user memory at R3 into the scratch at off;
// R0 is the helper's result.
func readUser(off int32, n int32) asm.Instructions {
	return asm.Instructions{
		asm.Mov.Reg(asm.R1, cbS),
		asm.Add.Imm(asm.R1, off),
		asm.Mov.Imm(asm.R2, n),
		asm.FnProbeReadUser.Call(),
	}
}

// rowOffset loads the row's signed 16-bit offset at off into dst.
func rowOffset(dst asm.Register, off int16) asm.Instructions {
	return asm.Instructions{
		asm.LoadMem(dst, cbRow, off, asm.Half),
		asm.LSh.Imm(dst, 48),
		asm.ArSh.Imm(dst, 48),
	}
}

// cfaPlus sets R3 to the CFA plus the row's offset at off.
func cfaPlus(off int16) asm.Instructions {
	return append(rowOffset(asm.R3, off),
		ldS(asm.R1, cfiCFA),
		asm.Add.Reg(asm.R3, asm.R1),
	)
}

// fpKnown stores R1 as the frame pointer, now known.
func fpKnown() asm.Instructions {
	return asm.Instructions{
		stS(cfiFP, asm.R1),
		ldS(asm.R2, cfiFlags),
		asm.Or.Imm(asm.R2, cfiFPKnown),
		stS(cfiFlags, asm.R2),
	}
}

// step returns the callback of bpf_loop, called with the loop's index
// in R1 and the context (the scratch's address, the process's mappings)
// in R2: it unwinds one frame and stores the caller's PC, returning 0 to
// go on or 1 to end the walk.
func (w *cfiWalk) step() asm.Instructions {
	l := w.l
	insns := asm.Instructions{
		btf.WithFuncMetadata(asm.LoadMem(cbS, asm.R2, 0, asm.DWord).WithSymbol(l("step")), &btf.Func{
			Name: l("step"),
			Type: &btf.FuncProto{
				Return: &btf.Int{Name: "long", Size: 8, Encoding: btf.Signed},
				Params: []btf.FuncParam{
					{Name: "index", Type: &btf.Int{Name: "u64", Size: 8}},
					{Name: "ctx", Type: &btf.Pointer{Target: &btf.Void{}}},
				},
			},
			Linkage: btf.StaticFunc,
		}),
		asm.LoadMem(cbProc, asm.R2, 8, asm.DWord),
		// The address looked up: a return address follows its call,
		// which may be the last instruction of its function.
		ldS(asm.R1, cfiPC),
		ldS(asm.R2, cfiFlags),
		asm.And.Imm(asm.R2, cfiFirstF),
		asm.JNE.Imm(asm.R2, 0, l("look")),
		asm.Sub.Imm(asm.R1, 1),
		stS(cfiLook, asm.R1).WithSymbol(l("look")),
		asm.JEq.Imm(cbProc, 0, l("fp")),
		ldS(asm.R2, cfiFlags),
		asm.And.Imm(asm.R2, cfiStale),
		asm.JNE.Imm(asm.R2, 0, l("fp")),

		// The last frame's mapping, when it holds the PC: its table.
		ldS(asm.R1, cfiPC),
		ldS(asm.R2, cfiMStart),
		asm.JLT.Reg(asm.R1, asm.R2, l("msearch")),
		ldS(asm.R2, cfiMEnd),
		asm.JGE.Reg(asm.R1, asm.R2, l("msearch")),
		ldS(asm.R2, cfiMRows),
		asm.JEq.Imm(asm.R2, 0, l("fp")),
		asm.Ja.Label(l("table")),

		// Else the mapping of the PC: the last whose start is at most
		// the PC, by binary search of the count first mappings.
		asm.LoadMem(asm.R2, cbProc, 0, asm.Word).WithSymbol(l("msearch")),
		stS(cfiCount, asm.R2),
		storeImm64(cbS, cfiLo, 0),
	}
	insns = append(insns, w.search("m", cfiMappingSearch, asm.R2, func(low string) asm.Instructions {
		return asm.Instructions{
			asm.Mov.Reg(asm.R3, asm.R2),
			asm.RSh.Imm(asm.R3, 1),
			ldS(asm.R4, cfiLo),
			asm.Add.Reg(asm.R4, asm.R3),
			asm.Mov.Reg(asm.R5, asm.R4),
			asm.And.Imm(asm.R5, CFIMaxMappings-1),
			asm.LSh.Imm(asm.R5, 5),
			asm.Add.Reg(asm.R5, cbProc),
			asm.LoadMem(asm.R5, asm.R5, cfiProcHeader, asm.DWord),
			ldS(asm.R1, cfiPC),
			asm.JGT.Reg(asm.R5, asm.R1, low),
		}
	})...)
	insns = append(insns,
		ldS(asm.R4, cfiLo).WithSymbol(l("mdone")),
		asm.JEq.Imm(asm.R4, 0, l("nomap")),
		asm.Sub.Imm(asm.R4, 1),
		asm.And.Imm(asm.R4, CFIMaxMappings-1),
		asm.LSh.Imm(asm.R4, 5),
		asm.Add.Reg(asm.R4, cbProc),
		asm.Mov.Reg(cbMap, asm.R4),
		ldS(asm.R1, cfiPC),
		asm.LoadMem(asm.R2, cbMap, cfiProcHeader+8, asm.DWord),
		asm.JGE.Reg(asm.R1, asm.R2, l("nomap")),
		stS(cfiMEnd, asm.R2),
		asm.LoadMem(asm.R2, cbMap, cfiProcHeader, asm.DWord),
		stS(cfiMStart, asm.R2),
		asm.LoadMem(asm.R2, cbMap, cfiProcHeader+16, asm.DWord),
		stS(cfiMBias, asm.R2),
		storeImm64(cbS, cfiMRows, 0),

		// Its table; none (CFINoTable, out of the map's range, or no
		// rows): a frame-pointer step.
		asm.LoadMem(asm.R1, cbMap, cfiProcHeader+24, asm.Word),
		asm.StoreMem(cbS, cfiKey, asm.R1, asm.Word),
	)
	insns = append(insns, w.lookup(w.tables)...)
	insns = append(insns,
		asm.LoadMem(asm.R2, asm.R0, CFITableRows, asm.Word),
		asm.JEq.Imm(asm.R2, 0, l("fp")),
		stS(cfiMRows, asm.R2),
	)
	for _, f := range []struct{ table, scratch int16 }{
		{CFITableFirst, cfiFirst}, {CFITableIndex, cfiMIndex}, {CFITablePages, cfiMPages},
		{CFITableBase, cfiMBase}, {CFITableShift, cfiMShift},
	} {
		insns = append(insns,
			asm.LoadMem(asm.R1, asm.R0, f.table, asm.Word),
			stS(f.scratch, asm.R1),
		)
	}
	insns = append(insns,
		// The address in the object's image; beyond 4 GiB no row
		// covers it.
		ldS(asm.R1, cfiLook).WithSymbol(l("table")),
		ldS(asm.R2, cfiMBias),
		asm.Sub.Reg(asm.R1, asm.R2),
		asm.Mov.Reg(asm.R3, asm.R1),
		asm.RSh.Imm(asm.R3, 32),
		asm.JNE.Imm(asm.R3, 0, l("fp")),
		stS(cfiRel, asm.R1),

		// Its page (below the first, no row covers it; the last holds
		// every address after it): the rows to search, from its index
		// entry, the second of the rows map value when the page is odd
		// (kept in cbMap, no longer needed).
		ldS(asm.R2, cfiMBase),
		asm.JLT.Reg(asm.R1, asm.R2, l("fp")),
		asm.Sub.Reg(asm.R1, asm.R2),
		ldS(asm.R2, cfiMShift),
		asm.And.Imm(asm.R2, 63),
		asm.RSh.Reg(asm.R1, asm.R2),
		ldS(asm.R2, cfiMPages),
		asm.JLT.Reg(asm.R1, asm.R2, l("page")),
		asm.Mov.Reg(asm.R1, asm.R2),
		asm.Sub.Imm(asm.R1, 1),
		asm.Mov.Reg(cbMap, asm.R1).WithSymbol(l("page")),
		asm.RSh.Imm(asm.R1, 1),
		ldS(asm.R2, cfiMIndex),
		asm.Add.Reg(asm.R2, asm.R1),
		asm.StoreMem(cbS, cfiKey, asm.R2, asm.Word),
	)
	insns = append(insns, w.lookup(w.rows)...)
	insns = append(insns,
		asm.And.Imm(cbMap, 1),
		asm.LSh.Imm(cbMap, 3),
		asm.Add.Reg(asm.R0, cbMap),
		asm.LoadMem(asm.R1, asm.R0, 0, asm.Word),
		asm.LoadMem(asm.R2, asm.R0, 4, asm.Word),
		ldS(asm.R3, cfiFirst),
		asm.Add.Reg(asm.R1, asm.R3),
		stS(cfiLo, asm.R1),
		stS(cfiCount, asm.R2),
	)
	// The row: the last whose PC is at most the address.
	insns = append(insns, w.search("r", cfiRowSearch, asm.R5, func(low string) asm.Instructions {
		insns := asm.Instructions{
			asm.RSh.Imm(asm.R2, 1),
			ldS(asm.R4, cfiLo),
			asm.Add.Reg(asm.R4, asm.R2),
			asm.StoreMem(cbS, cfiKey, asm.R4, asm.Word),
		}
		return append(append(insns, w.lookup(w.rows)...),
			asm.LoadMem(asm.R1, asm.R0, CFIRowPC, asm.Word),
			ldS(asm.R2, cfiRel),
			ldS(asm.R3, cfiCount),
			asm.Mov.Reg(asm.R5, asm.R3),
			asm.RSh.Imm(asm.R3, 1),
			asm.JGT.Reg(asm.R1, asm.R2, low),
			asm.LoadMem(asm.R4, cbS, cfiKey, asm.Word),
		)
	})...)
	insns = append(insns,
		ldS(asm.R4, cfiLo).WithSymbol(l("rdone")),
		ldS(asm.R1, cfiFirst),
		asm.JLE.Reg(asm.R4, asm.R1, l("fp")),
		asm.Sub.Imm(asm.R4, 1),
		asm.StoreMem(cbS, cfiKey, asm.R4, asm.Word),
	)
	insns = append(insns, w.lookup(w.rows)...)
	insns = append(insns,
		asm.Mov.Reg(cbRow, asm.R0),

		// The CFA.
		asm.LoadMem(asm.R1, cbRow, CFIRowKind, asm.Byte),
		asm.JEq.Imm(asm.R1, CFIKindNone, l("fp")),
		asm.JEq.Imm(asm.R1, CFIKindEnd, l("stop_end")),
		asm.LoadMem(asm.R2, cbRow, CFIRowCFAOffset, asm.Word),
		asm.LSh.Imm(asm.R2, 32),
		asm.ArSh.Imm(asm.R2, 32),
		ldS(asm.R3, cfiSP),
		asm.JEq.Imm(asm.R1, CFIKindSP, l("cfa")),
		asm.JEq.Imm(asm.R1, CFIKindPLT, l("plt")),
		asm.JNE.Imm(asm.R1, CFIKindFP, l("stop_cfi")),
		ldS(asm.R3, cfiFlags),
		asm.And.Imm(asm.R3, cfiFPKnown),
		asm.JEq.Imm(asm.R3, 0, l("stop_nofp")),
		ldS(asm.R3, cfiFP),
		asm.Ja.Label(l("cfa")),
		// PLT entries: 8 more once the entry has pushed its argument.
		ldS(asm.R4, cfiPC).WithSymbol(l("plt")),
		asm.And.Imm(asm.R4, 15),
		asm.LoadMem(asm.R5, cbRow, CFIRowArg, asm.Byte),
		asm.JLT.Reg(asm.R4, asm.R5, l("cfa")),
		asm.Add.Imm(asm.R3, 8),
		asm.Add.Reg(asm.R3, asm.R2).WithSymbol(l("cfa")),
		stS(cfiCFA, asm.R3),

		// The return address at CFA + RAOffset and the frame pointer
		// saved just below it (x86-64's push %rbp, arm64's frame
		// record), in one read.
		asm.LoadMem(asm.R1, cbRow, CFIRowRA, asm.Byte),
	)
	if w.lr {
		insns = append(insns, asm.JEq.Imm(asm.R1, CFIRAInLR, l("inlr")))
	}
	// The frame pointer's rule, where the link register's return
	// address joins the walk (arm64).
	fpRule := asm.LoadMem(asm.R1, cbRow, CFIRowFP, asm.Byte)
	if w.lr {
		fpRule = fpRule.WithSymbol(l("fprule"))
	}
	insns = append(insns,
		asm.JNE.Imm(asm.R1, CFIRAAtCFA, l("stop_cfi")),
		asm.LoadMem(asm.R1, cbRow, CFIRowFP, asm.Byte),
		asm.JNE.Imm(asm.R1, CFIFPAtCFA, l("ra")),
	)
	insns = append(insns, rowOffset(asm.R3, CFIRowRAOffset)...)
	insns = append(insns, rowOffset(asm.R4, CFIRowFPOffset)...)
	insns = append(insns,
		asm.Mov.Reg(asm.R5, asm.R4),
		asm.Add.Imm(asm.R5, 8),
		asm.JNE.Reg(asm.R5, asm.R3, l("ra")),
		ldS(asm.R3, cfiCFA),
		asm.Add.Reg(asm.R3, asm.R4),
	)
	insns = append(insns, readUser(cfiBuf, 16)...)
	insns = append(insns,
		asm.JNE.Imm(asm.R0, 0, l("ra")),
		ldS(asm.R1, cfiBuf),
	)
	insns = append(insns, fpKnown()...)
	insns = append(insns,
		ldS(asm.R1, cfiBuf+8),
		ldS(asm.R2, cfiCFA),
		asm.Ja.Label(l("advance")),
	)

	// Else (or when that read failed) the return address alone.
	ra := cfaPlus(CFIRowRAOffset)
	ra[0] = ra[0].WithSymbol(l("ra"))
	insns = append(insns, ra...)
	insns = append(insns, readUser(cfiBuf, 8)...)
	insns = append(insns, asm.JNE.Imm(asm.R0, 0, l("stop_fault")))
	if w.lr {
		// arm64: the return address in the link register, known in
		// frame 0 only, into the buffer the frame pointer's rule
		// leaves it in.
		insns = append(insns,
			asm.Ja.Label(l("fprule")),
			ldS(asm.R1, cfiFlags).WithSymbol(l("inlr")),
			asm.And.Imm(asm.R1, cfiFirstF),
			asm.JEq.Imm(asm.R1, 0, l("stop_nolr")),
			ldS(asm.R1, cfiLR),
			stS(cfiBuf, asm.R1),
		)
	}
	insns = append(insns,
		// The caller's frame pointer: the same, read at CFA +
		// FPOffset, or unknown (a rule that is neither, or a failed
		// read: only a later rule needing it ends the walk).
		fpRule,
		asm.JEq.Imm(asm.R1, CFIFPSame, l("fpdone")),
		ldS(asm.R2, cfiFlags),
		asm.And.Imm(asm.R2, ^cfiFPKnown),
		stS(cfiFlags, asm.R2),
		asm.JNE.Imm(asm.R1, CFIFPAtCFA, l("fpdone")),
	)
	insns = append(insns, cfaPlus(CFIRowFPOffset)...)
	insns = append(insns, readUser(cfiBuf+8, 8)...)
	insns = append(insns,
		asm.JNE.Imm(asm.R0, 0, l("fpdone")),
		ldS(asm.R1, cfiBuf+8),
	)
	insns = append(insns, fpKnown()...)
	insns = append(insns,
		ldS(asm.R1, cfiBuf).WithSymbol(l("fpdone")),
		ldS(asm.R2, cfiCFA),
		asm.Ja.Label(l("advance")),
	)

	// A PC in no mapping: the mappings are not the process's any more
	// (an exec, a library mapped since, another process of the same
	// id), or the return address is not one. The process is asked for
	// again (once: BPF_NOEXIST); the walk ends, but for frame 0, which
	// is certainly mapped: then every step is by frame pointer, as for a
	// process not known.
	insns = append(insns,
		asm.FnGetCurrentPidTgid.Call().WithSymbol(l("nomap")),
		asm.RSh.Imm(asm.R0, 32),
		asm.StoreMem(cbS, cfiKey, asm.R0, asm.Word),
		asm.LoadMapPtr(asm.R1, 0).WithReference(w.wanted),
		asm.Mov.Reg(asm.R2, cbS),
		asm.Add.Imm(asm.R2, cfiKey),
		asm.Mov.Reg(asm.R3, asm.R2),
		asm.Mov.Imm(asm.R4, bpfNoExist),
		asm.FnMapUpdateElem.Call(),
		ldS(asm.R2, cfiFlags),
		asm.Mov.Reg(asm.R1, asm.R2),
		asm.And.Imm(asm.R1, cfiFirstF),
		asm.JEq.Imm(asm.R1, 0, l("stop_nomap")),
		asm.Or.Imm(asm.R2, cfiStale),
		stS(cfiFlags, asm.R2),
	)

	// A frame-pointer step: at a function's entry (frame 0) the return
	// address is at SP (arm64: in the link register, SP unchanged) and
	// the frame pointer is the caller's; else the frame record {caller's
	// frame pointer, return address} is at the frame pointer.
	insns = append(insns, asm.Mov.Imm(asm.R0, 0).WithSymbol(l("fp")))
	if w.entry && w.lr {
		insns = append(insns,
			ldS(asm.R1, cfiFlags),
			asm.And.Imm(asm.R1, cfiFirstF),
			asm.JEq.Imm(asm.R1, 0, l("record")),
			ldS(asm.R1, cfiLR),
			ldS(asm.R2, cfiSP),
			asm.Ja.Label(l("advance")),
		)
	} else if w.entry {
		insns = append(insns,
			ldS(asm.R1, cfiFlags),
			asm.And.Imm(asm.R1, cfiFirstF),
			asm.JEq.Imm(asm.R1, 0, l("record")),
			asm.Mov.Reg(asm.R1, cbS),
			asm.Add.Imm(asm.R1, cfiBuf),
			asm.Mov.Imm(asm.R2, 8),
			ldS(asm.R3, cfiSP),
			asm.FnProbeReadUser.Call(),
			asm.JNE.Imm(asm.R0, 0, l("stop_fault")),
			ldS(asm.R1, cfiBuf),
			ldS(asm.R2, cfiSP),
			asm.Add.Imm(asm.R2, 8),
			asm.Ja.Label(l("advance")),
		)
	}
	insns = append(insns,
		ldS(asm.R1, cfiFlags).WithSymbol(l("record")),
		asm.And.Imm(asm.R1, cfiFPKnown),
		asm.JEq.Imm(asm.R1, 0, l("stop_nofp")),
		// A frame pointer in the first page (the 0 at the bottom of a
		// stack, or a small integer left by code without frame
		// pointers) or not 8-aligned ends the walk without a read: a
		// read there faults, which costs more than the rest of a walk.
		ldS(asm.R3, cfiFP),
		asm.JLT.Imm(asm.R3, walkChunk, l("stop_fault")),
		asm.Mov.Reg(asm.R1, asm.R3),
		asm.And.Imm(asm.R1, 7),
		asm.JNE.Imm(asm.R1, 0, l("stop_fault")),
	)
	insns = append(insns, readUser(cfiBuf, 16)...)
	insns = append(insns,
		asm.JNE.Imm(asm.R0, 0, l("stop_fault")),
		ldS(asm.R2, cfiFP),
		asm.Add.Imm(asm.R2, 16),
		ldS(asm.R1, cfiBuf),
		stS(cfiFP, asm.R1),
		ldS(asm.R1, cfiBuf+8),

		// R1: the caller's PC, R2: its SP. SP grows, but for frame 0
		// may stay.
	)
	adv := asm.JEq.Imm(asm.R1, 0, l("stop_end"))
	if w.lr {
		// arm64: the address bits of a return address, without its
		// pointer authentication code.
		insns = append(insns,
			asm.LoadImm(asm.R3, 1<<ARM64AddressBits-1, asm.DWord).WithSymbol(l("advance")),
			asm.And.Reg(asm.R1, asm.R3),
		)
	} else {
		adv = adv.WithSymbol(l("advance"))
	}
	insns = append(insns,
		adv,
		ldS(asm.R3, cfiSP),
		asm.JLT.Reg(asm.R2, asm.R3, l("stop_noprogress")),
		ldS(asm.R4, cfiFlags),
		asm.JNE.Reg(asm.R2, asm.R3, l("progress")),
		asm.Mov.Reg(asm.R5, asm.R4),
		asm.And.Imm(asm.R5, cfiFirstF),
		asm.JEq.Imm(asm.R5, 0, l("stop_noprogress")),
		asm.And.Imm(asm.R4, ^cfiFirstF).WithSymbol(l("progress")),
		stS(cfiFlags, asm.R4),
		stS(cfiSP, asm.R2),
		stS(cfiPC, asm.R1),
		// The frame: its index is checked here, where the verifier
		// needs its bound.
		ldS(asm.R5, cfiN),
		asm.JGE.Imm(asm.R5, int32(w.max), l("stop_max")),
		asm.Mov.Reg(asm.R4, asm.R5),
		asm.LSh.Imm(asm.R4, 3),
		asm.Add.Reg(asm.R4, cbS),
		asm.StoreMem(asm.R4, cfiState, asm.R1, asm.DWord),
		asm.Add.Imm(asm.R5, 1),
		stS(cfiN, asm.R5),
		ldS(asm.R0, cfiHash),
		asm.Xor.Reg(asm.R0, asm.R1),
		asm.LoadImm(asm.R3, walkMul, asm.DWord),
		asm.Mul.Reg(asm.R0, asm.R3),
		stS(cfiHash, asm.R0),
		asm.JGE.Imm(asm.R5, int32(w.max), l("stop_max")),
		asm.Mov.Imm(asm.R0, 0),
		asm.Return(),
	)
	for _, s := range []struct {
		label string
		stop  int32
	}{
		{"end", CFIStopEnd}, {"nomap", CFIStopNoMapping}, {"fault", CFIStopRead},
		{"nofp", CFIStopNoFP}, {"cfi", CFIStopCFI}, {"noprogress", CFIStopProgress}, {"max", CFIStopMax},
		{"nolr", CFIStopNoLR},
	} {
		if s.stop == CFIStopNoLR && !w.lr {
			continue
		}
		insns = append(insns,
			storeImm64(cbS, cfiStop, s.stop).WithSymbol(l("stop_"+s.label)),
			asm.Mov.Imm(asm.R0, 1),
			asm.Return(),
		)
	}
	return insns
}

// WithProgramFunc returns ins, the first instruction of a program named
// name, with the BTF function information the kernel needs of a program
// that has functions (EmitCFIWalkID's callback): int name(void *ctx).
func WithProgramFunc(ins asm.Instruction, name string) asm.Instruction {
	return btf.WithFuncMetadata(ins, &btf.Func{
		Name: name,
		Type: &btf.FuncProto{
			Return: &btf.Int{Name: "int", Size: 4, Encoding: btf.Signed},
			Params: []btf.FuncParam{{Name: "ctx", Type: &btf.Pointer{Target: &btf.Void{}}}},
		},
		Linkage: btf.GlobalFunc,
	})
}
