package btrun

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"

	"github.com/usdtkit/usdtkit/internal/bpf/stackcap"
	"github.com/usdtkit/usdtkit/internal/lang/btgen"
	"github.com/usdtkit/usdtkit/internal/lang/btlang"
	"github.com/usdtkit/usdtkit/internal/lang/btprint"
	"github.com/usdtkit/usdtkit/internal/lang/layout"
	"github.com/usdtkit/usdtkit/internal/proc/procfs"
	"github.com/usdtkit/usdtkit/internal/stacks/symbolize"
	"github.com/usdtkit/usdtkit/internal/stacks/unwind"
)

// Stacks: the program captures addresses (btgen's stack.go); they are
// symbolized here, when printed, with one symbolize.Symbolizer per
// process. A Symbolizer remembers its process's mappings and holds its
// objects open from its creation: it is made for each Options.PIDs at
// Start and for each process the program announces (btgen.RecStackPID) as
// soon as its record is read, so a process that exits before the maps
// are printed still symbolizes. A process that could not be seen alive
// prints bare addresses.

// stacks holds the Symbolizers and the stacks already printed.
type stacks struct {
	// unw and spaces unwind printf'd stack copies; a process's space is
	// remembered and its objects' CFI read when it is first seen.
	unw    *unwind.Unwinder
	spaces map[int]*unwind.Space
	cache  *symbolize.Cache
	procs  map[int]*symbolize.Symbolizer // nil: could not be read
	// copies: the program prints stack copies (unwound here).
	copies bool
	// methods counts the frames unwound per object and method.
	methods map[methodKey]int
	// text caches printed map key stacks (print() in an interval reads
	// the same keys again).
	text map[stackKey]stackText
	// copied are the unwound stacks of map keys counted in user space,
	// indexed by the id their key field holds; copiedIDs finds one by
	// pid and addresses (keymaps.go).
	copied    [][]uint64
	copiedIDs map[string]int64
	internBuf []byte
	// rereads counts, per process, the mappings read again because a
	// stack's instruction pointer was in none (unwind).
	rereads map[int]int
	// targets are the traced processes (Options.PIDs).
	targets map[int]bool
	// tables, when the program walks stack keys with CFI, hold the
	// traced processes' mappings and their objects' tables; added are
	// the executable mappings given to them last, per process; warn and
	// warned report the objects they cannot unwind (cfitables.go).
	tables *unwind.BPFTables
	added  map[int][]procfs.Mapping
	warn   func(error)
	warned map[string]bool
}

// maxRereads bounds how often unwind reads a process's mappings again.
const maxRereads = 8

func mapped(sp *unwind.Space, pc uint64) bool {
	_, ok := sp.Mapping(pc)
	return ok
}

type stackKey struct {
	m      string
	perf   bool
	id     int64
	caller uint64
	pid    int
}

type stackText struct {
	text   string
	frames []symbolize.Frame
}

// maxProcs bounds the processes whose mappings are remembered.
const maxProcs = 1024

// maxStackText bounds the cache of printed stacks.
const maxStackText = 1 << 16

func (s *stacks) init() {
	if s.procs == nil {
		s.unw, _ = unwind.New(&unwind.Options{Open: s.openObject})
		s.spaces = map[int]*unwind.Space{}
		s.cache = &symbolize.Cache{}
		s.procs = map[int]*symbolize.Symbolizer{}
		s.text = map[stackKey]stackText{}
		s.copiedIDs = map[string]int64{}
	}
}

// remember reads the mappings of process pid unless already done.
func (s *stacks) remember(pid int) *symbolize.Symbolizer {
	s.init()
	if sym, ok := s.procs[pid]; ok {
		return sym
	}
	if len(s.procs) >= maxProcs {
		// Each Symbolizer holds its process's objects open: past
		// maxProcs processes, new ones are symbolized only while they
		// live (see frames).
		return nil
	}
	sym, err := symbolize.New(pid, &symbolize.Options{Cache: s.cache})
	if err != nil {
		sym = nil
	}
	s.procs[pid] = sym
	if s.copies || s.tables != nil && s.targets[pid] {
		if maps, ok := readExecMaps(pid); ok {
			s.addSpace(pid, maps)
		}
	}
	return sym
}

// openObject opens an object a process maps, for its CFI: the file its
// Symbolizer opened while the process lived (it may exit between the
// reading of its mappings and of its objects), or else through the
// process.
func (s *stacks) openObject(o procfs.Object) (*os.File, error) {
	if sym := s.procs[o.PID]; sym != nil {
		if f, ok := sym.Reopen(procfs.FileID{Dev: unix.Mkdev(o.Major, o.Minor), Inode: o.Inode}); ok {
			return f, nil
		}
	}
	return procfs.Open(o)
}

// addSpace remembers the mappings of process pid for unwinding stack
// copies and gives them to the tables.
func (s *stacks) addSpace(pid int, maps []procfs.Mapping) {
	if s.copies {
		sp := unwind.NewSpace(pid, maps)
		s.spaces[pid] = sp
		s.unw.Load(sp) // damage makes an object use frame pointers
	}
	s.addTables(pid, maps)
}

// readExecMaps reads the mappings of process pid for unwinding; false
// when it has none executable: gone, or exiting (its maps then read
// empty).
func readExecMaps(pid int) ([]procfs.Mapping, bool) {
	maps, err := procfs.ReadMaps(pid)
	if err != nil || !slices.ContainsFunc(maps, procfs.Mapping.Exec) {
		return nil, false
	}
	return maps, true
}

// refresh reads the mappings of process pid again, when it was
// remembered before its first stack: a command started stopped (trace
// -c) had only its executable and the dynamic loader mapped then.
func (s *stacks) refresh(pid int) {
	s.init()
	sym, ok := s.procs[pid]
	if !ok {
		s.remember(pid)
		return
	}
	// A process that is gone or exiting (its maps read empty) keeps
	// what was remembered. Exiting cannot be undone: maps that read
	// full after New were full when New read them.
	fresh, err := symbolize.New(pid, &symbolize.Options{Cache: s.cache})
	if err != nil {
		return
	}
	maps, ok := readExecMaps(pid)
	if !ok {
		fresh.Close()
		return
	}
	if sym != nil {
		sym.Close()
	}
	s.procs[pid] = fresh
	s.addSpace(pid, maps)
}

// maxRefreshed bounds the traced processes whose mappings Run reads
// again at each poll.
const maxRefreshed = 16

// refreshTargets reads again the mappings of the traced processes
// remembered so far, adding those made since: a process is announced at
// its first stack, and a command started stopped maps its libraries and
// a JIT its code cache after that. Done while they live, at each poll, so
// that their stacks symbolize when printed after they exit.
func (s *stacks) refreshTargets(pids []int) {
	if s.procs == nil {
		return
	}
	for _, pid := range pids[:min(len(pids), maxRefreshed)] {
		sym := s.procs[pid]
		if sym == nil {
			continue
		}
		if s.tables == nil {
			sym.Refresh() // a process gone keeps what was read
			continue
		}
		if maps, err := procfs.ReadMaps(pid); err == nil {
			sym.RefreshFrom(maps)
			s.addTables(pid, maps)
		}
	}
}

// unnamedJIT returns how many frames in anonymous executable memory no
// perf map or jitdump named, over every process.
func (s *stacks) unnamedJIT() int {
	n := 0
	for _, sym := range s.procs {
		if sym != nil {
			n += sym.UnnamedJIT()
		}
	}
	return n
}

// unwind returns the return addresses of a printf'd stack copy of
// process pid, innermost first.
func (s *stacks) unwind(pid int, info *btgen.StackInfo, c stackcap.Copy, entry bool) []uint64 {
	s.remember(pid)
	sp := s.spaces[pid]
	if sp != nil && !mapped(sp, c.IP) && s.rereads[pid] < maxRereads {
		// Mapped since the mappings were read: a profile sample of a
		// command started stopped may come while the dynamic loader
		// maps its libraries, before the first stack's refresh.
		if s.rereads == nil {
			s.rereads = map[int]int{}
		}
		s.rereads[pid]++
		s.refresh(pid)
		sp = s.spaces[pid]
	}
	if sp == nil {
		return []uint64{c.IP}
	}
	res, err := s.unw.Unwind(sp, info.Machine, unwind.Regs{PC: c.IP, SP: c.SP, FP: c.FP, LR: c.LR, Entry: entry}, unwind.Stack{Base: c.Base, Data: c.Stack})
	if err != nil {
		return []uint64{c.IP}
	}
	pcs := make([]uint64, len(res.Frames))
	for i, f := range res.Frames {
		pcs[i] = f.PC
		if i > 0 {
			// Frame i was found by unwinding frame i-1, with the
			// method its object allowed.
			obj := ""
			if m, ok := sp.Mapping(res.Frames[i-1].PC); ok {
				obj = m.Path
			}
			if s.methods == nil {
				s.methods = map[methodKey]int{}
			}
			if len(s.methods) < maxStackText {
				s.methods[methodKey{obj, f.Method.String()}]++
			}
		}
	}
	return pcs
}

type methodKey struct{ object, method string }

// UnwindMethod says how often printf'd stacks were unwound through an
// object with a method: "cfi" (its call frame information) or "fp" (its
// frame pointers: it has no CFI for the code).
type UnwindMethod struct {
	Object string // path in the process's maps; "" for anonymous memory
	Method string
	Frames int
}

// UnwindMethods returns, per object and method, how many frames of
// printf'd stacks were found so far, sorted by object and method.
func (r *Runner) UnwindMethods() []UnwindMethod {
	var out []UnwindMethod
	for k, n := range r.stacks.methods {
		out = append(out, UnwindMethod{Object: k.object, Method: k.method, Frames: n})
	}
	slices.SortFunc(out, func(a, b UnwindMethod) int {
		return cmp.Or(cmp.Compare(a.Object, b.Object), cmp.Compare(a.Method, b.Method))
	})
	return out
}

// frames symbolizes the stack pcs of process pid (StackFrames: pcs[1:]
// are return addresses), keeping at most n addresses.
func (s *stacks) frames(pid int, pcs []uint64, n int) []symbolize.Frame {
	if n > 0 && len(pcs) > n {
		pcs = pcs[:n]
	}
	if sym := s.remember(pid); sym != nil {
		return sym.StackFrames(pcs)
	}
	if _, ok := s.procs[pid]; !ok {
		// Not remembered (maxProcs): symbolize it now if it lives.
		if sym, err := symbolize.New(pid, &symbolize.Options{Cache: s.cache}); err == nil {
			defer sym.Close()
			return sym.StackFrames(pcs)
		}
	}
	out := make([]symbolize.Frame, len(pcs))
	for i, pc := range pcs {
		out[i].Addr = pc
	}
	return out
}

// format prints frames as bpftrace 0.17 prints a ustack: indented by
// indent spaces (8 in printf, 4 in a map key), or ustack(perf)'s lines.
// Inlined calls, which bpftrace does not show, are left out.
func formatStack(frames []symbolize.Frame, info *btgen.StackInfo, indent int) string {
	outer := make([]symbolize.Frame, 0, len(frames))
	for _, f := range frames {
		if !f.Inlined {
			outer = append(outer, f)
		}
	}
	if len(outer) == 0 {
		// bpftrace prints an empty stack (a profile sample of a kernel
		// thread or the idle task) as nothing.
		return ""
	}
	if info.Perf {
		return symbolize.FormatPerf(outer)
	}
	return symbolize.Format(outer, indent)
}

// close releases every Symbolizer.
func (s *stacks) close() {
	for _, sym := range s.procs {
		if sym != nil {
			sym.Close()
		}
	}
	s.procs = nil
	if s.tables != nil {
		s.tables.Close()
		s.tables = nil
	}
}

// rememberTargets reads the mappings of the traced processes when the
// program captures stacks, and gives them to the tables of a walk with
// CFI (cfitables.go), which it makes.
func (r *Runner) rememberTargets(spec *ebpf.CollectionSpec) error {
	if _, ok := r.prog.Spec.Maps[btgen.MapStackPIDs]; !ok {
		return nil
	}
	if err := r.stacks.openTables(spec, r.opts.PIDs, r.opts.Warn); err != nil {
		return err
	}
	r.stacks.targets = map[int]bool{}
	for _, pid := range r.opts.PIDs {
		r.stacks.targets[pid] = true
	}
	for _, p := range r.prog.Printfs {
		for _, a := range p.Args {
			r.stacks.copies = r.stacks.copies || a.Stack != nil && a.Stack.Copy > 0
		}
	}
	for _, mi := range r.prog.Maps {
		r.stacks.copies = r.stacks.copies || mi.User
	}
	for _, pid := range r.opts.PIDs {
		r.stacks.remember(pid)
	}
	return nil
}

// printfStack returns a printf stack argument (the frames layout, then
// the pid) as bpftrace prints it, and its frames (inlined calls
// included).
func (r *Runner) printfStack(a *btgen.RecordArg, rec []byte) (string, []symbolize.Frame) {
	b := rec[a.Off : a.Off+a.Size]
	ne := binary.NativeEndian
	var frames []symbolize.Frame
	if a.Stack.Copy > 0 {
		if len(b) < 16 {
			return "\n", nil
		}
		c, err := stackcap.DecodeCopy(b[:len(b)-16])
		if err != nil {
			return "\n", nil
		}
		pid := int(ne.Uint64(b[len(b)-16:]))
		pcs := r.stacks.unwind(pid, a.Stack, c, ne.Uint64(b[len(b)-8:]) != 0)
		if len(pcs) > 0 && pcs[0] == 0 {
			// No user registers: a profile sample of a kernel thread or
			// the idle task.
			pcs = nil
		}
		frames = r.stacks.frames(pid, pcs, a.Stack.Frames)
	} else {
		if len(b) < 8 {
			return "\n", nil
		}
		pcs, err := stackcap.DecodeFrames(b[:len(b)-8])
		if err != nil {
			return "\n", nil
		}
		pid := int(ne.Uint64(b[len(b)-8:]))
		frames = r.stacks.frames(pid, pcs, a.Stack.Frames)
	}
	return formatStack(frames, a.Stack, 8), frames
}

// appendPrintfStacks adds the frames of a printf's stack arguments to its
// JSON line ({"type": "printf", "data": "…"}\n, as btprint.AppendPrintf wrote it)
// as a key of usdtkit's own, after bpftrace's: "stacks", one array of
// frame objects (symbolize.FrameJSON) per stack argument, in argument
// order.
func appendPrintfStacks(line []byte, stacks [][]symbolize.Frame) []byte {
	if !bytes.HasSuffix(line, []byte("}\n")) {
		return line // not a JSON line: leave it as it is
	}
	line = append(line[:len(line)-2], `, "stacks": [`...)
	for i, f := range stacks {
		if i > 0 {
			line = append(line, ", "...)
		}
		line = symbolize.AppendJSON(line, f)
	}
	return append(line, "]}\n"...)
}

// keyStack decodes a stack key field (btgen.StackKeySize bytes) and
// returns its stack id, frames and printed form.
func (r *Runner) keyStack(info *btgen.StackInfo, k []byte) (int64, stackText) {
	if len(k) < btgen.StackKeySize {
		return 0, stackText{text: "\n"}
	}
	id, _ := stackcap.DecodeStackID(k)
	key := stackKey{info.Map, info.Perf, id.ID, id.Caller, int(binary.NativeEndian.Uint64(k[stackcap.StackIDSize:]))}
	r.stacks.init()
	if t, ok := r.stacks.text[key]; ok {
		return id.ID, t
	}
	var t stackText
	if info.Copy > 0 {
		// Unwound in user space (keymaps.go): the id is the interned
		// stack's.
		if pcs := r.stacks.copiedStack(id.ID); pcs != nil {
			t.frames = r.stacks.frames(key.pid, pcs, info.Frames)
		}
	} else if m := r.coll.Maps[info.Map]; m != nil && id.ID >= 0 {
		if pcs, err := stackcap.LookupStack(m, id); err == nil {
			t.frames = r.stacks.frames(key.pid, pcs, info.Frames)
		}
	}
	t.text = formatStack(t.frames, info, 4)
	if id.ID < 0 {
		// bpf_get_stackid failed (a hash collision in a full stack map:
		// -EEXIST; -EFAULT): say so rather than print an empty stack.
		t.text = fmt.Sprintf("\n    [stack not captured: error %d]\n", id.ID)
	}
	if len(r.stacks.text) >= maxStackText {
		clear(r.stacks.text)
	}
	r.stacks.text[key] = t
	return id.ID, t
}

// loadCollection loads spec with its btgen.MapStackConf, if it has one,
// holding pid and frozen.
func loadCollection(spec *ebpf.CollectionSpec, pid int, repl map[string]*ebpf.Map) (*ebpf.Collection, error) {
	if _, ok := spec.Maps[btgen.MapStackConf]; !ok {
		return ebpf.NewCollectionWithOptions(spec, ebpf.CollectionOptions{MapReplacements: repl})
	}
	ms := btgen.StackConfSpec(pid)
	spec.Maps[btgen.MapStackConf] = ms
	conf, err := ebpf.NewMap(ms)
	if err != nil {
		return nil, fmt.Errorf("stack map %s: %w", ms.Name, err)
	}
	defer conf.Close()
	if err := conf.Freeze(); err != nil {
		return nil, fmt.Errorf("stack map %s: %w", ms.Name, err)
	}
	maps := map[string]*ebpf.Map{ms.Name: conf}
	for name, m := range repl {
		maps[name] = m
	}
	return ebpf.NewCollectionWithOptions(spec, ebpf.CollectionOptions{MapReplacements: maps})
}

// onlyPID returns the process every probe site of prog is attached for
// (sitePIDs), when there is one, else 0.
func onlyPID(prog *btgen.Program, pids []int) int {
	only := 0
	for _, b := range prog.Blocks {
		if b.Kind == btlang.ProbeProfile {
			// Samples of pids, or of every process.
			b.Sites = []btgen.Site{{}}
		} else if b.Kind != 0 {
			continue // run by the runner itself
		}
		for i := range b.Sites {
			for _, pid := range sitePIDs(&b.Sites[i], pids) {
				if pid == 0 || only != 0 && pid != only {
					return 0
				}
				only = pid
			}
		}
	}
	return only
}

// readSlots calls f with the key and count of every CPU's non-empty stack
// slot of map mi (btgen.MapInfo.Slots), if it has slots.
func (r *Runner) readSlots(mi *btgen.MapInfo, f func(key []byte, count uint64)) error {
	if mi.Slots == "" {
		return nil
	}
	var k uint32
	var pv [][]byte
	it := r.coll.Maps[mi.Slots].Iterate()
	for it.Next(&k, &pv) {
		for _, v := range pv {
			if key, n, ok := btgen.DecodeSlot(mi, v); ok {
				f(key, n)
			}
		}
	}
	if err := it.Err(); err != nil {
		return fmt.Errorf("read %s: %w", mi.Map.Name, err)
	}
	return nil
}

// slotEntries adds the counts in map mi's stack slots to m, as entries of
// their own (mergeStackKeys sums them with the hash's).
func (r *Runner) slotEntries(mi *btgen.MapInfo, m *btprint.Map) error {
	return r.readSlots(mi, func(key []byte, n uint64) {
		m.Entries = append(m.Entries, btprint.MapEntry{Key: r.decodeKey(mi, key), Value: n})
	})
}

// clearSlots empties map mi's stack slots or, with zero, zeros their
// counts.
func (r *Runner) clearSlots(mi *btgen.MapInfo, zero bool) error {
	if mi.Slots == "" {
		return nil
	}
	slots := r.coll.Maps[mi.Slots]
	var k uint32
	var pv [][]byte
	var used []uint32
	it := slots.Iterate()
	for it.Next(&k, &pv) {
		for _, v := range pv {
			if _, _, ok := btgen.DecodeSlot(mi, v); ok {
				used = append(used, k)
				break
			}
		}
	}
	if err := it.Err(); err != nil {
		return fmt.Errorf("read %s: %w", mi.Map.Name, err)
	}
	for _, k := range used {
		if err := slots.Lookup(k, &pv); err != nil {
			return fmt.Errorf("clear %s: %w", mi.Map.Name, err)
		}
		for _, v := range pv {
			btgen.ClearSlot(v, zero)
		}
		if err := slots.Put(k, pv); err != nil {
			return fmt.Errorf("clear %s: %w", mi.Map.Name, err)
		}
	}
	return nil
}

// StackCount is one entry of a map keyed by a stack: the stack's frames,
// symbolized, and the entry's value.
type StackCount struct {
	// Map is the map's name ("@" for the anonymous map).
	Map string
	// PID is the process whose stack it is.
	PID int
	// Frames are the stack's frames, innermost first, with inlined calls
	// as frames of their own (symbolize.Frame.Inlined); empty when the
	// stack could not be read.
	Frames []symbolize.Frame
	// Keys are the entry's key fields as the map prints them (a stack
	// field's Str is its printed form), KeyKinds their kinds.
	Keys     []btprint.Key
	KeyKinds []layout.KeyKind
	// Value is the count, sum or integer value (summed over CPUs).
	Value uint64
}

// StackCounts returns every entry of the maps keyed by a stack (the first
// stack field of the key) whose values are count(), sum() or integers,
// for flame graphs and profiles. Call it after Run, before Close.
func (r *Runner) StackCounts() ([]StackCount, error) {
	var out []StackCount
	for i := range r.prog.Maps {
		mi := &r.prog.Maps[i]
		f := -1
		for j, s := range mi.KeyStacks {
			if s != nil {
				f = j
				break
			}
		}
		agg := mi.Map.Agg
		if f < 0 || mi.Array || !(agg == btlang.AggCount || agg == btlang.AggSum || agg == btlang.AggNone && mi.Map.Value.Kind == btlang.KindInt) {
			continue
		}
		var kinds []layout.KeyKind
		for _, kf := range mi.Keys {
			kinds = append(kinds, kf.Kind)
		}
		// One entry per key: a key counted both in the hash and in
		// stack slots (btgen.MapInfo.Slots) is summed.
		seen := map[string]int{}
		add := func(k []byte, val uint64) error {
			if i, ok := seen[string(k)]; ok {
				out[i].Value += val
				return nil
			}
			off := mi.KeyOffs[f]
			if off+btgen.StackKeySize > len(k) {
				return fmt.Errorf("read %s: key of %d bytes", mi.Map.Name, len(k))
			}
			_, t := r.keyStack(mi.KeyStacks[f], k[off:])
			seen[string(k)] = len(out)
			out = append(out, StackCount{
				Map:      mi.Map.Name,
				PID:      int(binary.NativeEndian.Uint64(k[off+stackcap.StackIDSize:])),
				Frames:   t.frames,
				Keys:     r.decodeKey(mi, k),
				KeyKinds: kinds,
				Value:    val,
			})
			return nil
		}
		if mi.User {
			var err error
			r.userEach(i, func(k []byte, v uint64) {
				if err == nil {
					err = add(k, v)
				}
			})
			if err != nil {
				return nil, err
			}
			continue
		}
		// The values summed over CPUs (one value for a map that is not
		// per-CPU).
		if err := r.eachEntry(mi, func(k []byte, vals [][]byte) error {
			var val uint64
			for _, c := range vals {
				if len(c) >= 8 {
					val += binary.NativeEndian.Uint64(c)
				}
			}
			return add(k, val)
		}); err != nil {
			return nil, err
		}
		var err error
		if e := r.readSlots(mi, func(k []byte, n uint64) {
			if err == nil {
				err = add(k, n)
			}
		}); e != nil {
			return nil, e
		}
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// mergeStackKeys sums count() and sum() entries whose keys print the same:
// ustack(N) at a function's entry keeps the caller the kernel's walk
// missed and drops the walk's last frame, so stacks that differed only
// there print alike and are one entry, as their printed form says.
func mergeStackKeys(mi *btgen.MapInfo, m *btprint.Map) {
	if m.Agg != btprint.AggCount && m.Agg != btprint.AggSum || !slices.ContainsFunc(mi.KeyStacks, func(s *btgen.StackInfo) bool { return s != nil }) {
		return
	}
	seen := map[string]int{}
	out := m.Entries[:0]
	for _, e := range m.Entries {
		id := printedKey(mi, e.Key)
		if j, ok := seen[id]; ok {
			out[j].Value += e.Value
			for i, s := range mi.KeyStacks {
				if s != nil && i < len(e.Key) && e.Key[i].Int < out[j].Key[i].Int {
					out[j].Key[i].Int = e.Key[i].Int
				}
			}
			continue
		}
		seen[id] = len(out)
		out = append(out, e)
	}
	m.Entries = out
}

// printedKey is a key as it prints: stack fields by their text.
func printedKey(mi *btgen.MapInfo, keys []btprint.Key) string {
	var b strings.Builder
	for i, k := range keys {
		if i < len(mi.KeyStacks) && mi.KeyStacks[i] != nil {
			b.WriteString(k.Str)
		} else {
			b.WriteString(strconv.FormatInt(k.Int, 10))
			b.WriteByte(0)
			b.WriteString(k.Str)
		}
		b.WriteByte(0)
	}
	return b.String()
}

// usymName returns a usym() value (the address, then the process: 16
// bytes of b) as bpftrace prints it: the name of the function the address
// is in, else the address in hex.
func (r *Runner) usymName(b []byte) string {
	ne := binary.NativeEndian
	addr, pid := ne.Uint64(b), int(ne.Uint64(b[8:]))
	if f := r.stacks.frames(pid, []uint64{addr}, 1); len(f) > 0 && f[len(f)-1].Symbol != "" {
		// The outermost frame of an inlined call is the function the
		// address is in.
		return f[len(f)-1].Symbol
	}
	return "0x" + strconv.FormatUint(addr, 16)
}
