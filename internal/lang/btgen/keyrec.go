package btgen

import (
	"encoding/binary"
	"fmt"

	"github.com/cilium/ebpf/asm"

	"github.com/usdtkit/usdtkit/internal/bpf/stackcap"
	"github.com/usdtkit/usdtkit/internal/lang/btlang"
)

// Stack keys counted in user space (Options.StackKeys StackKeysCopy).
//
// The kernel's frame-pointer walk (bpf_get_stackid) ends at the first
// function built without frame pointers, Debian's C library among them:
// a profile of a qsort callback stops in qsort. With StackKeysCopy a
// count() or sum() map keyed by a ustack is no BPF map: each hit builds
// its key's other fields as a BPF key would be, captures the stack as a
// printf argument is captured (registers and a copy of the top of the
// user stack, the pid, the entry flag: stackArg), and sends it all in one
// RecKey record; user space unwinds the copy with each object's CFI and
// adds the value to its own entry for (the frames' addresses, the pid,
// the other fields). A hit whose record the ring refuses is counted in
// lost[LostEvents], as a printf's. Each hit thus costs a copy of
// StackCopy bytes of stack and a ring record of about that size, and user
// space an unwinding: more than a frame-pointer key, which costs a walk
// and a map update and nothing in user space.
//
// Supported: count() and sum() maps with exactly one ustack field among
// their keys (with probe, pid, comm, integers, strings), print(),
// clear() and zero() of them. Refused at compile time: other maps keyed
// by a stack, keys of several stacks, and delete() of such a map.

// KeyRingSize is the ring buffer's size by default for a program with
// maps counted in user space: room for about 2000 hits' records of 8 KiB
// stack copies between two reads.
const KeyRingSize = 16 << 20

// RecKey is the kind of a record of one hit of a map counted in user
// space (MapInfo.User): u32 kind, u32 map index, then as
// MapInfo.KeyRecord lays it out.
const RecKey = 9

// KeyRecord returns the layout of a RecKey record of map mi: the u64
// value to add (1 for count()) at 8, the key (KeySize bytes, the stack
// field zeros) at keyOff, the stack argument (stackArgSize of the stack
// field's StackInfo: the copy, the pid, the entry flag) at stackOff, and
// the record's size. The stack field is KeyStacks[StackField()].
func (mi *MapInfo) KeyRecord() (keyOff, stackOff, size int) {
	f := mi.StackField()
	if f < 0 {
		return 16, 16 + mi.KeySize, 16 + mi.KeySize
	}
	keyOff = 16
	stackOff = keyOff + round8(mi.KeySize)
	return keyOff, stackOff, stackOff + round8(stackArgSize(mi.KeyStacks[f]))
}

// StackField returns the index of the first stack field of mi's key, or
// -1.
func (mi *MapInfo) StackField() int {
	for i, s := range mi.KeyStacks {
		if s != nil {
			return i
		}
	}
	return -1
}

// userMap makes mi, a map with a stack key, a map counted in user space
// (Options.StackKeys StackKeysCopy), or says why it cannot be.
func userMap(mi *MapInfo, o *Options) error {
	n := 0
	for _, s := range mi.KeyStacks {
		if s != nil {
			n++
		}
	}
	if n == 0 {
		return nil
	}
	m := mi.Map
	if m.Agg != btlang.AggCount && m.Agg != btlang.AggSum {
		what := "an integer or string value"
		if m.Agg != btlang.AggNone {
			what = m.Agg.String() + "()"
		}
		return &btlang.Error{Pos: m.Pos, Msg: fmt.Sprintf("with stacks unwound with CFI (--unwind cfi), a map keyed by ustack counts only count() or sum(), not %s: use --unwind fp", what)}
	}
	if n > 1 {
		return &btlang.Error{Pos: m.Pos, Msg: "with stacks unwound with CFI (--unwind cfi), a map key holds one ustack, not several: use --unwind fp"}
	}
	size := o.StackCopy
	if size <= 0 {
		size = DefaultStackCopy
	}
	for i, s := range mi.KeyStacks {
		if s != nil {
			c := *s
			c.Map, c.Copy, c.Machine = "", size, o.Machine
			mi.KeyStacks[i] = &c
		}
	}
	mi.User, mi.Slots, mi.Array, mi.PerCPU = true, "", false, false
	mi.BPF = ""
	return nil
}

// keyRecord emits @m[k] = count() or sum(x) of a map counted in user
// space: the RecKey record (KeyRecord) built in scratch and sent.
func (g *gen) keyRecord(r *btlang.MapRef, call *btlang.Call, mi *MapInfo) {
	keyOff, stackOff, size := mi.KeyRecord()
	if size > maxScratch {
		g.fail(&btlang.Error{Pos: r.At, Msg: fmt.Sprintf("a key record of %s needs %d bytes, more than the %d bytes of scratch space", r.Name, size, maxScratch)})
		return
	}
	rec := g.alloc(size)
	if mi.Map.Agg == btlang.AggSum {
		if len(call.Args) == 0 {
			g.fail(internal(call.At, "%s() without a value", call.Name))
			return
		}
		g.intExpr(call.Args[0])
		g.emit(asm.StoreMem(asm.R7, int16(rec+8), asm.R0, asm.DWord))
	} else {
		g.emit(storeImm64(asm.R7, int16(rec+8), 1))
	}
	g.keyAt(r, mi, rec+keyOff)
	g.stackArg(r.At, rec+stackOff, mi.KeyStacks[mi.StackField()])
	g.emit(
		asm.StoreImm(asm.R7, int16(rec), RecKey, asm.Word),
		asm.StoreImm(asm.R7, int16(rec+4), int64(g.mapIdx[mi.Map]), asm.Word),
	)
	g.output(rec, size)
}

// DecodeKeyRecord returns the parts of a RecKey record of map mi: the
// value to add, the key (its stack field zeros), the stack copy, the pid
// and whether the site was a function's entry. An error says the record
// does not fit mi's layout.
func DecodeKeyRecord(mi *MapInfo, rec []byte) (value uint64, key []byte, c stackcap.Copy, pid int, entry bool, err error) {
	keyOff, stackOff, size := mi.KeyRecord()
	f := mi.StackField()
	if !mi.User || f < 0 {
		return 0, nil, c, 0, false, fmt.Errorf("key record of %s: the map is not counted in user space", mi.Map.Name)
	}
	if len(rec) < size {
		return 0, nil, c, 0, false, fmt.Errorf("key record of %s: %d bytes, want %d", mi.Map.Name, len(rec), size)
	}
	n := stackArgSize(mi.KeyStacks[f])
	b := rec[stackOff : stackOff+n]
	c, err = stackcap.DecodeCopy(b[:n-16])
	if err != nil {
		return 0, nil, c, 0, false, fmt.Errorf("key record of %s: %w", mi.Map.Name, err)
	}
	ne := binary.NativeEndian
	value = ne.Uint64(rec[8:])
	key = rec[keyOff : keyOff+mi.KeySize]
	pid = int(ne.Uint64(b[n-16:]))
	entry = ne.Uint64(b[n-8:]) != 0
	return value, key, c, pid, entry, nil
}
