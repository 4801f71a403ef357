// Package stackcap generates the BPF instructions that capture the user
// stack of the thread that hit a uprobe, for generators (btgen, argread) to
// splice into their programs, and decodes what they captured.
//
// # Two captures
//
// Frame pointers (EmitFrames, EmitStackID): the kernel walks the user
// stack's frame-pointer chain (bpf_get_stack or bpf_get_stackid with
// BPF_F_USER_STACK). It is cheap and needs no user-space work, but only code
// built with frame pointers gives right frames: a function built without
// them (most -O2 C, Debian's libraries) hides its caller or ends the walk.
//
// The program's own walk (EmitWalkID, x86-64): the same frame-pointer
// chain, followed by the BPF program in a copy of the stack; see "A walk
// in the program" below.
//
// Stack copy (EmitCopy): the instruction pointer, stack pointer, frame
// pointer (and, on arm64, the link register) and a copy of the top of the
// user stack, as `perf record --call-graph dwarf` takes them; user space
// unwinds it with the objects' call frame information (internal/stacks/unwind).
//
// # The caller at a function's entry
//
// At a function's first instruction the function has not yet pushed the
// frame pointer: the frame-pointer register still holds the caller's frame,
// so a walk from it finds the caller's caller and skips the caller itself
// (bpftrace 0.17 prints "leaf, level2, level1, main" for a probe on leaf
// called by level3). The caller's return address is the word at the stack
// pointer on x86-64, the link register x30 on arm64 (the "caller word").
// With FramesOptions.Entry (the site is a symbol's start; the generator
// knows) the program also reads it, and the decoders put it after the
// instruction pointer, unless the kernel already did: recent
// x86-64 kernels (commit "perf,x86: avoid missing caller address in stack
// traces captured in uprobe"; 6.18 here does) add it themselves, but only
// for uprobes on a `push %rbp` or `endbr64` instruction, so a function
// that sets up no frame (a leaf at -O2, Go's small leaf functions) still
// loses its caller there. A second frame equal to the word means the
// kernel had it. The price of that test: in a recursion from one call
// site on a kernel without the commit, one of the equal frames is
// dropped. Entry is for a function's first instruction only, never for a
// return probe.
//
// # Layouts
//
// Native byte order; dst+off must have room for FramesSize, StackIDSize or
// CopySize bytes.
//
//	frames:   u32 n, u32 flags, u64 caller, u64 pcs[MaxFrames]
//	          n = frames the kernel wrote; flags bit 0: caller is the
//	          word at the stack pointer (Entry); bit 1: bpf_get_stack failed
//	stack id: s64 id (negative: bpf_get_stackid's error, or the frames
//	          map's), u64 caller (0: none)
//	copy:     u64 ip, sp, fp, lr (arm64 x30, else 0), u64 base, u32 len,
//	          u32 size, bytes[size]: the len bytes at base were copied
//
// # The copy
//
// The copy starts at the stack pointer rounded down to a chunk (4 KiB, or
// the whole size when smaller) and is read chunk by chunk with
// bpf_probe_read_user until a chunk fails: the stack above sp is mapped up
// to the stack's end, which is page-aligned, so a copy near the top of the
// stack keeps every readable byte instead of failing as one large read
// would. Chunk-aligned reads have constant offsets and sizes, which the
// verifier checks without bounds tracking; the cost is the bytes below sp
// in the first chunk (copied, never used). Memory never touched reads as a
// failure (bpf_probe_read_user cannot fault pages in): the copy then ends
// early.
//
// DefaultCopySize is 16 KiB: perf's default is 8 KiB; with up to 4 KiB of
// the first chunk below sp, 16 KiB keeps at least 12 KiB above sp, and it
// fits a per-CPU array value (at most 32 KiB) beside a generator's other
// data. A stack deeper than the copy unwinds until the copy ends
// (unwind reports where it stopped); Options.Size raises it to MaxCopySize.
//
// # A walk in the program
//
// The kernel's walk (perf_callchain_user on x86-64) follows the chain
// until a read fails: the last frame pointer, 0 at the bottom of a stack
// (_start clears it) or whatever main's caller left in the register when
// it was built without frame pointers (1 on this project's machines), is
// read, and the fault and its fixup cost more than the rest of the walk
// and the stack map together (on this project's machines about 600 ns of
// bpf_get_stackid's 1 000). EmitWalkID follows the same chain in the
// program: it copies the stack from the stack pointer to its page's end
// with one bpf_probe_read_user, reads further pages as the chain reaches
// them, and ends the stack where the next frame pointer is in the first
// page (0 at the bottom of a stack, or a small integer) or not 8-aligned,
// without reading there, or where a return address is 0 or a read fails.
// At a function's entry the word at the stack pointer is the second
// frame. The frames are the kernel's (TestWalkMatchesKernel): where a
// frame pointer is garbage that the kernel's walk reads, this one reads
// it too.
//
// The frames are stored, zero-terminated, in a BPF hash keyed by a
// 64-bit hash of them (FramesMapSpec; inserted only when absent), and
// the id is that hash: two different stacks share an id with
// probability about 2^-64 per pair, where the stack map compares the
// frames after a 32-bit hash. The walk needs WalkScratchSize bytes of
// scratch (a page and the frames) and WalkStackSlots BPF stack slots.
//
// # A walk with call frame information
//
// EmitCFIWalkID (x86-64, bpf_loop: kernel 5.17) unwinds in the program
// with the tables internal/stacks/unwind compiles from each object's
// .eh_frame and .debug_frame (unwind.Table), so code built without frame
// pointers gives whole stacks; it stores the same stack id record, hash
// and frames map as EmitWalkID. Three maps, filled from user space
// (unwind.BPFTables), hold them:
//
//	procs   hash, u32 tgid → u32 count, pad, then CFIMaxMappings of
//	        {u64 start, end, bias; u32 table; pad}, sorted by start
//	tables  array, table id → {u32 first row, u32 count}
//	rows    array of every table's 16-byte rows (unwind.Row)
//
// Frame 0 is the instruction pointer; a bpf_loop callback unwinds one
// frame per call, so the verifier checks its body once whatever
// MaxFrames is. A step finds the mapping of the PC by binary search
// (10 unrolled steps), then the row of PC - bias (a return address
// minus 1) in the table's rows (21 steps for 2^20 rows), computes the
// CFA from SP or the frame pointer plus the row's offset (PLT entries:
// plus 8 past the push), and reads the return address and the saved
// frame pointer with bpf_probe_read_user at their addresses in the
// live stack (together when adjacent). A mapping without a table, a PC
// no row covers and a process the map does not know step by frame
// pointer (at a function's entry with Entry: the word at SP). The walk
// ends at an outermost row, a return address of 0, a row it cannot
// follow, a failed read, a caller's SP not above the callee's (equal
// allowed for frame 0), a frame pointer in the first page, or
// MaxFrames; why is left in its scratch (CFIStopOffset). These are
// unwind.Unwinder.UnwindTables' steps: on the same hit both find the
// same frames, except that the program is not bounded by a stack copy.
// Its state lives in the per-CPU scratch (CFIWalkScratchSize), where the
// verifier tracks no values, so each search step reaches one state and
// is pruned. A program with the callback needs BTF function
// information (WithProgramFunc).
//
// # Registers and cost
//
// The emitted code reads the context (struct pt_regs) from register ctx
// and writes through register dst; both must be R6..R9 (they survive
// helper calls). R0..R5 are clobbered. Labels start with prefix.
// BenchmarkCapture in bench/ measures the cost of each capture per hit.
//
// # Kernel versions
//
// bpf_get_stack: 4.18; bpf_get_stackid for uprobes: 4.6; bpf_probe_read_user:
// 5.5; bpf_loop: 5.17. The depth of kernel walks is capped by kernel.perf_event_max_stack
// (127 by default).
//
// # Sources
//
// include/uapi/linux/bpf.h (bpf_get_stack, bpf_get_stackid, BPF_F_USER_STACK),
// kernel/bpf/stackmap.c, arch/x86/events/core.c perf_callchain_user and
// is_uprobe_at_func_entry, tools/perf/Documentation/perf-record.txt
// (--call-graph dwarf and its dump size).
//
// Everything here keeps no state and is safe for concurrent use.
package stackcap
