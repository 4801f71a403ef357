package btgen

import (
	"debug/elf"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"

	"github.com/usdtkit/usdtkit/internal/bpf/argread"
	"github.com/usdtkit/usdtkit/internal/bpf/stackcap"
	"github.com/usdtkit/usdtkit/internal/lang/btlang"
	"github.com/usdtkit/usdtkit/internal/lang/layout"
	"github.com/usdtkit/usdtkit/internal/lang/printf"
)

// Names of the maps every program has.
const (
	MapScratch = "scratch" // per-CPU array, one entry: arguments, strings, keys, records
	MapEvents  = "events"  // ring buffer of records
	MapLost    = "lost"    // per-CPU array: [LostEvents], [LostUpdates], [LostNested]
	MapStart   = "start"   // array of two u64: the runner's start time for elapsed (CLOCK_MONOTONIC ns), cpid
)

// Indexes in MapLost, as in argread.
const (
	LostEvents  = argread.LostEvents
	LostUpdates = argread.LostUpdates
	// LostNested counts hits skipped because a program was already using
	// the CPU's scratch value (it was preempted by the task that hit).
	LostNested = 2
)

// Record kinds: the first u32 of every ring buffer record; the second is
// the printf or map index.
const (
	RecPrintf = 1
	RecExit   = 2
	RecPrint  = 3
	RecClear  = 4
	RecZero   = 5
	RecTime   = 6 // id: index in Program.Times
)

// Site is one attach point of a probe block: a file offset in an object,
// with how to read the block's arguments there.
type Site struct {
	// Path is where the kernel finds the object: "/proc/self/fd/N" of a
	// file the caller keeps open until attached, or a path.
	Path string
	// Object is the object as users know it, for messages; Path when
	// empty.
	Object string
	// Offset is the site's file offset; RefCtrOffset its semaphore's
	// file offset, 0 for none.
	Offset, RefCtrOffset uint64
	// Return attaches a return probe (uretprobe) at a function's entry.
	// (A Go function's return is a plain probe at each RET instruction,
	// with Ret set: see NamedFetch.)
	Return bool
	// PID, when not 0, is the process the site was found in: it is
	// attached for that process only.
	PID int
	// Args says how to read arg0, arg1… at this site.
	Args []argread.Fetch
	// Bytes has bit i set when arg i is the address of a Go string's or
	// slice's bytes and arg i+1 their length: a block's Event reads
	// min(length, StrLen-2) bytes (compared unsigned, NULs are data)
	// into arg i's string slot instead of a NUL-terminated string (see
	// Event). Programs ignore it.
	Bytes uint16
	// Ret reads the return value at a return site (Kind 0 for none).
	Ret argread.Fetch
	// Named says how to read args.NAME at this site (Go functions'
	// parameters at the entry, results at a RET).
	Named []NamedFetch
	// GoID reads the goroutine id, the goid builtin (Kind 0: the site
	// cannot read it).
	GoID argread.Fetch
	// Entry says the site is a function's first instruction (a symbol's
	// start; ignored for a Return site): ustack there also reads the
	// return address at the stack pointer, the immediate caller, which
	// the frame-pointer walk misses (see stack.go).
	Entry bool
	// Probe is the probe's full name as bpftrace prints it
	// ("usdt:/bin/app:prov:name", "uprobe:/lib/libc.so.6:malloc"): the
	// value of the probe builtin. Empty: the block's probe as written,
	// when the block has one probe.
	Probe string
	// Func is the name of the function the site probes ("malloc",
	// "main.(*Server).handle"): the value of the func builtin, kept in
	// Program.Probes as probe names are. Empty: the block cannot read
	// func.
	Func string
}

// Options are what Generate needs besides the program.
type Options struct {
	// Machine is the traced objects' architecture; 0 means x86-64.
	Machine elf.Machine
	// Sites has, per probe block of the program in order, its sites; the
	// attach cookie of a site is its index in its block's list.
	Sites [][]Site
	// MaxEntries bounds every map; 0 means 10240.
	MaxEntries int
	// RingSize is the ring buffer's size in bytes (a power of two
	// multiple of the page size); 0 means 1 MiB, KeyRingSize for a
	// program with maps counted in user space (StackKeysCopy), and one
	// page for a program that sends no record (it only counts in maps).
	RingSize int
	// Events has, per probe block (nil or shorter: none), the events the
	// block sends after its body (see Event).
	Events []*Event
	// StackCopy is how many bytes of the user stack a printf'd ustack
	// copies for unwinding in user space (stackcap.CopyOptions.Size);
	// 0 means DefaultStackCopy; negative: frames of the kernel's
	// frame-pointer walk instead, as bpftrace (see stack.go).
	StackCopy int
	// CopyStr is the BTF type id of the kfunc bpf_copy_from_user_str in
	// the running kernel (features.SleepableCopyStr), 0 if it has none
	// or the caller wants bpftrace's reads. When set, blocks that read
	// user strings are sleepable and read them faulting pages in (see
	// strread.go and Block.Sleepable).
	CopyStr uint32
	// StackKeys is how the ustack key fields of maps are captured;
	// the zero value, StackKeysCFI, walks them in the program with the
	// objects' call frame information (see stack.go).
	StackKeys StackKeys
}

// StackKeys is how the ustack key fields of maps are captured
// (Options.StackKeys).
type StackKeys int

const (
	// StackKeysCFI walks the stack in the program with the call frame
	// information of the objects the runner puts in the maps named
	// stackcap.DefaultCFIProcsMap, DefaultCFITablesMap and
	// DefaultCFIRowsMap (stackcap.EmitCFIWalkID; the runner replaces the
	// spec's small maps with those of an unwind.BPFTables), and
	// with frame pointers in processes and objects those maps do not
	// have, asking for those processes in DefaultCFIWantedMap: stacks keep their frames through code built without frame
	// pointers. Needs bpf_loop (Linux 5.17). x86-64 only: elsewhere it
	// is StackKeysFP.
	StackKeysCFI StackKeys = iota
	// StackKeysFP is the frame-pointer walk: the program's own on
	// x86-64 (stackcap.EmitWalkID), the kernel's (bpf_get_stackid)
	// elsewhere, as bpftrace.
	StackKeysFP
	// StackKeysCopy captures the ustack key fields of count() and sum()
	// maps as printf'd stacks are by default: each hit sends a RecKey
	// record holding the registers and a copy of the top of the user
	// stack (StackCopy bytes, DefaultStackCopy when StackCopy is not
	// positive), which user space unwinds with each object's CFI and
	// counts (see keyrec.go). Such maps have no BPF map (MapInfo.User).
	// Other maps with a ustack key, a key of two stacks and delete() of
	// such a map are then refused.
	StackKeysCopy
)

// Program is a generated program: plain data, safe for concurrent reads.
type Program struct {
	Spec *ebpf.CollectionSpec
	// Settings are the program's config block's (btlang.Program's).
	Settings btlang.Settings
	Blocks   []Block
	// Maps are the program's maps in the order of btlang.Program.Maps.
	Maps []MapInfo
	// Printfs are the printf calls, indexed by a RecPrintf record's id.
	Printfs []PrintfInfo
	// Prints are the print() calls, indexed by a RecPrint record's id.
	Prints []PrintInfo
	// Times are the time() calls' strftime formats, indexed by a RecTime
	// record's id.
	Times []string
	// Strftimes are the strftime() calls' formats, indexed by the id a
	// timestamp value holds (TimestampSize).
	Strftimes []string
	// Probes are the names the probe and func builtins take, indexed by
	// the id stored in map keys and printf records.
	Probes []string
	// ScratchSize is the per-CPU scratch value's size.
	ScratchSize int
	// Events are the blocks' events, indexed by a RecEvent record's id.
	Events []EventInfo
	// CPID: the program reads cpid, the PID of the command the runner
	// started, which it must write in MapStart's second slot
	// (btrun.Options.CPID).
	CPID bool
}

// Block is one probe block's program and sites.
type Block struct {
	Prog  string // name in Spec.Programs
	Sites []Site
	// Kind is ProbeBegin, ProbeEnd or ProbeInterval for a block that user
	// space runs (see StubFetch), ProbeProfile for a block of
	// BPF_PROG_TYPE_PERF_EVENT the runner attaches to a CPU clock event
	// on every CPU (see profile.go), else 0.
	Kind btlang.ProbeKind
	// Token is the value a special block's program requires in its stub's
	// argument; other values (other programs' calls) exit at once.
	Token uint64
	// Period is an interval block's period, or a profile block's
	// sample period (profile:s|ms|us:N); Freq a profile block's samples
	// per second (profile:hz:N), 0 for a period.
	Period time.Duration
	Freq   uint64
	// Sleepable: the block's program is loaded with BPF_F_SLEEPABLE and
	// reads user strings with bpf_copy_from_user_str, so a string in a
	// page not present yet is read, not a fault (Options.CopyStr).
	Sleepable bool
	// CouldSleep: without Options.CopyStr, the block reads user memory
	// that it would read faulting pages in with it (it would be
	// Sleepable). A caller finds out whether the kernel has the kfunc
	// only for programs that have such a block.
	CouldSleep bool
}

// StubFetch says how a special (BEGIN, END, interval) block reads the
// token its runner passes: the first 8-byte stack argument at the entry of
// a Go assembly function (ABI0), [SP+8] on x86-64. The runner attaches the
// block's program to such a function of its own binary and calls it with
// the block's Token.
func StubFetch(m elf.Machine) (argread.Fetch, error) {
	if m != elf.EM_X86_64 {
		return argread.Fetch{}, fmt.Errorf("BEGIN, END and interval probes on %v: %w", m, ebpf.ErrNotSupported)
	}
	sp, err := argread.PtRegs(m, "rsp")
	if err != nil {
		return argread.Fetch{}, err
	}
	return argread.Fetch{Kind: argread.FetchMem, Size: 8, HasBase: true, Reg: argread.Reg{Off: sp, Width: 8}, Offset: 8}, nil
}

// MapInfo says how a language map is stored in its BPF map.
type MapInfo struct {
	Map    *btlang.Map
	BPF    string // name in Spec.Maps
	PerCPU bool
	// Keys are the key fields and KeyOffs their offsets in the BPF key of
	// KeySize bytes; a map without keys has one 8-byte zero key. A probe
	// key (KeyProbe[i]) is stored as the 8-byte index in Program.Probes
	// and printed as the name (a KeyString field).
	Keys     []layout.KeyField
	KeyProbe []bool
	// KeyUsym[i] marks a usym() key field: the address, then the
	// process (8 bytes each), printed as the function's name (a
	// KeyString field).
	KeyUsym []bool
	// KeyBuf[i] marks a buffer key field (buf()): its length, then its
	// bytes (BufSize), printed as bpftrace prints a buffer.
	KeyBuf []bool
	// KeyTime[i] marks a strftime() key field (TimestampSize bytes),
	// printed by its format.
	KeyTime []bool
	// KeyStacks[i] says how stack key field i (layout.KeyStack,
	// StackKeySize bytes) was captured; nil for the other fields.
	KeyStacks []*StackInfo
	KeyOffs   []int
	KeySize   int
	ValueSize int
	// ValueC describes a value that is a C struct, union or array (its
	// bytes), nil otherwise.
	ValueC *layout.CValue
	// ValueName: the value (of a map without aggregation) is a probe or
	// func name id, 8 bytes, printed as the name.
	ValueName bool
	// ValueBuf: the value is a buffer (buf()), its length then its
	// bytes, printed as bpftrace prints a buffer.
	ValueBuf bool
	// ValueTime: the value is a strftime() value (TimestampSize bytes),
	// printed by its format.
	ValueTime bool
	// ValueUsym: the value is a usym(): the address, then the process
	// (8 bytes each), printed as the function's name.
	ValueUsym bool
	// Buckets is hist's or lhist's bucket count.
	Buckets int
	// Array: the map is a BPF array (per-CPU when PerCPU) of u32 keys
	// (KeySize 4): slot 0 for a map without keys, the index in
	// Program.Probes for a map keyed only by probe. Each slot's value
	// ends with an 8-byte flag at SetOff (in ValueSize), non-zero (per
	// CPU) once the slot was written: a slot never written, or cleared,
	// is not printed, as a hash map's absent key.
	Array  bool
	SetOff int
	// Slots, for a count() keyed by one stack alone, is the per-CPU
	// array of stack slots in Spec.Maps that takes most of its counts
	// (see stack.go); "" for other maps. The map's entries are the BPF
	// hash's plus the slots' (DecodeSlot).
	Slots string
	// User: the map has no BPF map (BPF names none in Spec.Maps); each
	// hit sends a RecKey record (KeyRecord) whose stack user space
	// unwinds, and user space keeps the counts (StackKeysCopy).
	User bool
}

// PrintInfo is one print(@m[, top[, div]]) call: the map's index in
// Program.Maps and the constant top and divisor (0: all, undivided).
type PrintInfo struct {
	Map int
	Top int
	Div uint32
}

// PrintfInfo is one printf call: its format and where its arguments are
// in a RecPrintf record (after the 8-byte header).
type PrintfInfo struct {
	Format *printf.Format
	Args   []RecordArg
	Size   int
	// Value: print(value) of Args[0], printed as btprint.AppendValue
	// prints it, an integer signed when ValueSigned.
	Value, ValueSigned bool
	// Action is what the formatted text is: printf's output, or the
	// file cat() prints or the command system() runs.
	Action PrintfAction
}

// PrintfAction is what a RecPrintf record's formatted text is for.
type PrintfAction uint8

const (
	// ActionPrintf prints the text (printf, print of a value).
	ActionPrintf PrintfAction = iota
	// ActionCat prints the file the text names (cat()).
	ActionCat
	// ActionSystem runs the text with the shell and prints what it
	// writes on its standard output (system(), with --unsafe).
	ActionSystem
)

// RecordArg is one printf argument in a record: an integer of 8 bytes or
// a zero-padded string of Size bytes at Off.
type RecordArg struct {
	Off    int
	String bool
	Size   int
	// Probe: an 8-byte index in Program.Probes, printed with %s.
	Probe bool
	// Usym: usym()'s address and process (16 bytes), printed as the
	// function's name.
	Usym bool
	// Username: a user id (8 bytes), printed as the user's name.
	Username bool
	// Tuple is a tuple's type, laid out as TupleLayout says (Size
	// bytes); nil for the other kinds.
	Tuple *btlang.Type
	// Buf: a buffer, its length then its bytes (Size bytes, BufSize).
	Buf bool
	// Time: a strftime() value (TimestampSize bytes).
	Time bool
	// Inet: an ntop() address (InetSize bytes): the address family (8
	// bytes), then the address's bytes (16, IPv4's in the first 4).
	Inet bool
	// Stack: a ustack, stackcap's frames layout of Size bytes, then the
	// 8-byte pid.
	Stack *StackInfo
	// C: a C struct, union or array of Size bytes, laid out as C says
	// (print() of one).
	C *layout.CValue
}

// Limits.
const (
	// stackReserved is the top of the stack, R10-16..R10-1, kept for
	// short-lived temporaries (the lost counter's key at -4, elapsed's
	// start at -16); variables and spills live below.
	stackReserved = 16
	maxScratch    = 32 << 10
	argsOff       = 0
	retOff        = 8 * argread.MaxArgs
	probeOff      = retOff + 8
	busyOff       = probeOff + 8 // non-zero while a program uses the scratch value
	lastPIDOff    = busyOff + 8  // the process whose stack this CPU last checked (stack.go)
	zeroOff       = lastPIDOff + 8
)

func round8(n int) int { return (n + 7) &^ 7 }

// Generate compiles a checked program to BPF: one program per probe block
// (type Kprobe, attach type AttachTraceUprobeMulti), attached to the
// block's sites with their index as cookie. It runs Support first: what
// cannot be built yet is Support's *btlang.Error ("file:line:col: … not
// supported yet").
func Generate(prog *btlang.Program, opts *Options) (*Program, error) {
	p, err := Support(prog, opts)
	if err != nil {
		return nil, err
	}
	return p.Generate()
}

// withDefaults returns opts with Generate's defaults filled in, or an
// error for options no program can be built with.
func withDefaults(prog *btlang.Program, opts *Options) (Options, error) {
	if opts == nil {
		opts = &Options{}
	}
	o := *opts
	o.Sites = append([][]Site(nil), opts.Sites...)
	if o.Machine == 0 {
		o.Machine = elf.EM_X86_64
	}
	if o.MaxEntries == 0 {
		o.MaxEntries = argread.DefaultMaxEntries
	}
	if o.RingSize == 0 {
		o.RingSize = defaultRingSize
	}
	if o.RingSize < 4096 || o.RingSize > argread.MaxRingSize || o.RingSize&(o.RingSize-1) != 0 {
		return o, fmt.Errorf("btgen: Options.RingSize %d is not a power of two from 4096 to %d", o.RingSize, argread.MaxRingSize)
	}
	if o.MaxEntries < 1 {
		return o, fmt.Errorf("btgen: Options.MaxEntries %d is not positive", o.MaxEntries)
	}
	if o.StackCopy == 0 {
		o.StackCopy = DefaultStackCopy
	}
	if o.StackKeys < StackKeysCFI || o.StackKeys > StackKeysCopy {
		return o, fmt.Errorf("btgen: Options.StackKeys %d is not StackKeysCFI, StackKeysFP or StackKeysCopy", o.StackKeys)
	}
	if len(o.Sites) != len(prog.Blocks) {
		return o, fmt.Errorf("btgen: %d site lists for %d probe blocks", len(o.Sites), len(prog.Blocks))
	}
	return o, nil
}

// defaultRingSize is the ring buffer's size when Options.RingSize is 0.
const defaultRingSize = 1 << 20

// Generate builds the program the plan was made for (see Generate).
func (p *Plan) Generate() (*Program, error) {
	prog, o := p.prog, p.opts
	o.Sites = append([][]Site(nil), p.opts.Sites...)
	defaultRing := p.defaultRing
	out := &Program{Spec: &ebpf.CollectionSpec{Maps: map[string]*ebpf.MapSpec{}, Programs: map[string]*ebpf.ProgramSpec{}}, Settings: prog.Settings}
	mapIdx := p.mapIdx
	zeroSize := 8
	for _, mi := range p.maps {
		out.Maps = append(out.Maps, mi)
		if mi.User {
			continue
		}
		zeroSize = max(zeroSize, mi.ValueSize)
		typ := ebpf.Hash
		switch {
		case mi.Array && mi.PerCPU:
			typ = ebpf.PerCPUArray
		case mi.Array:
			typ = ebpf.Array
		case mi.PerCPU:
			typ = ebpf.PerCPUHash
		}
		out.Spec.Maps[mi.BPF] = &ebpf.MapSpec{Name: mi.BPF, Type: typ, KeySize: uint32(mi.KeySize), ValueSize: uint32(mi.ValueSize), MaxEntries: uint32(o.MaxEntries)}
	}
	if defaultRing && slices.ContainsFunc(out.Maps, func(mi MapInfo) bool { return mi.User }) {
		o.RingSize = KeyRingSize
	}
	scratch := zeroOff + zeroSize
	token := rand.Uint64() &^ 0xffff
	counts, isCount, atomic := p.counts, p.isCount, p.atomic
	for i, b := range prog.Blocks {
		kind, period, err := special(b)
		if err != nil {
			return nil, err
		}
		if kind == btlang.ProbeProfile {
			if o.Machine != elf.EM_X86_64 {
				return nil, internal(b.At, "profile probes on %v", o.Machine)
			}
			o.Sites[i] = nil
		} else if kind != 0 {
			stub, err := StubFetch(o.Machine)
			if err != nil {
				return nil, &btlang.Error{Pos: b.At, Msg: err.Error()}
			}
			o.Sites[i] = []Site{{Args: []argread.Fetch{stub}}}
		}
		g := &gen{special: kind, token: token + uint64(i), opts: &o, out: out, mapIdx: mapIdx, block: b, sites: o.Sites[i], next: zeroOff + zeroSize, stack: stackReserved, atomic: atomic}
		if err := g.setEvent(i); err != nil {
			return nil, err
		}
		var insns asm.Instructions
		if isCount[i] {
			insns, err = g.countProgram(counts[i])
		} else {
			insns, err = g.program()
		}
		if err != nil {
			return nil, err
		}
		scratch = max(scratch, g.next)
		name := fmt.Sprintf("block%d", i)
		if len(g.callbacks) > 0 {
			// The CFI walks' bpf_loop callbacks are functions after
			// the program's last instruction; a program with
			// functions needs BTF function information.
			insns[0] = stackcap.WithProgramFunc(insns[0], name)
			insns = append(insns, g.callbacks...)
		}
		ps := &ebpf.ProgramSpec{
			Name: name, Type: ebpf.Kprobe, AttachType: ebpf.AttachTraceUprobeMulti,
			License: "GPL", Instructions: insns, Flags: g.programFlags(),
		}
		blk := Block{Prog: name, Sites: o.Sites[i], Kind: kind, Period: period, Sleepable: g.copied, CouldSleep: g.couldSleep}
		switch {
		case kind == btlang.ProbeProfile:
			ps.Type, ps.AttachType = ebpf.PerfEvent, ebpf.AttachNone
			blk.Sites = nil
			blk.Freq, blk.Period, _ = profileRate(b.Probes[0])
		case kind != 0:
			blk.Sites = nil
			blk.Token = token + uint64(i)
		}
		out.Spec.Programs[name] = ps
		out.Blocks = append(out.Blocks, blk)
	}
	for _, mi := range out.Maps {
		if mi.Array {
			// One slot, or one per probe name (known once every block
			// is generated).
			n := 1
			if len(mi.Keys) > 0 {
				n = max(1, len(out.Probes))
			}
			out.Spec.Maps[mi.BPF].MaxEntries = uint32(n)
		}
	}
	if slices.ContainsFunc(out.Blocks, func(b Block) bool { return b.Kind == btlang.ProbeProfile }) {
		out.Spec.Maps[MapProfilePIDs] = &ebpf.MapSpec{Name: MapProfilePIDs, Type: ebpf.Hash, KeySize: 4, ValueSize: 4, MaxEntries: maxProfilePIDs}
	}
	out.addStackMaps(&o)
	if scratch > maxScratch {
		return nil, fmt.Errorf("btgen: the program needs %d bytes of scratch space, more than %d", scratch, maxScratch)
	}
	out.ScratchSize = round8(scratch)
	out.Spec.Maps[MapScratch] = &ebpf.MapSpec{Name: MapScratch, Type: ebpf.PerCPUArray, KeySize: 4, ValueSize: uint32(out.ScratchSize), MaxEntries: 1}
	if defaultRing && !referencesMap(out.Spec, MapEvents) {
		// No program sends a record (a count-only program): the ring
		// buffer stays, for the reader, but at its least size, not
		// 1 MiB of locked memory per tracer (the agent runs one per
		// traced process).
		o.RingSize = minRingSize
	}
	out.Spec.Maps[MapEvents] = &ebpf.MapSpec{Name: MapEvents, Type: ebpf.RingBuf, MaxEntries: uint32(o.RingSize)}
	out.Spec.Maps[MapStart] = &ebpf.MapSpec{Name: MapStart, Type: ebpf.Array, KeySize: 4, ValueSize: 8, MaxEntries: 2}
	out.Spec.Maps[MapLost] = &ebpf.MapSpec{Name: MapLost, Type: ebpf.PerCPUArray, KeySize: 4, ValueSize: 8, MaxEntries: 3}
	return out, nil
}

// minRingSize is the least ring buffer size the kernel takes: one page of
// the host that loads the program.
var minRingSize = os.Getpagesize()

// referencesMap reports whether an instruction of spec's programs refers
// to the map named name.
func referencesMap(spec *ebpf.CollectionSpec, name string) bool {
	for _, p := range spec.Programs {
		for _, ins := range p.Instructions {
			if ins.Reference() == name {
				return true
			}
		}
	}
	return false
}

// internal returns the error of Generate meeting what Support refuses: a
// bug of this package (Support let it through), not of the program.
func internal(pos btlang.Pos, format string, args ...any) error {
	return fmt.Errorf("btgen: internal error at %s: %s, which Support refuses", pos, fmt.Sprintf(format, args...))
}

// deletedMaps returns the maps a delete() names: they stay hash maps, as
// a BPF program cannot remove a per-CPU array's slot on every CPU.
func deletedMaps(prog *btlang.Program) map[*btlang.Map]bool {
	del := map[*btlang.Map]bool{}
	for _, b := range prog.Blocks {
		btlang.Inspect(b, func(n btlang.Node) bool {
			if c, ok := n.(*btlang.Call); ok && c.Name == "delete" && len(c.Args) > 0 {
				if r, ok := c.Args[0].(*btlang.MapRef); ok && r.Map != nil {
					del[r.Map] = true
				}
			}
			return true
		})
	}
	return del
}

// maxArrayValue bounds an array map's value so that its set flag's offset
// fits a load's 16-bit offset.
const maxArrayValue = 1 << 14

// mapInfo lays out map m, the i-th; array allows an array map for a map
// without keys or keyed only by probe (a small dense index).
func mapInfo(m *btlang.Map, i int, array bool) (MapInfo, error) {
	mi := MapInfo{Map: m, BPF: fmt.Sprintf("m%d", i)}
	off := 0
	for _, k := range m.Keys {
		f, size, name := layout.KeyField{Kind: layout.KeyString}, 0, false
		var stack *StackInfo
		var flag *[]bool // KeyUsym, KeyTime or KeyBuf, for a key of that kind
		switch k.Kind {
		case btlang.KindRecord, btlang.KindArray:
			n := btlang.CSize(k)
			f, size = layout.KeyField{Kind: layout.KeyValue, Size: n, Value: CValue(k)}, round8(n)
		case btlang.KindInt, btlang.KindProbe, btlang.KindSym, btlang.KindPtr:
			// probe and func are name ids (Program.Probes).
			name = k.Kind == btlang.KindProbe || k.Kind == btlang.KindSym
			if !name {
				f.Kind = layout.KeyInt
			}
			size = 8
		case btlang.KindString:
			f.Size, size = k.Size, round8(k.Size)
		case btlang.KindUsym:
			flag, size = &mi.KeyUsym, 16
		case btlang.KindTimestamp:
			// Printed by its format (KeyString).
			flag, size = &mi.KeyTime, TimestampSize
		case btlang.KindBuf:
			// Printed as bpftrace prints a buffer (KeyString).
			f.Size, flag, size = BufSize(k), &mi.KeyBuf, BufSize(k)
		case btlang.KindStack:
			f.Kind, stack, size = layout.KeyStack, stackInfo(k), StackKeySize
		default:
			return mi, unsupported(m.Pos, "a %s key of %s", k, m.Name)
		}
		mi.Keys = append(mi.Keys, f)
		mi.KeyOffs = append(mi.KeyOffs, off)
		mi.KeyProbe = append(mi.KeyProbe, name)
		mi.KeyStacks = append(mi.KeyStacks, stack)
		if flag != nil {
			for len(*flag) < len(mi.Keys)-1 {
				*flag = append(*flag, false)
			}
			*flag = append(*flag, true)
		}
		off += size
	}
	mi.KeySize = max(off, 8)
	switch m.Agg {
	case btlang.AggNone:
		switch m.Value.Kind {
		case btlang.KindInt, btlang.KindPtr:
			mi.ValueSize = 8
		case btlang.KindRecord, btlang.KindArray:
			mi.ValueSize, mi.ValueC = round8(btlang.CSize(m.Value)), CValue(m.Value)
		case btlang.KindString:
			mi.ValueSize = round8(m.Value.Size)
		case btlang.KindProbe, btlang.KindSym:
			mi.ValueSize, mi.ValueName = 8, true
		case btlang.KindBuf:
			mi.ValueSize, mi.ValueBuf = BufSize(m.Value), true
		case btlang.KindTimestamp:
			mi.ValueSize, mi.ValueTime = TimestampSize, true
		case btlang.KindUsym:
			mi.ValueSize, mi.ValueUsym = 16, true
		case btlang.KindTuple:
			if !tupleElems(m.Value) {
				return mi, unsupported(m.Pos, "a %s value of %s", m.Value, m.Name)
			}
			_, mi.ValueSize = TupleLayout(m.Value)
		default:
			return mi, unsupported(m.Pos, "a %s value of %s", m.Value, m.Name)
		}
	case btlang.AggCount, btlang.AggSum:
		mi.PerCPU, mi.ValueSize = true, 8
	case btlang.AggMin, btlang.AggMax, btlang.AggAvg, btlang.AggStats:
		// min/max: {value, set}; avg/stats: {count, total}.
		mi.PerCPU, mi.ValueSize = true, 16
	case btlang.AggHist:
		mi.PerCPU, mi.Buckets = true, layout.HistBucketsBT
		mi.ValueSize = 8 * mi.Buckets
	case btlang.AggLhist:
		r := layout.LinearRange{Min: m.LhistMin, Max: m.LhistMax, Step: m.LhistStep}
		mi.PerCPU, mi.Buckets = true, r.Buckets()
		mi.ValueSize = 8 * mi.Buckets
	default:
		return mi, unsupported(m.Pos, "%s()", m.Agg)
	}
	if array && hasSlots(m) {
		mi.Slots = mi.BPF + "slots"
	}
	if array && (len(m.Keys) == 0 || len(m.Keys) == 1 && m.Keys[0].Kind == btlang.KindProbe) && mi.ValueSize < maxArrayValue {
		mi.Array, mi.KeySize, mi.SetOff = true, 4, mi.ValueSize
		mi.ValueSize += 8
	}
	return mi, nil
}

// gen emits one probe block's program.
//
// Registers: R6 the context, R7 the per-CPU scratch value, R9 fault bits
// of the argument fetches; integer expressions leave their value in R0,
// string expressions live in scratch buffers known at compile time. The
// stack holds the block's integer variables and spilled operands.
type gen struct {
	special btlang.ProbeKind
	token   uint64
	opts    *Options
	out     *Program
	mapIdx  map[*btlang.Map]int
	block   *btlang.ProbeBlock
	sites   []Site
	event   *eventGen // the block's event, or nil
	insns   asm.Instructions
	pending []string
	nlabel  int
	next    int // next free scratch byte
	stack   int // bytes of stack in use (positive)
	vars    map[*btlang.Variable]varLoc
	err     error
	// named and goidOff are where args.NAME values and goid are kept in
	// scratch (goidOff -1: not read); see layoutNamed.
	named   map[string]namedSlot
	goidOff int
	// loops are the labels of the while loops being emitted, innermost
	// last: break jumps to end, continue to top.
	loops []loopLabels
	// funcOff is the scratch offset of the func builtin's name id (-1:
	// the block does not read func).
	funcOff int
	// entryOff is the scratch offset of the site's entry flag for
	// ustack (-1: the block reads no stack); see stack.go.
	entryOff int
	// walkStack is the BPF stack offset of the walk's slots
	// (stackcap.WalkStackSlots, reserved with the entry flag when the
	// machine walks in the program); walkScratch, the scratch offset of
	// the walk's area per frame count, allocated at its first stack key.
	walkStack   int16
	walkScratch map[int]int
	// callbacks are the functions of the block's CFI walks
	// (stackcap.EmitCFIWalkID), appended after its program.
	callbacks asm.Instructions
	// ctxSlot is, in a profile block that reads ustack, the BPF stack
	// slot of the context, R6 holding the task's user registers, at
	// ptRegsIP their instruction pointer (profile.go).
	ctxSlot  int16
	ptRegsIP int16
	// sleepable: user strings may be read with bpf_copy_from_user_str;
	// copied: they were, the program is sleepable; couldSleep: they
	// would have been with Options.CopyStr (strread.go).
	sleepable, copied, couldSleep bool
	// atomic are the maps counting blocks count into: every block adds
	// to them atomically (count.go).
	atomic map[*btlang.Map]bool
}

type loopLabels struct{ top, end string }

type varLoc struct {
	stack int16 // integer: R10+stack
	off   int   // string: scratch offset
	size  int
}

func (g *gen) emit(ins ...asm.Instruction) {
	if len(g.insns)+len(ins) > maxInsns {
		g.fail(&btlang.Error{Pos: g.block.At, Msg: fmt.Sprintf("the block's program has more than %d instructions, the kernel's limit; make it smaller (unroll repeats its body)", maxInsns)})
		return
	}
	for _, in := range ins {
		for _, l := range g.pending {
			if sym := in.Symbol(); sym != "" {
				// Two labels on one instruction: add a no-op carrier.
				g.insns = append(g.insns, nop().WithSymbol(l))
				continue
			}
			in = in.WithSymbol(l)
		}
		g.pending = nil
		g.insns = append(g.insns, in)
	}
}

func (g *gen) label(l string) { g.pending = append(g.pending, l) }

func (g *gen) newLabel(what string) string {
	g.nlabel++
	return fmt.Sprintf("%s_%d", what, g.nlabel)
}

func (g *gen) fail(err error) {
	if g.err == nil {
		g.err = err
	}
}

// alloc reserves n bytes (rounded to 8) of scratch space.
func (g *gen) alloc(n int) int {
	off := g.next
	g.next += round8(n)
	return off
}

// push reserves an 8-byte stack slot and returns its offset from R10.
func (g *gen) push() int16 {
	g.stack += 8
	if g.stack > 512 {
		g.fail(&btlang.Error{Pos: g.block.At, Msg: "the block needs more than 512 bytes of BPF stack; split its expressions"})
		g.stack = stackReserved + 8
	}
	return int16(-g.stack)
}

func (g *gen) pop() { g.stack -= 8 }

// checkSites checks that the block has not too many sites.
func (g *gen) checkSites() error {
	if len(g.sites) > argread.MaxSites {
		return internal(g.block.At, "%d sites", len(g.sites))
	}
	return nil
}

// program emits the block's program: prologue, argument fetch per site,
// predicate and body.
func (g *gen) program() (asm.Instructions, error) {
	b := g.block
	profile := g.special == btlang.ProbeProfile
	if !profile {
		if err := g.checkSites(); err != nil {
			return nil, err
		}
		if len(g.sites) == 0 {
			// Every probe of the block was left out (it matches
			// nothing): a program that is never attached, whose maps
			// the other blocks still have.
			return asm.Instructions{asm.Mov.Imm(asm.R0, 0), asm.Return()}, nil
		}
	}
	u := blockUses(b)
	used, usesRet, usesFunc := u.args, u.ret, u.fn
	usesProbe := u.probe || g.event != nil
	for i := range g.sites {
		s := &g.sites[i]
		for a := range argread.MaxArgs {
			if used&(1<<a) != 0 && a >= len(s.Args) {
				return nil, internal(b.At, "arg%d at site %d of %d arguments", a, i, len(s.Args))
			}
		}
		if usesRet && s.Ret.Kind == 0 {
			return nil, internal(b.At, "retval at site %d, not a return probe", i)
		}
	}
	g.layoutNamed()
	g.layoutStack()
	g.funcOff = -1
	if usesFunc && g.special == 0 {
		g.funcOff = g.alloc(8)
	}
	g.sleepable = g.opts.CopyStr != 0 && g.entryOff < 0 && g.special == 0
	// Dispatch: sites with equal fetch code share it; a binary tree over
	// runs of equal code finds the run.
	type run struct{ lo, code int }
	var codes [][]fetchItem
	var runs []run
	sites := g.sites
	if g.special != 0 {
		sites = nil
	}
	for i := range sites {
		items := fetchList(&g.sites[i], used, usesRet)
		more, err := g.namedItems(i, &g.sites[i])
		if err != nil {
			return nil, err
		}
		items = append(items, more...)
		if usesProbe {
			id, err := g.siteProbeID(b, i)
			if err != nil {
				return nil, err
			}
			items = append(items, fetchItem{f: argread.Fetch{Kind: argread.FetchConst, Size: 8, Value: int64(id)}, slot: probeOff, bit: argread.MaxArgs + 1})
		}
		if g.funcOff >= 0 {
			name := g.sites[i].Func
			if name == "" {
				return nil, internal(b.At, "func at site %d, which names no function", i)
			}
			items = append(items, fetchItem{f: argread.Fetch{Kind: argread.FetchConst, Size: 8, Value: int64(g.probeID(name))}, slot: g.funcOff, bit: argread.MaxArgs + 3})
		}
		if g.event != nil {
			items = g.eventFetch(&g.sites[i], items, used)
		}
		items = append(items, g.stackItems(&g.sites[i])...)
		c := -1
		for k, have := range codes {
			if equalItems(have, items) {
				c = k
				break
			}
		}
		if c < 0 {
			c = len(codes)
			codes = append(codes, items)
		}
		if n := len(runs); n == 0 || runs[n-1].code != c {
			runs = append(runs, run{lo: i, code: c})
		}
	}
	// The cookie (the site's index) is read only to choose among
	// different fetch codes: a helper call less on every hit of a block
	// whose sites all read alike.
	cookie := len(codes) > 1
	g.emit(asm.Mov.Reg(asm.R6, asm.R1))
	if cookie {
		g.emit(asm.FnGetAttachCookie.Call(), asm.Mov.Reg(asm.R8, asm.R0))
	}
	g.lookupAt(MapScratch, 0)
	g.emit(
		asm.JEq.Imm(asm.R0, 0, "return"),
		asm.Mov.Reg(asm.R7, asm.R0),
		// The scratch value is this CPU's; a program preempted while
		// using it must not have it overwritten by a hit of another task
		// on the same CPU: that hit is skipped and counted instead.
		asm.LoadMem(asm.R1, asm.R7, busyOff, asm.DWord),
		asm.JNE.Imm(asm.R1, 0, "nested"),
		storeImm64(asm.R7, busyOff, 1),
		asm.Mov.Imm(asm.R9, 0),
	)
	if cookie {
		g.emit(asm.JGE.Imm(asm.R8, int32(len(g.sites)), "exit"))
	}
	if profile {
		if err := g.profilePrologue(); err != nil {
			return nil, err
		}
		used, usesRet = 0, false
	} else if g.special != 0 {
		// Only the runner's call with this block's token runs it.
		insns, err := argread.EmitFetch(g.opts.Machine, &g.sites[0].Args[0], argsOff, 0, "token")
		if err != nil {
			return nil, &btlang.Error{Pos: b.At, Msg: err.Error()}
		}
		g.emit(insns...)
		g.emit(
			asm.LoadMem(asm.R1, asm.R7, argsOff, asm.DWord),
			asm.LoadImm(asm.R2, int64(g.token), asm.DWord),
			asm.JNE.Reg(asm.R1, asm.R2, "exit"),
			storeImm64(asm.R7, probeOff, int32(g.probeID(b.Probes[0].String()))),
			asm.Ja.Label("body"),
		)
		used, usesRet = 0, false
		g.sites = nil
	}
	var tree func(rs []run)
	tree = func(rs []run) {
		if len(rs) == 1 {
			g.emit(asm.Ja.Label(fmt.Sprintf("fetch%d", rs[0].code)))
			return
		}
		mid := len(rs) / 2
		right := g.newLabel("cookie_ge")
		g.emit(asm.JGE.Imm(asm.R8, int32(rs[mid].lo), right))
		tree(rs[:mid])
		g.label(right)
		tree(rs[mid:])
	}
	if len(runs) > 0 {
		tree(runs)
	}
	for c, items := range codes {
		g.label(fmt.Sprintf("fetch%d", c))
		for _, it := range items {
			insns, err := argread.EmitFetch(g.opts.Machine, &it.f, int16(it.slot), min(it.bit, 30), fmt.Sprintf("f%d_%d", c, it.bit))
			if err != nil {
				return nil, &btlang.Error{Pos: b.At, Msg: fmt.Sprintf("argument %d: %v", it.bit, err)}
			}
			g.emit(insns...)
		}
		g.emit(asm.Ja.Label("body"))
	}
	g.label("body")
	// Variables: integers on the stack, strings in scratch, all zeroed.
	g.vars = map[*btlang.Variable]varLoc{}
	for _, v := range b.Vars {
		switch v.Type.Kind {
		case btlang.KindRecord, btlang.KindArray:
			loc := varLoc{off: g.alloc(btlang.CSize(v.Type)), size: btlang.CSize(v.Type)}
			g.zero(loc.off, loc.size)
			g.vars[v] = loc
		case btlang.KindInt, btlang.KindPtr:
			loc := varLoc{stack: g.push()}
			g.emit(asm.Mov.Imm(asm.R0, 0), asm.StoreMem(asm.R10, loc.stack, asm.R0, asm.DWord))
			g.vars[v] = loc
		case btlang.KindString:
			loc := varLoc{off: g.alloc(v.Type.Size), size: v.Type.Size}
			g.zero(loc.off, loc.size)
			g.vars[v] = loc
		case btlang.KindTimestamp:
			loc := varLoc{off: g.alloc(TimestampSize), size: TimestampSize}
			g.zero(loc.off, loc.size)
			g.vars[v] = loc
		case btlang.KindBuf:
			n := BufSize(v.Type)
			loc := varLoc{off: g.alloc(n), size: n}
			g.zero(loc.off, loc.size)
			g.vars[v] = loc
		case btlang.KindTuple:
			_, n := TupleLayout(v.Type)
			loc := varLoc{off: g.alloc(n), size: n}
			g.zero(loc.off, loc.size)
			g.vars[v] = loc
		default:
			return nil, internal(v.Pos, "a %s variable", v.Type)
		}
	}
	if b.Pred != nil {
		g.intExpr(b.Pred)
		g.emit(asm.JEq.Imm(asm.R0, 0, "exit"))
	}
	g.stmts(b.Body)
	if g.event != nil {
		g.emitEvent()
	}
	if g.err != nil {
		return nil, g.err
	}
	// A label no jump names would carry an unreachable no-op when it
	// shares its instruction with "body" (an empty body, no cookie check).
	if slices.ContainsFunc(g.insns, func(in asm.Instruction) bool { return in.Reference() == "exit" }) {
		g.label("exit")
	}
	g.emit(storeImm64(asm.R7, busyOff, 0), asm.Ja.Label("return"))
	g.label("nested")
	g.lost(LostNested)
	g.label("return")
	g.emit(asm.Mov.Imm(asm.R0, 0), asm.Return())
	if g.err != nil {
		return nil, g.err
	}
	if err := checkJumps(g.insns); err != nil {
		return nil, &btlang.Error{Pos: b.At, Msg: err.Error()}
	}
	return g.insns, nil
}

// maxInsns is the most instructions the kernel loads in one program
// (BPF_COMPLEXITY_LIMIT_INSNS, for privileged loaders).
const maxInsns = 1_000_000

// checkJumps checks that every jump to a label reaches it: a jump's
// offset is 16 bits, and the loader would cut a longer one, which the
// kernel then refuses ("jump out of range") or, worse, follows elsewhere.
func checkJumps(insns asm.Instructions) error {
	at := make(map[string]int)
	pos := 0
	for _, in := range insns {
		if sym := in.Symbol(); sym != "" {
			at[sym] = pos
		}
		pos += int(in.Size() / asm.InstructionSize)
	}
	pos = 0
	for _, in := range insns {
		op := in.OpCode.JumpOp()
		if ref := in.Reference(); ref != "" && in.OpCode.Class().IsJump() && op != asm.Call && op != asm.Exit {
			if target, ok := at[ref]; ok {
				if d := target - (pos + 1); d < math.MinInt16 || d > math.MaxInt16 {
					return fmt.Errorf("the block's program jumps over %d instructions, more than a BPF jump reaches (%d); make it smaller (unroll repeats its body)", d, math.MaxInt16)
				}
			}
		}
		pos += int(in.Size() / asm.InstructionSize)
	}
	return nil
}

// siteProbeID returns the probe id (probeID) of block b's site i: the
// probe the site names, or the block's one probe; a site that names none
// in a block of several probes is an error at b.
func (g *gen) siteProbeID(b *btlang.ProbeBlock, i int) (int, error) {
	name := g.sites[i].Probe
	if name == "" {
		if len(b.Probes) > 1 {
			return 0, internal(b.At, "probe at site %d, which names no probe", i)
		}
		name = b.Probes[0].String()
	}
	return g.probeID(name), nil
}

// probeID returns the index of a probe name in Program.Probes, adding it.
func (g *gen) probeID(name string) int {
	if i := slices.Index(g.out.Probes, name); i >= 0 {
		return i
	}
	g.out.Probes = append(g.out.Probes, name)
	return len(g.out.Probes) - 1
}

// fetchItem is one argument read at a site into its scratch slot.
type fetchItem struct {
	f    argread.Fetch
	slot int
	bit  int
}

func fetchList(s *Site, used uint16, ret bool) []fetchItem {
	var items []fetchItem
	for a := range argread.MaxArgs {
		if used&(1<<a) != 0 {
			items = append(items, fetchItem{f: s.Args[a], slot: argsOff + 8*a, bit: a})
		}
	}
	if ret {
		items = append(items, fetchItem{f: s.Ret, slot: retOff, bit: argread.MaxArgs})
	}
	return items
}

func equalItems(a, b []fetchItem) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// zero stores zeros over size bytes (rounded up to 8) of scratch at off.
func (g *gen) zero(off, size int) {
	for k := 0; k < round8(size); k += 8 {
		g.emit(storeImm64(asm.R7, int16(off+k), 0))
	}
}

// intervalPeriod returns an interval probe's period: its count of a unit,
// or a second divided by its count for hz.
func intervalPeriod(p *btlang.Probe) (time.Duration, error) {
	units := map[string]time.Duration{"s": time.Second, "ms": time.Millisecond, "us": time.Microsecond}
	if p.Unit == "hz" {
		if p.Period == 0 || p.Period > 1_000_000 {
			return 0, &btlang.Error{Pos: p.At, Msg: "an interval's rate must be from 1 to 1000000 hz"}
		}
		return time.Second / time.Duration(p.Period), nil
	}
	unit, ok := units[p.Unit]
	if !ok {
		return 0, &btlang.Error{Pos: p.At, Msg: "interval unit " + p.Unit + " is not hz, s, ms or us"}
	}
	if p.Period == 0 || p.Period > uint64(24*time.Hour/unit) {
		return 0, &btlang.Error{Pos: p.At, Msg: "an interval must be from 1 to a day"}
	}
	return time.Duration(p.Period) * unit, nil
}

// special returns the kind of a block that user space runs (BEGIN, END,
// interval) and an interval's period, or 0 for a block of sites.
func special(b *btlang.ProbeBlock) (btlang.ProbeKind, time.Duration, error) {
	var kind btlang.ProbeKind
	var period time.Duration
	for i, p := range b.Probes {
		k := p.Kind
		switch k {
		case btlang.ProbeUSDT, btlang.ProbeUprobe, btlang.ProbeUretprobe:
			k = 0
		case btlang.ProbeBegin, btlang.ProbeEnd:
		case btlang.ProbeProfile:
			var err error
			if _, period, err = profileRate(p); err != nil {
				return 0, 0, err
			}
		case btlang.ProbeInterval:
			var err error
			if period, err = intervalPeriod(p); err != nil {
				return 0, 0, err
			}
		default:
			return 0, 0, unsupported(p.At, "the %s probe", p.Kind)
		}
		if i > 0 && (k != kind || k != 0) {
			return 0, 0, unsupported(p.At, "%s together with other probes in one block", p)
		}
		kind = k
	}
	return kind, period, nil
}
