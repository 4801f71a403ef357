package btrun

import (
	"encoding/binary"
	"fmt"

	"github.com/usdtkit/usdtkit/internal/bpf/stackcap"
	"github.com/usdtkit/usdtkit/internal/lang/btgen"
	"github.com/usdtkit/usdtkit/internal/lang/btprint"
)

// Maps counted in user space (btgen.MapInfo.User, btgen's keyrec.go):
// each hit is a btgen.RecKey record whose stack copy is unwound here, as
// a printf'd stack's, and counted in a userMap. The unwound stack is
// interned: its key field holds the stack's index in stacks.copied in
// place of a stack map id (btgen.StackKeySize bytes: index, 0, pid), so
// that the key decodes, prints, merges and is cleared as a kernel map's,
// with keyStack reading the addresses from stacks.copied.

// maxUserEntries bounds the entries of all maps counted in user space,
// and the stacks interned for them, as MaxEntries bounds a BPF map: a hit
// of a new key past it is counted as a failed map update.
const maxUserEntries = 1 << 20

// userMap is one map counted in user space.
type userMap struct {
	// index of each key (its bytes, btgen.MapInfo.KeySize) in keys and
	// vals, which keep the order the keys were first seen in.
	index map[string]int
	keys  [][]byte
	vals  []uint64
}

// userEntries counts the entries of every userMap.
func (r *Runner) userEntries() int {
	n := 0
	for _, um := range r.user {
		if um != nil {
			n += len(um.keys)
		}
	}
	return n
}

// keyHit counts one RecKey record of map idx.
func (r *Runner) keyHit(idx int, rec []byte) error {
	if idx >= len(r.prog.Maps) {
		return fmt.Errorf("key record of map %d of %d", idx, len(r.prog.Maps))
	}
	mi := &r.prog.Maps[idx]
	val, key, c, pid, entry, err := btgen.DecodeKeyRecord(mi, rec)
	if err != nil {
		return err
	}
	f := mi.StackField()
	info := mi.KeyStacks[f]
	pcs := r.stacks.unwind(pid, info, c, entry)
	if info.Frames > 0 && len(pcs) > info.Frames {
		pcs = pcs[:info.Frames]
	}
	id, ok := r.stacks.intern(pid, pcs, r.userEntries() < maxUserEntries)
	if !ok {
		r.userDropped++
		return nil
	}
	r.keyBuf = append(r.keyBuf[:0], key...)
	off := mi.KeyOffs[f]
	if off+btgen.StackKeySize > len(r.keyBuf) {
		return fmt.Errorf("key record of %s: stack field at %d of a %d-byte key", mi.Map.Name, off, len(r.keyBuf))
	}
	ne := binary.NativeEndian
	ne.PutUint64(r.keyBuf[off:], uint64(id))
	ne.PutUint64(r.keyBuf[off+8:], 0)
	ne.PutUint64(r.keyBuf[off+stackcap.StackIDSize:], uint64(pid))
	if r.user == nil {
		r.user = make([]*userMap, len(r.prog.Maps))
	}
	um := r.user[idx]
	if um == nil {
		um = &userMap{index: map[string]int{}}
		r.user[idx] = um
	}
	if i, ok := um.index[string(r.keyBuf)]; ok {
		um.vals[i] += val
		return nil
	}
	if r.userEntries() >= maxUserEntries {
		r.userDropped++
		return nil
	}
	k := append([]byte(nil), r.keyBuf...)
	um.index[string(k)] = len(um.keys)
	um.keys = append(um.keys, k)
	um.vals = append(um.vals, val)
	return nil
}

// userEach calls f with every key and value of map idx counted in user
// space.
func (r *Runner) userEach(idx int, f func(key []byte, val uint64)) {
	if idx >= len(r.user) || r.user[idx] == nil {
		return
	}
	um := r.user[idx]
	for i, k := range um.keys {
		f(k, um.vals[i])
	}
}

// readUserMap adds the entries of map idx counted in user space to m.
func (r *Runner) readUserMap(idx int, m *btprint.Map) {
	mi := &r.prog.Maps[idx]
	r.userEach(idx, func(k []byte, v uint64) {
		m.Entries = append(m.Entries, btprint.MapEntry{Key: r.decodeKey(mi, k), Value: v})
	})
}

// clearUserMap empties map idx counted in user space or, with zero,
// zeros its values and keeps its keys (as zero() keeps a BPF map's).
func (r *Runner) clearUserMap(idx int, zero bool) {
	if idx >= len(r.user) || r.user[idx] == nil {
		return
	}
	if zero {
		clear(r.user[idx].vals)
		return
	}
	r.user[idx] = nil
}

// intern returns the index in s.copied of the stack pcs of process pid,
// adding it when add allows; ok is false when it is new and add is
// false.
func (s *stacks) intern(pid int, pcs []uint64, add bool) (id int64, ok bool) {
	s.init()
	b := binary.NativeEndian.AppendUint64(s.internBuf[:0], uint64(pid))
	for _, pc := range pcs {
		b = binary.NativeEndian.AppendUint64(b, pc)
	}
	s.internBuf = b
	if id, ok := s.copiedIDs[string(b)]; ok {
		return id, true
	}
	if !add {
		return 0, false
	}
	id = int64(len(s.copied))
	s.copiedIDs[string(b)] = id
	s.copied = append(s.copied, append([]uint64(nil), pcs...))
	return id, true
}

// copiedStack returns the addresses of interned stack id.
func (s *stacks) copiedStack(id int64) []uint64 {
	if id < 0 || id >= int64(len(s.copied)) {
		return nil
	}
	return s.copied[id]
}
