package btgen

import (
	"fmt"
	"math/bits"

	"github.com/cilium/ebpf/asm"

	"github.com/usdtkit/usdtkit/internal/bpf/argread"
	"github.com/usdtkit/usdtkit/internal/lang/btlang"
)

// RecEvent is the kind of an event record: a probe hit with its
// arguments, sent by a block that has an Event (Options.Events). Its id is
// the index in Program.Events.
const RecEvent = 7

// Event asks a probe block to send an event record (RecEvent) at every hit
// that passes its predicate, after its body: the hit's time, thread,
// process, CPU, comm, probe and arguments. It is not in the language:
// package trace adds it to blocks it writes itself.
type Event struct {
	// Args is the most arguments an event carries, arg0 first; 0 means
	// every argument its site has. A return site carries one: its return
	// value as arg0.
	Args int
	// Strings has bit i set to read argument i as a NUL-terminated string
	// of at most StrLen bytes, NUL included (a fault sets the argument's
	// fault bit and leaves "").
	Strings uint16
	// StrLen is 0 for argread.DefaultStrLen, at most argread.MaxStrLen.
	StrLen int
}

// Event record layout, in native byte order after the 8-byte header
// {RecEvent, id}:
//
//	off  size  field
//	  8     8  time     bpf_ktime_get_ns (CLOCK_MONOTONIC)
//	 16     4  tid      thread id
//	 20     4  pid      thread group id
//	 24     4  cpu      bpf_get_smp_processor_id
//	 28     4  probe    index in Program.Probes
//	 32     1  nargs    arguments of the site hit (at most ArgCap)
//	 34     2  signed   bit i: argument i is signed (its value is sign-extended)
//	 36     2  faults   bit i: argument i (or its string) could not be read
//	 38     2  bytes    bit i: argument i's string slot holds Go bytes (Site.Bytes)
//	 40    16  comm     bpf_get_current_comm, NUL-padded
//	 56     …  args     ArgCap × u64, the values extended to 64 bits
//	  …     …  strings  per bit of Strings below ArgCap, in argument order,
//	                    StrLen bytes rounded up to 8: the string up to its NUL,
//	                    or for a bit of bytes the first min(arg i+1, StrLen-2)
//	                    bytes, NULs included
//
// Only args[0:nargs] and the string slots of arguments below nargs are
// meaningful; the others hold older records' bytes.
const (
	EvTimeOff   = 8
	EvTIDOff    = 16
	EvPIDOff    = 20
	EvCPUOff    = 24
	EvProbeOff  = 28
	EvNArgsOff  = 32
	EvSignedOff = 34
	EvFaultsOff = 36
	EvBytesOff  = 38
	EvCommOff   = 40
	EvCommLen   = 16
	EvArgsOff   = 56
)

// EventInfo is how a block's event records are laid out.
type EventInfo struct {
	// Block is the index of the block in Program.Blocks.
	Block int
	// ArgCap is the number of 8-byte argument slots: the most arguments
	// any site of the block sends.
	ArgCap int
	// Strings has bit i set when argument i has a string slot, at
	// StrOffs[i], of StrLen bytes: Event.Strings and every site's Bytes.
	Strings uint16
	// Bytes has bit i set when some site reads Go bytes into argument i's
	// slot (Site.Bytes); a record's bytes field says which it holds.
	Bytes   uint16
	StrLen  int
	StrOffs [argread.MaxArgs]int
	// Size is the record's size in bytes.
	Size int
}

// eventGen is a block's event while it is generated.
type eventGen struct {
	info EventInfo
	id   int
	want int // Event.Args
	// strs are Event.Strings, the arguments read as NUL-terminated
	// strings (info.Strings has the slots of Go bytes too).
	strs uint16
	// meta is the scratch slot each site's fetch code writes its nargs
	// and signed bits to.
	meta int
}

// newEvent lays out the records of block i's event e, for its sites.
func newEvent(e *Event, i int, sites []Site, pos btlang.Pos) (*eventGen, error) {
	strLen := e.StrLen
	if strLen == 0 {
		strLen = argread.DefaultStrLen
	}
	if strLen < 2 || strLen > argread.MaxStrLen {
		return nil, &btlang.Error{Pos: pos, Msg: fmt.Sprintf("a string length of %d bytes is not from 2 to %d", strLen, argread.MaxStrLen)}
	}
	if e.Args < 0 || e.Args > argread.MaxArgs {
		return nil, &btlang.Error{Pos: pos, Msg: fmt.Sprintf("events of %d arguments: at most %d", e.Args, argread.MaxArgs)}
	}
	ev := &eventGen{info: EventInfo{Block: i, StrLen: strLen}, want: e.Args}
	for k := range sites {
		ev.info.ArgCap = max(ev.info.ArgCap, siteArgs(e.Args, &sites[k]))
	}
	if extra := e.Strings >> ev.info.ArgCap; extra != 0 {
		return nil, &btlang.Error{Pos: pos, Msg: fmt.Sprintf("arg%d is read as a string but the probe's sites have at most %d arguments", ev.info.ArgCap+bits.TrailingZeros16(extra), ev.info.ArgCap)}
	}
	for k := range sites {
		s := &sites[k]
		n := siteArgs(e.Args, s)
		if s.Return || s.Bytes == 0 {
			continue
		}
		// The length is the next argument, which the event carries too.
		if extra := s.Bytes >> max(n-1, 0); extra != 0 {
			return nil, &btlang.Error{Pos: pos, Msg: fmt.Sprintf("site %d reads bytes at arg%d, whose length is past the %d arguments its events carry", k, max(n-1, 0)+bits.TrailingZeros16(extra), n)}
		}
		if both := s.Bytes & e.Strings; both != 0 {
			return nil, &btlang.Error{Pos: pos, Msg: fmt.Sprintf("site %d reads arg%d as bytes and as a string", k, bits.TrailingZeros16(both))}
		}
		ev.info.Bytes |= s.Bytes
	}
	ev.info.Strings = e.Strings | ev.info.Bytes
	ev.strs = e.Strings
	off := EvArgsOff + 8*ev.info.ArgCap
	for a := range ev.info.ArgCap {
		if ev.info.Strings&(1<<a) != 0 {
			ev.info.StrOffs[a] = off
			off += round8(strLen)
		}
	}
	ev.info.Size = off
	if off > maxScratch/2 {
		return nil, &btlang.Error{Pos: pos, Msg: fmt.Sprintf("events of %d bytes are too large", off)}
	}
	return ev, nil
}

// siteArgs returns how many arguments an event of site s carries.
func siteArgs(want int, s *Site) int {
	n := len(s.Args)
	if s.Return {
		n = 0
		if s.Ret.Kind != 0 {
			n = 1
		}
	}
	n = min(n, argread.MaxArgs)
	if want > 0 {
		n = min(n, want)
	}
	return n
}

// eventFetch adds to a site's fetch items what its event needs: the
// arguments it carries (a return site's value as arg0) and a constant
// with its argument count and signed bits. Sites with equal fetches still
// share their code.
func (g *gen) eventFetch(s *Site, items []fetchItem, used uint16) []fetchItem {
	ev := g.event
	n := siteArgs(ev.want, s)
	var signed uint16
	for a := range n {
		fetch := s.Ret
		if !s.Return {
			fetch = s.Args[a]
		}
		if fetch.Signed {
			signed |= 1 << a
		}
		if !s.Return && used&(1<<a) != 0 {
			continue // fetched for the body already
		}
		items = append(items, fetchItem{f: fetch, slot: argsOff + 8*a, bit: a})
	}
	var bytes uint16
	if !s.Return {
		bytes = s.Bytes & (1<<max(n-1, 0) - 1)
	}
	meta := int64(n) | int64(signed)<<16 | int64(bytes)<<48
	return append(items, fetchItem{f: argread.Fetch{Kind: argread.FetchConst, Size: 8, Value: meta}, slot: ev.meta, bit: argread.MaxArgs + 2})
}

// emitEvent builds the block's event record in place in the ring buffer
// (reserved, filled, submitted: no copy) and sends it; a full ring is
// counted in lost[LostEvents]. R8 (the cookie, free after the dispatch and
// the body) holds the record across the helper calls.
func (g *gen) emitEvent() {
	ev := g.event
	info := &ev.info
	const rec = asm.R8
	sent, flags := g.newLabel("evsent"), g.newLabel("evflags")
	noRoom := g.newLabel("evfull")
	g.emit(
		asm.LoadMapPtr(asm.R1, 0).WithReference(MapEvents),
		asm.Mov.Imm(asm.R2, int32(info.Size)),
		asm.Mov.Imm(asm.R3, 0),
		asm.FnRingbufReserve.Call(),
		asm.JEq.Imm(asm.R0, 0, noRoom),
		asm.Mov.Reg(rec, asm.R0),
		asm.FnKtimeGetNs.Call(),
		asm.StoreMem(rec, EvTimeOff, asm.R0, asm.DWord),
		// tgid<<32 | tid: tid at EvTIDOff, pid at EvPIDOff.
		asm.FnGetCurrentPidTgid.Call(),
		asm.StoreMem(rec, EvTIDOff, asm.R0, asm.DWord),
		asm.FnGetSmpProcessorId.Call(),
		asm.StoreMem(rec, EvCPUOff, asm.R0, asm.Word),
		asm.LoadMem(asm.R0, asm.R7, probeOff, asm.DWord),
		asm.StoreMem(rec, EvProbeOff, asm.R0, asm.Word),
		asm.LoadMem(asm.R0, asm.R7, int16(ev.meta), asm.DWord),
		asm.StoreMem(rec, EvNArgsOff, asm.R0, asm.DWord),
		asm.Mov.Reg(asm.R1, rec),
		asm.Add.Imm(asm.R1, EvCommOff),
		asm.Mov.Imm(asm.R2, EvCommLen),
		asm.FnGetCurrentComm.Call(),
	)
	for a := range info.ArgCap {
		g.emit(
			asm.LoadMem(asm.R0, asm.R7, int16(argsOff+8*a), asm.DWord),
			asm.StoreMem(rec, int16(EvArgsOff+8*a), asm.R0, asm.DWord),
		)
	}
	for a := range info.ArgCap {
		if info.Strings&(1<<a) == 0 {
			continue
		}
		skip := g.newLabel("evstr")
		g.emit(
			// Arguments the site does not have are not read.
			asm.LoadMem(asm.R0, asm.R7, int16(ev.meta), asm.Byte),
			asm.JLE.Imm(asm.R0, int32(a), skip),
		)
		if info.Bytes&(1<<a) != 0 {
			// Go bytes at this site: as many as arg a+1 says, at
			// most StrLen-2 (a length compared unsigned: a negative
			// one, a damaged value, reads the most).
			str, short := g.newLabel("evnul"), g.newLabel("evlen")
			if ev.strs&(1<<a) == 0 {
				str = skip
			}
			g.emit(
				asm.LoadMem(asm.R0, asm.R7, int16(ev.meta+6), asm.Half),
				asm.And.Imm(asm.R0, 1<<a),
				asm.JEq.Imm(asm.R0, 0, str),
				asm.LoadMem(asm.R2, asm.R7, int16(argsOff+8*(a+1)), asm.DWord),
				asm.JLE.Imm(asm.R2, int32(info.StrLen-2), short),
				asm.Mov.Imm(asm.R2, int32(info.StrLen-2)),
			)
			g.label(short)
			g.emit(
				asm.Mov.Reg(asm.R1, rec),
				asm.Add.Imm(asm.R1, int32(info.StrOffs[a])),
				asm.LoadMem(asm.R3, asm.R7, int16(argsOff+8*a), asm.DWord),
			)
			g.readUser()
			g.emit(
				asm.JSGE.Imm(asm.R0, 0, skip),
				asm.Or.Imm(asm.R9, 1<<a),
				asm.Ja.Label(skip),
			)
			if ev.strs&(1<<a) == 0 {
				// Not Go bytes at this site, and no string: the
				// argument is an integer here.
				g.label(skip)
				g.emit(nop())
				continue
			}
			g.label(str)
		}
		g.emit(
			asm.Mov.Reg(asm.R1, rec),
			asm.Add.Imm(asm.R1, int32(info.StrOffs[a])),
			asm.Mov.Imm(asm.R2, int32(info.StrLen)),
			asm.LoadMem(asm.R3, asm.R7, int16(argsOff+8*a), asm.DWord),
		)
		// On a fault the buffer is zeroed.
		g.readUserStr()
		g.emit(
			asm.JSGE.Imm(asm.R0, 0, skip),
			asm.Or.Imm(asm.R9, 1<<a),
		)
		g.label(skip)
		g.emit(nop())
	}
	g.emit(
		asm.StoreMem(rec, EvFaultsOff, asm.R9, asm.Half),
		asm.LoadMem(asm.R0, asm.R7, int16(ev.meta+6), asm.Half),
		asm.StoreMem(rec, EvBytesOff, asm.R0, asm.Half),
		asm.StoreImm(rec, 0, RecEvent, asm.Word),
		asm.StoreImm(rec, 4, int64(ev.id), asm.Word),
		// As output: wake the reader only when the ring is a quarter full.
		asm.LoadMapPtr(asm.R1, 0).WithReference(MapEvents),
		asm.Mov.Imm(asm.R2, rbAvailData),
		asm.FnRingbufQuery.Call(),
		asm.Mov.Imm(asm.R2, rbNoWakeup),
		asm.JLT.Imm(asm.R0, int32(g.opts.RingSize/4), flags),
		asm.Mov.Imm(asm.R2, rbForceWakeup),
	)
	g.label(flags)
	g.emit(
		asm.Mov.Reg(asm.R1, rec),
		asm.FnRingbufSubmit.Call(),
		asm.Ja.Label(sent),
	)
	g.label(noRoom)
	g.lost(LostEvents)
	g.label(sent)
	g.emit(nop())
}

// setEvent prepares block i's event, if it has one.
func (g *gen) setEvent(i int) error {
	if i >= len(g.opts.Events) || g.opts.Events[i] == nil {
		return nil
	}
	if g.special != 0 {
		return internal(g.block.At, "an event of a BEGIN, END or interval block")
	}
	ev, err := newEvent(g.opts.Events[i], i, g.sites, g.block.At)
	if err != nil {
		return err
	}
	ev.id = len(g.out.Events)
	ev.meta = g.alloc(8)
	g.event = ev
	g.out.Events = append(g.out.Events, ev.info)
	return nil
}
