package bpfgen

import (
	"fmt"
	"math"
	"os"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
)

// Names of the program and maps in the CollectionSpec Generate returns.
const (
	ProgName    = "trace"
	MapEvents   = "events"
	MapLost     = "lost"
	MapCounts   = "counts"
	MapHist     = "hist"
	MapStarts   = "starts"
	LostEvents  = 0 // index in "lost": records the ring buffer refused
	LostUpdates = 1 // index in "lost": aggregation map updates that failed
)

// Flags of bpf_ringbuf_output and bpf_ringbuf_query (include/uapi/linux/bpf.h).
const (
	rbNoWakeup    = 1 // BPF_RB_NO_WAKEUP
	rbForceWakeup = 2 // BPF_RB_FORCE_WAKEUP
	rbAvailData   = 0 // BPF_RB_AVAIL_DATA
	bpfAny        = 0 // BPF_ANY
	bpfNoExist    = 1 // BPF_NOEXIST
	errEEXIST     = -17
)

// Registers the generated code keeps across helper calls (R6..R9 survive
// calls; R0..R5 do not).
const (
	rCtx    = asm.R6 // the context: struct pt_regs
	rRec    = asm.R7 // the record being built: in the ring buffer (ModeEvents), else on the stack
	rCookie = asm.R8 // the attach cookie during dispatch; then the hist signedness
	rCut    = asm.R8 // in blocks with byte strings, after dispatch: the cut bits
	rFaults = asm.R9 // fault bits while fetching
)

// stackRec is the stack offset of the record outside ModeEvents, below the
// map keys and values the tails keep at R10-40..R10-1.
const stackRec = -256

// jumpLimit is the largest program (in instruction slots) whose blocks are
// reached with 16-bit jump offsets; larger programs use gotol (BPF_JMP32|
// BPF_JA with a 32-bit offset, kernel 6.4+).
const jumpLimit = 32000

// maxInsns is the largest program a privileged user may load:
// BPF_COMPLEXITY_LIMIT_INSNS in include/linux/bpf.h (kernel 5.2+).
const maxInsns = 1_000_000

// Generate returns the program and maps for cfg: program "trace" (type
// Kprobe, attach type AttachTraceUprobeMulti when cfg.Multi), map "lost",
// and "events" (ModeEvents), "counts" (ModeCount), "hist"
// (ModeHist, ModeLatency) and "starts" (ModeLatency). See the package
// documentation for what the program does.
//
// It validates cfg first: a field it cannot use gives a *ConfigError naming
// it, wrapping ErrUnsupported when the argument cannot be read at all. The
// result holds no kernel resources; load it with ebpf.NewCollection.
func Generate(cfg *Config) (*ebpf.CollectionSpec, error) {
	if cfg == nil {
		return nil, cfgErr("Config", "nil")
	}
	s, err := cfg.check(os.Getpagesize())
	if err != nil {
		return nil, err
	}
	g := newGen(s, false)
	insns := g.program()
	if insns.Size()/asm.InstructionSize > jumpLimit {
		g = newGen(s, true)
		insns = g.program()
	}
	insns, err = g.resolve(insns)
	if err != nil {
		return nil, err
	}
	if n := insns.Size() / asm.InstructionSize; n > maxInsns {
		return nil, cfgErr("Sites", "%d sites with %d distinct fetch lists need %d instructions, more than the kernel's %d", len(cfg.Sites), len(g.blocks), n, maxInsns)
	}

	prog := &ebpf.ProgramSpec{
		Name:         ProgName,
		Type:         ebpf.Kprobe,
		Instructions: insns,
		// bpf_probe_read_user{,_str} are GPL-only helpers.
		License: "GPL",
	}
	if cfg.Multi {
		prog.AttachType = ebpf.AttachTraceUprobeMulti
	}
	spec := &ebpf.CollectionSpec{
		Programs: map[string]*ebpf.ProgramSpec{ProgName: prog},
		Maps: map[string]*ebpf.MapSpec{
			MapLost: {Name: MapLost, Type: ebpf.PerCPUArray, KeySize: 4, ValueSize: 8, MaxEntries: 2},
		},
	}
	me := uint32(s.maxEntries)
	switch cfg.Mode {
	case ModeEvents:
		spec.Maps[MapEvents] = &ebpf.MapSpec{Name: MapEvents, Type: ebpf.RingBuf, MaxEntries: uint32(s.ringSize)}
	case ModeCount:
		if n, ok := s.countSlots(); ok {
			spec.Maps[MapCounts] = &ebpf.MapSpec{Name: MapCounts, Type: ebpf.PerCPUArray, KeySize: 4, ValueSize: 8, MaxEntries: n}
		} else {
			spec.Maps[MapCounts] = &ebpf.MapSpec{Name: MapCounts, Type: ebpf.Hash, KeySize: countKeySize, ValueSize: 8, MaxEntries: me}
		}
	case ModeHist:
		spec.Maps[MapHist] = &ebpf.MapSpec{Name: MapHist, Type: ebpf.Hash, KeySize: 8, ValueSize: 8, MaxEntries: me}
	case ModeLatency:
		spec.Maps[MapHist] = &ebpf.MapSpec{Name: MapHist, Type: ebpf.Hash, KeySize: 8, ValueSize: 8, MaxEntries: me}
		// LRU: a thread that never reaches the done probe must not fill
		// the map for good.
		spec.Maps[MapStarts] = &ebpf.MapSpec{Name: MapStarts, Type: ebpf.LRUHash, KeySize: uint32(startsKeySize(cfg)), ValueSize: 8, MaxEntries: me}
	}
	return spec, nil
}

// gen emits one program.
type gen struct {
	s        *settings
	long     bool // reach blocks and the tail with gotol
	insns    asm.Instructions
	pending  string            // label for the next instruction
	alias    map[string]string // label -> label of the same instruction
	blocks   []blockKey
	blockIdx map[blockKey]int
	siteBlk  []int
}

// blockKey identifies the code of a site: sites with equal keys share it.
type blockKey struct {
	n        int // arguments fetched
	args     [MaxArgs]Fetch
	fetched  uint16 // which of args are fetched
	strs     uint16
	bytes    uint16
	bytesLen [MaxArgs]uint8 // 0 where bytes has no bit
	signed   bool           // ModeHist: HistArg is signed
}

func newGen(s *settings, long bool) *gen {
	g := &gen{s: s, long: long, alias: map[string]string{}, blockIdx: map[blockKey]int{}}
	var need uint16 // arguments the tail reads, outside ModeEvents
	for _, f := range s.Filters {
		need |= 1 << f.Arg
	}
	if s.Mode == ModeHist {
		need |= 1 << s.HistArg
	}
	if s.Mode == ModeLatency && s.LatencyByArg {
		need |= 1 << s.LatencyArg
	}
	g.siteBlk = make([]int, len(s.Sites))
	for i := range s.Sites {
		site := &s.Sites[i]
		k := blockKey{n: len(site.Args)}
		copy(k.args[:], site.Args)
		if s.Mode == ModeEvents {
			k.fetched = 1<<len(site.Args) - 1
			k.strs = site.Strings
			k.bytes = site.Bytes
			for j := range MaxArgs {
				if site.Bytes&(1<<j) != 0 {
					k.bytesLen[j] = site.BytesLen[j]
				}
			}
		} else {
			k.fetched = need
			for j := range k.args {
				if need&(1<<j) == 0 {
					k.args[j] = Fetch{}
				}
			}
			k.n = 0
		}
		if s.Mode == ModeHist {
			k.signed = site.Args[s.HistArg].Signed
		}
		b, ok := g.blockIdx[k]
		if !ok {
			b = len(g.blocks)
			g.blocks = append(g.blocks, k)
			g.blockIdx[k] = b
		}
		g.siteBlk[i] = b
	}
	return g
}

func (g *gen) emit(ins ...asm.Instruction) {
	for _, in := range ins {
		if g.pending != "" {
			if sym := in.Symbol(); sym != "" {
				g.alias[g.pending] = sym
			} else {
				in = in.WithSymbol(g.pending)
			}
			g.pending = ""
		}
		g.insns = append(g.insns, in)
	}
}

// label names the next instruction emitted.
func (g *gen) label(name string) {
	if g.pending != "" {
		g.alias[name] = g.pending
		return
	}
	g.pending = name
}

// resolve rewrites references to aliased labels.
func (g *gen) resolve(insns asm.Instructions) (asm.Instructions, error) {
	if g.pending != "" {
		return nil, fmt.Errorf("internal error: label %s at the end of the program", g.pending)
	}
	for i := range insns {
		ref := insns[i].Reference()
		if ref == "" {
			continue
		}
		for {
			a, ok := g.alias[ref]
			if !ok {
				break
			}
			ref = a
		}
		insns[i] = insns[i].WithReference(ref)
	}
	return insns, nil
}

func (g *gen) jump(label string) asm.Instruction {
	if g.long {
		return asm.LongJump(label)
	}
	return asm.Ja.Label(label)
}

func blockLabel(b int) string { return fmt.Sprintf("block%d", b) }

const (
	lExitHead = "exit_head"
	lTail     = "tail"
	lExit     = "exit"
	lLost     = "lost_update"
	lHist     = "hist"
	lDiscard  = "discard"
	lNoRoom   = "no_room"
)

// program emits the whole program: header, dispatch tree, blocks, tail.
func (g *gen) program() asm.Instructions {
	g.insns = nil
	// Header: the cookie, then the record: reserved in the ring buffer,
	// where the blocks and the tail build it in place (no copy), or on
	// the stack when it is only read by the tail.
	g.emit(
		asm.Mov.Reg(rCtx, asm.R1),
		asm.FnGetAttachCookie.Call(),
		asm.Mov.Reg(rCookie, asm.R0),
		asm.JGE.Imm(rCookie, int32(len(g.s.Sites)), lExitHead),
	)
	if g.s.Mode == ModeEvents {
		g.emit(
			asm.LoadMapPtr(asm.R1, 0).WithReference(MapEvents),
			asm.Mov.Imm(asm.R2, int32(g.s.layout.size)),
			asm.Mov.Imm(asm.R3, 0),
			asm.FnRingbufReserve.Call(),
			asm.JEq.Imm(asm.R0, 0, lNoRoom),
			asm.Mov.Reg(rRec, asm.R0),
		)
	} else {
		g.emit(asm.Mov.Reg(rRec, asm.R10), asm.Add.Imm(rRec, stackRec))
	}
	g.dispatch(g.intervals())
	if g.s.Mode == ModeEvents {
		g.label(lNoRoom)
		g.lost(LostEvents, lExitHead)
	}
	g.label(lExitHead)
	g.emit(asm.Mov.Imm(asm.R0, 0), asm.Return())

	for b := range g.blocks {
		g.label(blockLabel(b))
		g.block(b, &g.blocks[b])
	}

	g.label(lTail)
	if g.s.Mode == ModeEvents {
		g.filters(lDiscard)
	} else {
		g.filters(lExit)
	}
	switch g.s.Mode {
	case ModeEvents:
		g.tailEvents()
	case ModeCount:
		g.tailCount()
	case ModeHist:
		g.emit(asm.LoadMem(asm.R1, rRec, int16(offArgs+8*g.s.HistArg), asm.DWord))
		g.tailHist()
	case ModeLatency:
		g.tailLatency()
	}
	if g.s.Mode != ModeEvents {
		g.label(lLost)
		g.lost(LostUpdates, lExit)
	}
	if g.s.Mode == ModeEvents && len(g.s.Filters) > 0 {
		g.emit(asm.Ja.Label(lExit))
		// A reserved record must be submitted or discarded on every
		// path; a discarded one is skipped by the reader unseen.
		g.label(lDiscard)
		g.emit(
			asm.Mov.Reg(asm.R1, rRec),
			asm.Mov.Imm(asm.R2, rbNoWakeup),
			asm.FnRingbufDiscard.Call(),
		)
	}
	g.label(lExit)
	g.emit(asm.Mov.Imm(asm.R0, 0), asm.Return())
	return g.insns
}

// interval is a run of cookies [lo, hi] with the same probe and block.
type interval struct {
	lo, hi int
	probe  uint32
	block  int
}

func (g *gen) intervals() []interval {
	var iv []interval
	for i, site := range g.s.Sites {
		b := g.siteBlk[i]
		if n := len(iv); n > 0 && iv[n-1].probe == site.Probe && iv[n-1].block == b {
			iv[n-1].hi = i
			continue
		}
		iv = append(iv, interval{lo: i, hi: i, probe: site.Probe, block: b})
	}
	return iv
}

// dispatch emits a binary search over the cookie (rCookie, known to be
// < len(Sites)): ceil(log2(len(iv))) conditional jumps to reach a leaf, which
// stores the probe id and jumps to the block.
func (g *gen) dispatch(iv []interval) {
	if len(iv) == 1 {
		g.emit(
			asm.StoreImm(rRec, offProbe, int64(int32(iv[0].probe)), asm.Word),
			g.jump(blockLabel(iv[0].block)),
		)
		return
	}
	mid := len(iv) / 2
	right := fmt.Sprintf("cookie_ge_%d", iv[mid].lo)
	g.emit(asm.JGE.Imm(rCookie, int32(iv[mid].lo), right))
	g.dispatch(iv[:mid])
	g.label(right)
	g.dispatch(iv[mid:])
}

// block emits the fetches of block b and jumps to the tail.
func (g *gen) block(b int, k *blockKey) {
	usesFaults := false
	for i := range MaxArgs {
		if k.fetched&(1<<i) != 0 && k.args[i].Kind == FetchMem {
			usesFaults = true
		}
	}
	if k.strs != 0 || k.bytes != 0 || g.s.Mode == ModeLatency && g.s.LatencyByArg {
		// ModeLatency's tail reads the fault bit of LatencyArg.
		usesFaults = true
	}
	if usesFaults {
		g.emit(asm.Mov.Imm(rFaults, 0))
	}
	if k.bytes != 0 {
		g.emit(asm.Mov.Imm(rCut, 0))
	}
	for i := range MaxArgs {
		if k.fetched&(1<<i) != 0 {
			g.fetch(b, i, &k.args[i])
		}
	}
	for i := range MaxArgs {
		switch {
		case k.strs&(1<<i) != 0:
			g.emit(
				asm.Mov.Reg(asm.R1, rRec),
				asm.Add.Imm(asm.R1, int32(g.s.layout.strOff(i))),
				asm.Mov.Imm(asm.R2, int32(g.s.layout.strLen)),
				asm.LoadMem(asm.R3, rRec, int16(offArgs+8*i), asm.DWord),
				asm.FnProbeReadUserStr.Call(),
			)
			g.fault(i)
		case k.bytes&(1<<i) != 0:
			g.bytes(b, i, int(k.bytesLen[i]))
		}
	}
	if g.s.Mode == ModeEvents {
		g.emit(
			asm.StoreImm(rRec, offNArgs, int64(k.n), asm.Byte),
			asm.StoreImm(rRec, offStrs, int64(k.strs), asm.Half),
			asm.StoreImm(rRec, offBytes, int64(k.bytes), asm.Half),
		)
		if usesFaults {
			g.emit(asm.StoreMem(rRec, offFaults, rFaults, asm.Half))
		} else {
			g.emit(asm.StoreImm(rRec, offFaults, 0, asm.Half))
		}
		if k.bytes != 0 {
			g.emit(asm.StoreMem(rRec, offCut, rCut, asm.Half))
		} else {
			g.emit(asm.StoreImm(rRec, offCut, 0, asm.Half))
		}
	}
	if g.s.Mode == ModeHist {
		sign := int32(0)
		if k.signed {
			sign = 1
		}
		g.emit(asm.Mov.Imm(rCookie, sign))
	}
	g.emit(g.jump(lTail))
}

// bytes emits the copy of byte string i, whose length is argument n, into
// its slot: a u16 count, then the data.
func (g *gen) bytes(b, i, n int) {
	off := int32(g.s.layout.strOff(i))
	room := int32(g.s.layout.strLen - bytesCount)
	fits := fmt.Sprintf("block%d_bytes%d_fits", b, i)
	// The clamp is an unsigned compare, so the verifier knows R2 is in
	// 0..room on both paths: the helper's size must be bounded by the
	// slot (ARG_CONST_SIZE_OR_ZERO: 0 is allowed and reads nothing). A
	// negative length is huge unsigned, and cut like one.
	g.emit(
		asm.LoadMem(asm.R2, rRec, int16(offArgs+8*n), asm.DWord),
		asm.JLE.Imm(asm.R2, room, fits),
		asm.Mov.Imm(asm.R2, room),
		asm.Or.Imm(rCut, int32(1)<<i),
	)
	g.label(fits)
	g.emit(
		asm.StoreMem(rRec, int16(off), asm.R2, asm.Half),
		asm.Mov.Reg(asm.R1, rRec),
		asm.Add.Imm(asm.R1, off+bytesCount),
		asm.LoadMem(asm.R3, rRec, int16(offArgs+8*i), asm.DWord),
		asm.FnProbeReadUser.Call(),
		// Set the fault bit and, without a branch, the count to 0 on a
		// fault: (R0 >> 63) - 1 is 0 for a failed read, all ones else.
		asm.RSh.Imm(asm.R0, 63),
		asm.Mov.Reg(asm.R1, asm.R0),
		asm.LSh.Imm(asm.R1, int32(i)),
		asm.Or.Reg(rFaults, asm.R1),
		asm.Sub.Imm(asm.R0, 1),
		asm.LoadMem(asm.R1, rRec, int16(off), asm.Half),
		asm.And.Reg(asm.R1, asm.R0),
		asm.StoreMem(rRec, int16(off), asm.R1, asm.Half),
	)
}

// fault sets bit i of rFaults when the helper result in R0 is negative,
// without a branch: R0 >> 63 is 1 exactly for negative results.
func (g *gen) fault(i int) {
	g.emit(
		asm.RSh.Imm(asm.R0, 63),
		asm.LSh.Imm(asm.R0, int32(i)),
		asm.Or.Reg(rFaults, asm.R0),
	)
}

// loadReg loads register r's alias into dst, zero-extended.
func (g *gen) loadReg(dst asm.Register, r Reg) {
	g.emit(asm.LoadMem(dst, rCtx, r.Off, asm.DWord))
	if r.Shift != 0 {
		g.emit(asm.RSh.Imm(dst, int32(r.Shift)))
	}
	g.extend(dst, int(r.Width), false)
}

// extend sign- or zero-extends the low n bytes of dst to 64 bits.
func (g *gen) extend(dst asm.Register, n int, signed bool) {
	switch {
	case n >= 8:
	case signed:
		g.emit(asm.LSh.Imm(dst, int32(64-8*n)), asm.ArSh.Imm(dst, int32(64-8*n)))
	case n == 4:
		g.emit(asm.Mov.Reg32(dst, dst))
	default:
		g.emit(asm.And.Imm(dst, int32(1)<<(8*n)-1))
	}
}

// fetch emits the code that stores argument i of block b, extended to 64
// bits, in the record's args[i].
func (g *gen) fetch(b, i int, f *Fetch) {
	g.fetchAt(fmt.Sprintf("block%d_arg%d", b, i), int16(offArgs+8*i), i, f)
}

// fetchAt emits the code that stores argument f, extended to 64 bits, at
// rRec+slot, setting bit i of rFaults on a failed read; prefix makes its
// labels unique.
func (g *gen) fetchAt(prefix string, slot int16, i int, f *Fetch) {
	size := f.size()
	switch f.Kind {
	case FetchConst:
		if f.Value >= math.MinInt32 && f.Value <= math.MaxInt32 {
			// BPF_ST with BPF_DW sign-extends the 32-bit immediate.
			g.emit(storeImm64(rRec, slot, int32(f.Value)))
		} else {
			g.emit(asm.LoadImm(asm.R0, f.Value, asm.DWord), asm.StoreMem(rRec, slot, asm.R0, asm.DWord))
		}
	case FetchReg:
		g.emit(asm.LoadMem(asm.R0, rCtx, f.Reg.Off, asm.DWord))
		if f.Reg.Shift != 0 {
			g.emit(asm.RSh.Imm(asm.R0, int32(f.Reg.Shift)))
		}
		g.extend(asm.R0, min(size, int(f.Reg.Width)), f.Signed)
		g.emit(asm.StoreMem(rRec, slot, asm.R0, asm.DWord))
	case FetchMem:
		g.address(f)
		fault := prefix + "_fault"
		done := prefix + "_done"
		for k := range int(f.Derefs) {
			// Each pointer is read into the argument's own slot, which
			// the value overwrites at the end.
			g.emit(
				asm.Mov.Reg(asm.R1, rRec),
				asm.Add.Imm(asm.R1, int32(slot)),
				asm.Mov.Imm(asm.R2, 8),
				asm.FnProbeReadUser.Call(),
				asm.JNE.Imm(asm.R0, 0, fault),
				asm.LoadMem(asm.R3, rRec, slot, asm.DWord),
				asm.JEq.Imm(asm.R3, 0, fault),
			)
			if f.Path[k] != 0 {
				g.emit(asm.Add.Imm(asm.R3, f.Path[k]))
			}
		}
		g.emit(
			asm.Mov.Reg(asm.R1, rRec),
			asm.Add.Imm(asm.R1, int32(slot)),
			asm.Mov.Imm(asm.R2, int32(size)),
			asm.FnProbeReadUser.Call(),
		)
		g.fault(i)
		if size < 8 {
			// The helper wrote size bytes (zeros on a fault); the rest of
			// the slot holds an older record.
			g.emit(asm.LoadMem(asm.R0, rRec, slot, sizeOf(size)))
			g.extend(asm.R0, size, f.Signed)
			g.emit(asm.StoreMem(rRec, slot, asm.R0, asm.DWord))
		}
		if f.Derefs > 0 {
			// The two paths meet at done with only rFaults and the slot
			// differing, so the verifier prunes the second: chains do
			// not multiply the paths of a block.
			g.emit(asm.Ja.Label(done))
			g.label(fault)
			g.emit(
				asm.Or.Imm(rFaults, int32(1)<<i),
				storeImm64(rRec, slot, 0),
			)
			g.label(done)
		}
	}
}

// storeImm64 emits *(u64 *)(dst + off) = v sign-extended: BPF_ST|BPF_MEM|
// BPF_DW, which the kernel accepts but asm.StoreImm refuses to build.
func storeImm64(dst asm.Register, off int16, v int32) asm.Instruction {
	return asm.Instruction{OpCode: asm.StoreImmOp(asm.DWord), Dst: dst, Offset: off, Constant: int64(v)}
}

func sizeOf(n int) asm.Size {
	switch n {
	case 1:
		return asm.Byte
	case 2:
		return asm.Half
	case 4:
		return asm.Word
	}
	return asm.DWord
}

// address leaves the address of a FetchMem in R3.
func (g *gen) address(f *Fetch) {
	haveBase := true
	switch {
	case f.HasBase:
		g.loadReg(asm.R3, f.Reg)
	case f.IPRel:
		g.emit(asm.LoadMem(asm.R3, rCtx, g.s.ipOff, asm.DWord))
	default:
		haveBase = false
	}
	if f.HasIndex {
		dst := asm.R1
		if !haveBase {
			dst = asm.R3
		}
		g.loadReg(dst, f.Index)
		if sh := scaleShift(f.Scale); sh > 0 {
			g.emit(asm.LSh.Imm(dst, sh))
		}
		if haveBase {
			g.emit(asm.Add.Reg(asm.R3, asm.R1))
		}
		haveBase = true
	}
	switch {
	case !haveBase:
		g.emit(asm.LoadImm(asm.R3, f.Offset, asm.DWord))
	case f.Offset == 0:
	case f.Offset >= math.MinInt32 && f.Offset <= math.MaxInt32:
		g.emit(asm.Add.Imm(asm.R3, int32(f.Offset)))
	default:
		g.emit(asm.LoadImm(asm.R1, f.Offset, asm.DWord), asm.Add.Reg(asm.R3, asm.R1))
	}
}

func scaleShift(scale uint8) int32 {
	switch scale {
	case 2:
		return 1
	case 4:
		return 2
	case 8:
		return 3
	}
	return 0
}

// filters emits a jump to fail for each filter that fails.
func (g *gen) filters(fail string) {
	for _, f := range g.s.Filters {
		g.emit(asm.LoadMem(asm.R0, rRec, int16(offArgs+8*f.Arg), asm.DWord))
		op := failJump(f.Op, f.Signed)
		if f.Value >= math.MinInt32 && f.Value <= math.MaxInt32 {
			// The immediate is sign-extended to 64 bits, which gives the
			// same bit pattern as Value for both signed and unsigned
			// comparisons.
			g.emit(op.Imm(asm.R0, int32(f.Value), fail))
		} else {
			g.emit(asm.LoadImm(asm.R1, f.Value, asm.DWord), op.Reg(asm.R0, asm.R1, fail))
		}
	}
}

// failJump returns the jump taken when "v op value" is false.
func failJump(op Op, signed bool) asm.JumpOp {
	switch op {
	case OpEq:
		return asm.JNE
	case OpNe:
		return asm.JEq
	case OpLt:
		if signed {
			return asm.JSGE
		}
		return asm.JGE
	case OpLe:
		if signed {
			return asm.JSGT
		}
		return asm.JGT
	case OpGt:
		if signed {
			return asm.JSLE
		}
		return asm.JLE
	default: // OpGe
		if signed {
			return asm.JSLT
		}
		return asm.JLT
	}
}

// tailEvents fills the header and submits the record.
func (g *gen) tailEvents() {
	l := g.s.layout
	quarter := int32(g.s.ringSize / 4)
	// The costs per hit on the bench site (BenchmarkHit, bpf-ns:+P):
	// ktime ~35 ns and comm ~40 ns dominate; pid_tgid ~6, query ~7, cpu
	// ~0 (inlined by the verifier since 6.10).
	g.emit(
		asm.FnKtimeGetNs.Call(),
		asm.StoreMem(rRec, offTime, asm.R0, asm.DWord),
		asm.FnGetCurrentPidTgid.Call(),
		asm.StoreMem(rRec, offTID, asm.R0, asm.Word),
		asm.RSh.Imm(asm.R0, 32),
		asm.StoreMem(rRec, offPID, asm.R0, asm.Word),
		asm.FnGetSmpProcessorId.Call(),
		asm.StoreMem(rRec, offCPU, asm.R0, asm.Word),
		asm.Mov.Reg(asm.R1, rRec),
		asm.Add.Imm(asm.R1, offComm),
		asm.Mov.Imm(asm.R2, commLen),
		asm.FnGetCurrentComm.Call(),
		asm.StoreImm(rRec, offVersion, recordVersion, asm.Byte),
		asm.StoreImm(rRec, offSlots, int64(l.slots), asm.Half),
		asm.StoreImm(rRec, offStrLen, int64(l.strLen), asm.Half),
		asm.StoreImm(rRec, offArgCap, int64(l.argCap), asm.Byte),
		// Wake the reader only when a quarter of the ring is full; it
		// polls on a timer otherwise. The query reads two positions
		// (~7 ns); the record's own address does not tell the fill.
		asm.LoadMapPtr(asm.R1, 0).WithReference(MapEvents),
		asm.Mov.Imm(asm.R2, rbAvailData),
		asm.FnRingbufQuery.Call(),
		asm.Mov.Imm(asm.R2, rbNoWakeup),
		asm.JLE.Imm(asm.R0, quarter, "submit"),
		asm.Mov.Imm(asm.R2, rbForceWakeup),
		asm.Mov.Reg(asm.R1, rRec).WithSymbol("submit"),
		asm.FnRingbufSubmit.Call(),
	)
}

// lost adds one to lost[idx] (per CPU: no atomics needed). Exit, a label
// within reach of a conditional jump, or the exit must follow.
func (g *gen) lost(idx int, exit string) {
	g.emit(
		asm.StoreImm(asm.R10, -4, int64(idx), asm.Word),
		asm.LoadMapPtr(asm.R1, 0).WithReference(MapLost),
		asm.Mov.Reg(asm.R2, asm.R10),
		asm.Add.Imm(asm.R2, -4),
		asm.FnMapLookupElem.Call(),
		asm.JEq.Imm(asm.R0, 0, exit),
		asm.LoadMem(asm.R1, asm.R0, 0, asm.DWord),
		asm.Add.Imm(asm.R1, 1),
		asm.StoreMem(asm.R0, 0, asm.R1, asm.DWord),
	)
}

// increment emits: map[key at R10+keyOff] += 1, inserting 1 if absent (with
// BPF_NOEXIST, retrying the lookup when another CPU inserted first). Failures
// go to the lost-update counter. prefix makes its labels unique.
func (g *gen) increment(mapName string, keyOff int16, prefix string) {
	insert, again := prefix+"_insert", prefix+"_again"
	g.emit(
		asm.LoadMapPtr(asm.R1, 0).WithReference(mapName),
		asm.Mov.Reg(asm.R2, asm.R10),
		asm.Add.Imm(asm.R2, int32(keyOff)),
		asm.FnMapLookupElem.Call(),
		asm.JEq.Imm(asm.R0, 0, insert),
		asm.Mov.Imm(asm.R1, 1),
		asm.StoreXAdd(asm.R0, asm.R1, asm.DWord),
		asm.Ja.Label(lExit),
	)
	g.label(insert)
	g.emit(
		storeImm64(asm.R10, keyOff-8, 1),
		asm.LoadMapPtr(asm.R1, 0).WithReference(mapName),
		asm.Mov.Reg(asm.R2, asm.R10),
		asm.Add.Imm(asm.R2, int32(keyOff)),
		asm.Mov.Reg(asm.R3, asm.R10),
		asm.Add.Imm(asm.R3, int32(keyOff-8)),
		asm.Mov.Imm(asm.R4, bpfNoExist),
		asm.FnMapUpdateElem.Call(),
		asm.JEq.Imm(asm.R0, 0, lExit),
		asm.JNE.Imm(asm.R0, errEEXIST, lLost),
	)
	g.label(again)
	g.emit(
		asm.LoadMapPtr(asm.R1, 0).WithReference(mapName),
		asm.Mov.Reg(asm.R2, asm.R10),
		asm.Add.Imm(asm.R2, int32(keyOff)),
		asm.FnMapLookupElem.Call(),
		asm.JEq.Imm(asm.R0, 0, lLost),
		asm.Mov.Imm(asm.R1, 1),
		asm.StoreXAdd(asm.R0, asm.R1, asm.DWord),
		asm.Ja.Label(lExit),
	)
}

// countKeySize is the "counts" hash key: probe u32, pid u32, comm [16]byte.
const countKeySize = 24

// maxCountSlots bounds the per-CPU "counts" array: probe ids up to it are
// counted there, larger ones in the hash.
const maxCountSlots = 1 << 16

// countSlots returns the size of the per-CPU "counts" array, one slot per
// probe id up to the largest a site has, and whether ModeCount uses it:
// when counting by probe alone with probe ids below maxCountSlots.
func (s *settings) countSlots() (uint32, bool) {
	if s.Mode != ModeCount || s.CountBy != 0 {
		return 0, false
	}
	var top uint32
	for i := range s.Sites {
		top = max(top, s.Sites[i].Probe)
	}
	if top >= maxCountSlots {
		return 0, false
	}
	return top + 1, true
}

func (g *gen) tailCount() {
	if _, ok := g.s.countSlots(); ok {
		// counts[probe] += 1 in a per-CPU array: the lookup is inlined
		// by the verifier and cannot fail (probe < MaxEntries). Atomic,
		// as a program may be preempted by another on its CPU.
		g.emit(
			asm.LoadMem(asm.R1, rRec, offProbe, asm.Word),
			asm.StoreMem(asm.R10, -4, asm.R1, asm.Word),
			asm.LoadMapPtr(asm.R1, 0).WithReference(MapCounts),
			asm.Mov.Reg(asm.R2, asm.R10),
			asm.Add.Imm(asm.R2, -4),
			asm.FnMapLookupElem.Call(),
			asm.JEq.Imm(asm.R0, 0, lLost),
			asm.Mov.Imm(asm.R1, 1),
			asm.StoreXAdd(asm.R0, asm.R1, asm.DWord),
			asm.Ja.Label(lExit),
		)
		return
	}
	const key = -24 // R10-24: probe; -20: pid; -16..-1: comm
	g.emit(
		asm.LoadMem(asm.R1, rRec, offProbe, asm.Word),
		asm.StoreMem(asm.R10, key, asm.R1, asm.Word),
	)
	if g.s.CountBy&CountPID != 0 {
		g.emit(
			asm.FnGetCurrentPidTgid.Call(),
			asm.RSh.Imm(asm.R0, 32),
			asm.StoreMem(asm.R10, key+4, asm.R0, asm.Word),
		)
	} else {
		g.emit(asm.StoreImm(asm.R10, key+4, 0, asm.Word))
	}
	if g.s.CountBy&CountComm != 0 {
		g.emit(
			asm.Mov.Reg(asm.R1, asm.R10),
			asm.Add.Imm(asm.R1, key+8),
			asm.Mov.Imm(asm.R2, commLen),
			asm.FnGetCurrentComm.Call(),
		)
	} else {
		g.emit(
			storeImm64(asm.R10, key+8, 0),
			storeImm64(asm.R10, key+16, 0),
		)
	}
	g.increment(MapCounts, key, "count")
}

// tailHist adds one to hist[{probe, bucket(R1)}]; rCookie says whether R1
// is signed. The bucket is HistBucket's, unrolled.
func (g *gen) tailHist() {
	const key = -8 // R10-8: probe; -4: bucket
	g.emit(
		asm.Mov.Imm(asm.R0, 0),
		asm.JEq.Imm(rCookie, 0, "hist_unsigned"),
		asm.JSLT.Imm(asm.R1, 0, "hist_bucket"),
		asm.Mov.Imm(asm.R0, 1).WithSymbol("hist_unsigned"),
		asm.JEq.Imm(asm.R1, 0, "hist_bucket"),
		asm.Mov.Imm(asm.R0, 2),
	)
	for _, sh := range []int32{32, 16, 8, 4, 2, 1} {
		skip := fmt.Sprintf("hist_log2_%d", sh)
		g.emit(
			asm.Mov.Reg(asm.R2, asm.R1),
			asm.RSh.Imm(asm.R2, sh),
			asm.JEq.Imm(asm.R2, 0, skip),
			asm.Mov.Reg(asm.R1, asm.R2),
			asm.Add.Imm(asm.R0, sh),
		)
		g.label(skip)
	}
	g.label("hist_bucket")
	g.emit(
		asm.StoreMem(asm.R10, key+4, asm.R0, asm.Word),
		asm.LoadMem(asm.R1, rRec, offProbe, asm.Word),
		asm.StoreMem(asm.R10, key, asm.R1, asm.Word),
	)
	g.increment(MapHist, key, "hist")
}

// startsKeySize is the size of the "starts" key: pid_tgid, or with
// LatencyByArg the argument's value and the thread group id (goroutine ids
// are per process), padded to 16 bytes.
func startsKeySize(c *Config) int {
	if c.LatencyByArg {
		return 16
	}
	return 8
}

// latencyKey stores the "starts" key of the hit at R10+key.
func (g *gen) latencyKey(key int16) {
	if !g.s.LatencyByArg {
		g.emit(
			asm.FnGetCurrentPidTgid.Call(),
			asm.StoreMem(asm.R10, key, asm.R0, asm.DWord),
		)
		return
	}
	g.emit(
		asm.LoadMem(asm.R1, rRec, int16(offArgs+8*g.s.LatencyArg), asm.DWord),
		asm.StoreMem(asm.R10, key, asm.R1, asm.DWord),
		asm.FnGetCurrentPidTgid.Call(),
		asm.RSh.Imm(asm.R0, 32),
		asm.StoreMem(asm.R10, key+8, asm.R0, asm.Word),
		asm.StoreImm(asm.R10, key+12, 0, asm.Word),
	)
}

func (g *gen) tailLatency() {
	const (
		// key is the "starts" key, 8 or 16 bytes: R10-40..-25; ts is
		// below tailHist's key and value (R10-16..-1).
		key = -40
		ts  = -24
	)
	if g.s.LatencyByArg {
		// An unread key would pair unrelated hits under key 0.
		g.emit(asm.JSet.Imm(rFaults, int32(1)<<g.s.LatencyArg, lExit))
	}
	g.emit(
		asm.LoadMem(asm.R1, rRec, offProbe, asm.Word),
		asm.JEq.Imm32(asm.R1, int32(g.s.LatencyStart), "latency_start"),
		asm.JNE.Imm32(asm.R1, int32(g.s.LatencyDone), lExit),
	)
	g.latencyKey(key)
	g.emit(
		asm.LoadMapPtr(asm.R1, 0).WithReference(MapStarts),
		asm.Mov.Reg(asm.R2, asm.R10),
		asm.Add.Imm(asm.R2, key),
		asm.FnMapLookupElem.Call(),
		asm.JEq.Imm(asm.R0, 0, lExit),
		asm.LoadMem(asm.R1, asm.R0, 0, asm.DWord),
		asm.StoreMem(asm.R10, ts, asm.R1, asm.DWord),
		asm.FnKtimeGetNs.Call(),
		asm.LoadMem(asm.R1, asm.R10, ts, asm.DWord),
		asm.Sub.Reg(asm.R0, asm.R1),
		asm.StoreMem(asm.R10, ts, asm.R0, asm.DWord),
		asm.LoadMapPtr(asm.R1, 0).WithReference(MapStarts),
		asm.Mov.Reg(asm.R2, asm.R10),
		asm.Add.Imm(asm.R2, key),
		asm.FnMapDeleteElem.Call(),
		asm.LoadMem(asm.R1, asm.R10, ts, asm.DWord),
		asm.Mov.Imm(rCookie, 0),
	)
	g.tailHist()
	g.label("latency_start")
	g.latencyKey(key)
	g.emit(
		asm.FnKtimeGetNs.Call(),
		asm.StoreMem(asm.R10, ts, asm.R0, asm.DWord),
		asm.LoadMapPtr(asm.R1, 0).WithReference(MapStarts),
		asm.Mov.Reg(asm.R2, asm.R10),
		asm.Add.Imm(asm.R2, key),
		asm.Mov.Reg(asm.R3, asm.R10),
		asm.Add.Imm(asm.R3, ts),
		asm.Mov.Imm(asm.R4, bpfAny),
		asm.FnMapUpdateElem.Call(),
		asm.JEq.Imm(asm.R0, 0, lExit),
		asm.Ja.Label(lLost),
	)
}
