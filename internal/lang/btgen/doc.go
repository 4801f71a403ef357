// Package btgen generates BPF for usdtkit's bpftrace language: it turns a
// checked btlang.Program and, per probe block, the block's sites (object,
// file offset, semaphore, how to read each argument) into an
// ebpf.CollectionSpec and the metadata user space needs to read it back.
//
// # Model
//
//	btlang.Program (typed) + [][]Site ──Generate──► Program{Spec, Blocks, Maps, Printfs}
//
// Each probe block becomes one program "blockN" (type Kprobe, attach type
// AttachTraceUprobeMulti), attached to every site of the block with the
// site's index in Options.Sites[N] as cookie. Its prologue looks up the
// per-CPU "scratch" value, then a binary tree over the cookie jumps to the
// fetch code of the site (sites with equal fetches share it; a block whose
// sites all fetch alike never reads the cookie), which stores
// the arguments the block reads (and retval) in scratch with argread's own
// fetch code (argread.EmitFetch); then the predicate and the body run.
// A counting block (only @ = count() or @[probe] = count() into array
// maps, or an empty action) has none of that: per statement one inlined
// array lookup and an atomic add (count.go).
//
// Values: integers are 64-bit, computed in R0 with operands spilled to
// the stack; strings live in zero-padded scratch buffers whose offsets are
// known when generating (a string expression is its buffer), so string
// keys, values and == compare are unrolled 8-byte loads and stores.
// Map keys are built in scratch: 8 bytes per integer, the string's size
// rounded up to 8 per string; a map without key has one 8-byte zero key.
// The probe builtin is an 8-byte index in Program.Probes (the sites'
// Site.Probe names), stored per site by the fetch code.
//
// Maps: @m = int or string → a hash map; count/sum → a per-CPU hash of
// u64; min/max → per-CPU {value, set}; avg/stats → per-CPU {count,
// total}; hist/lhist → per-CPU array of buckets (layout.HistIndex,
// LinearRange.Index) per key. User space sums CPUs. A map without keys,
// or keyed only by probe (a dense index), is an array instead (per-CPU
// for aggregations: the verifier inlines its lookup, nothing is hashed or
// inserted) with an 8-byte "set" flag after each slot's value, so that
// slots never written, or cleared, print as absent keys (MapInfo.Array);
// a map named by delete() stays a hash, as a program cannot clear a
// per-CPU slot on every CPU. A failed insert (a
// full map) adds one to lost[LostUpdates]; a record the ring buffer
// refuses adds one to lost[LostEvents]: nothing is lost silently.
//
// Records (ring buffer "events"): u32 kind, u32 id, then the payload
// (RecEvent, RecStackPID and RecKey are described where they are sent):
// printf (RecPrintf, id = index in Program.Printfs, arguments as
// PrintfInfo.Args lays them out), exit (RecExit), print (RecPrint, id =
// index in Program.Prints), clear/zero (RecClear, RecZero; id = map
// index), time (RecTime, id = index in Program.Times) — handled in user
// space in the order they arrive, as bpftrace does.
//
// # Stacks
//
// A ustack map key is, on x86-64, the hash of the frames the program's
// own walk found (the frames kept in one BPF hash per frame count, the
// caller at a function's entry among them): by default with the objects'
// call frame information, in a bpf_loop whose callback unwinds a frame
// with the tables the runner put in three maps (stackcap.EmitCFIWalkID;
// frame pointers in processes and objects without a table), or with
// Options.StackKeys StackKeysFP by frame pointers alone
// (stackcap.EmitWalkID); elsewhere a stack map id (stackcap.EmitStackID, one
// BPF_MAP_TYPE_STACK_TRACE map per frame count) with the caller word read
// at a function's entry (Site.Entry); then the pid; a printf'd ustack is a
// copy of the stack with the registers (stackcap.EmitCopy, unwound in user
// space), or with a negative Options.StackCopy the frames
// (stackcap.EmitFrames). A process's first captured stack is announced
// with a RecStackPID record so user space remembers its mappings. A
// count() keyed by one stack alone counts most hits in stack slots, a
// per-CPU array indexed by the stack id (MapInfo.Slots), and the rest in
// its hash; user space adds both. The pid is a constant the loader puts
// in MapStackConf when every site is attached for one process. See
// stack.go. With Options.StackKeys StackKeysCopy, a count() or sum() map keyed by a
// stack has no BPF map: each hit sends a RecKey record with its key and
// a stack copy, which user space unwinds and counts (keyrec.go).
//
// Each hit of `@[ustack] = count()` costs the stack walk (on x86-64 with
// call frame information, per frame two binary searches, of the
// process's mappings and of the object's rows, and one or two reads of
// the stack; with frame pointers one read of a page of stack, more for a
// stack spanning pages; either way one lookup of the frames' hash;
// elsewhere bpf_get_stackid and one read of
// the caller word at an entry whose walk misses it), the pid helper call
// only when the program traces more than one process, and one inlined
// array lookup (a hash lookup for the keys slots do not hold): bpftrace
// 0.17 calls bpf_get_stackid, whose walk takes a fault at the end of
// every stack, then the pid helper, and looks the key up and updates it
// on every hit.
//
// # Semantics
//
// As bpftrace 0.17: / % and >> are unsigned whatever the operands (LLVM
// udiv, urem, lshr), division by zero gives 0; comparisons are signed
// when both operands are; && and || short-circuit and give 0 or 1;
// missing map keys read 0 or ""; str() of a faulting address is ""
// (with Options.CopyStr only an address that is not mapped, see
// strread.go);
// str(x, n) reads at most n characters; hist() buckets compare signed
// whatever the type (bpftrace's log2).
//
// # Go functions
//
// A site may read values by name (Site.Named, args.NAME: Go parameters at
// the entry, results at a RET) and the goroutine id (Site.GoID, goid). A
// block keeps those it reads in scratch space of its own (an integer in 8
// bytes, a Go string in 16: data pointer and length); a Go string
// expression copies min(length, size-1) bytes into a zeroed
// buffer, so it is NUL-terminated and cut as str() cuts. A Go function's
// return is a plain probe on each RET (Return false) whose Ret reads the
// first result: retval needs Ret, not Return.
//
// # BEGIN, END and interval
//
// A block of one BEGIN, END or interval probe has no sites: its program
// is attached by the runner to an assembly function of the runner's own
// binary (as bpftrace runs BEGIN) and runs only when that function's
// first stack argument (StubFetch) is the block's Token, so programs of
// other runners in the same process do not run it. Options.Sites for such
// a block is ignored.
//
// # Profile
//
// A block of one profile probe (profile:hz:N, profile:s|ms|us:N) has no
// sites either: its program is of type BPF_PROG_TYPE_PERF_EVENT (Block.Kind
// ProbeProfile, Block.Freq or Block.Period), which the runner attaches to
// a CPU clock event on every CPU. It skips samples of processes not in
// MapProfilePIDs, and reads ustack from the task's user registers
// (bpf_task_pt_regs), not the interrupted ones, which are the kernel's
// during a system call. See profile.go.
//
// # Not supported yet
//
// Generate rejects, with "file:line:col: … is not supported yet", other
// probe types, BEGIN/END/interval/profile together with other probes in one
// block, tuples as values, ustack as a map value or variable, func,
// probe as a map value,
// a print() top or divisor that is not a literal. It never compiles a program to something else.
//
// # Preemption
//
// The per-CPU scratch value is shared by every program on a CPU, and
// uprobe programs run with migration disabled but may be preempted. A
// program marks the value busy while it runs; a hit that finds it busy (a
// task preempted the program and hit a probe on the same CPU) is skipped
// and counted in lost[LostNested], so it can never see another hit's
// strings or keys. A sleepable block (Options.CopyStr) keeps its CPU
// while it sleeps on a page fault (migration stays disabled), and hits on
// that CPU meanwhile are skipped likewise. Counting blocks use no scratch
// and count such hits too: they add atomically, as does every block to a
// map a counting block counts into (count.go).
//
// Generate keeps no state and is safe for concurrent use; a Program is
// plain data.
package btgen
