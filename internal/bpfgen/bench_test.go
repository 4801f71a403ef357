package bpfgen_test

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/link"
	"github.com/cilium/ebpf/ringbuf"
	"github.com/usdtkit/usdtkit/internal/bpfgen"
	"github.com/usdtkit/usdtkit/internal/testutil"
)

// benchTarget is one tracee with one program on its "bench" probe (one
// site, an int3 on this sys/sdt.h's 1-byte nop), and a goroutine draining
// the ring buffer when the program has one.
type benchTarget struct {
	tr    *tracee
	coll  *ebpf.Collection
	l     link.Link
	rd    *ringbuf.Reader
	wg    sync.WaitGroup
	read  uint64
	lostN func() uint64
}

func (bt *benchTarget) close() {
	if bt.rd != nil {
		bt.rd.Close()
	}
	bt.wg.Wait()
	bt.l.Close()
	bt.coll.Close()
}

// hits fires the probe n times and returns the nanoseconds the tracee's own
// clock measured around its loop.
func (bt *benchTarget) hits(tb testing.TB, n int) float64 {
	lines := bt.tr.do(tb, fmt.Sprintf("loop %d", n))
	if len(lines) != 1 || !strings.HasPrefix(lines[0], "loop ") {
		tb.Fatalf("loop: %q", lines)
	}
	ns, err := strconv.ParseFloat(strings.TrimPrefix(lines[0], "loop "), 64)
	if err != nil {
		tb.Fatal(err)
	}
	return ns
}

// emptySpec is a program that does nothing: the floor.
func emptySpec() *ebpf.CollectionSpec {
	return &ebpf.CollectionSpec{Programs: map[string]*ebpf.ProgramSpec{bpfgen.ProgName: {
		Type: ebpf.Kprobe, AttachType: ebpf.AttachTraceUprobeMulti, License: "GPL",
		Instructions: asm.Instructions{asm.Mov.Imm(asm.R0, 0), asm.Return()},
	}}}
}

// ringbufSpec writes 16 bytes to a ring buffer without wakeup: the floor of
// delivering an event.
func ringbufSpec() *ebpf.CollectionSpec {
	return &ebpf.CollectionSpec{
		Maps: map[string]*ebpf.MapSpec{bpfgen.MapEvents: {Name: bpfgen.MapEvents, Type: ebpf.RingBuf, MaxEntries: bpfgen.DefaultRingSize}},
		Programs: map[string]*ebpf.ProgramSpec{bpfgen.ProgName: {
			Type: ebpf.Kprobe, AttachType: ebpf.AttachTraceUprobeMulti, License: "GPL",
			Instructions: asm.Instructions{
				asm.StoreImm(asm.R10, -16, 1, asm.Word),
				asm.StoreImm(asm.R10, -12, 2, asm.Word),
				asm.StoreImm(asm.R10, -8, 3, asm.Word),
				asm.StoreImm(asm.R10, -4, 4, asm.Word),
				asm.LoadMapPtr(asm.R1, 0).WithReference(bpfgen.MapEvents),
				asm.Mov.Reg(asm.R2, asm.R10),
				asm.Add.Imm(asm.R2, -16),
				asm.Mov.Imm(asm.R3, 16),
				asm.Mov.Imm(asm.R4, 1), // BPF_RB_NO_WAKEUP
				asm.FnRingbufOutput.Call(),
				asm.Mov.Imm(asm.R0, 0),
				asm.Return(),
			},
		}},
	}
}

func newBenchTarget(tb testing.TB, path string, variant string) *benchTarget {
	tb.Helper()
	tr := startTracee(tb, path)
	s := newSession(tb, path, nil, "bench")
	s.cfg.Multi = true
	var spec *ebpf.CollectionSpec
	switch variant {
	case "empty":
		spec = emptySpec()
	case "ringbuf-bare":
		spec = ringbufSpec()
	default:
		var err error
		if spec, err = bpfgen.Generate(&s.cfg); err != nil {
			tb.Fatal(err)
		}
	}
	coll, err := ebpf.NewCollection(spec)
	if err != nil {
		tb.Fatal(err)
	}
	ex, err := link.OpenExecutable(path)
	if err != nil {
		tb.Fatal(err)
	}
	l, err := ex.UprobeMulti(nil, coll.Programs[bpfgen.ProgName], &link.UprobeMultiOptions{
		Addresses: s.offsets, RefCtrOffsets: s.refs, Cookies: []uint64{0}, PID: uint32(tr.pid()),
	})
	if err != nil {
		coll.Close()
		tb.Fatal(err)
	}
	bt := &benchTarget{tr: tr, coll: coll, l: l, lostN: func() uint64 { return 0 }}
	if m := coll.Maps[bpfgen.MapLost]; m != nil {
		bt.lostN = func() uint64 { ev, _, _ := bpfgen.ReadLost(m); return ev }
	}
	if m := coll.Maps[bpfgen.MapEvents]; m != nil {
		if bt.rd, err = ringbuf.NewReader(m); err != nil {
			tb.Fatal(err)
		}
		bt.wg.Add(1)
		go func() {
			defer bt.wg.Done()
			var rec ringbuf.Record
			for {
				// The program wakes the reader only past a quarter of
				// the ring; poll too, as a real reader does.
				bt.rd.SetDeadline(time.Now().Add(5 * time.Millisecond))
				err := bt.rd.ReadInto(&rec)
				switch {
				case err == nil:
					bt.read++
				case errors.Is(err, os.ErrDeadlineExceeded):
				default:
					return
				}
			}
		}()
	}
	tb.Cleanup(bt.close)
	return bt
}

// BenchmarkHit measures the cost per probe hit of the generated ModeEvents
// program with two integer arguments (/args2) against an empty program
// (/empty) and a bare 16-byte ring buffer write without wakeup
// (/ringbuf-bare), each on its own copy of the tracee. /ratios times all
// three in the same iterations and reports args2/empty and
// args2/ringbuf-bare. The time is the tracee's own clock around a loop of
// hits; b.N counts loops of hitsPerLoop hits.
func BenchmarkHit(b *testing.B) {
	testutil.RequireBPF(b)
	const hitsPerLoop = 1000
	targets := map[string]*benchTarget{}
	for _, v := range []string{"empty", "args2", "ringbuf-bare"} {
		targets[v] = newBenchTarget(b, buildTracee(b, "-O2"), v)
	}
	for _, v := range []string{"empty", "args2", "ringbuf-bare"} {
		b.Run(v, func(b *testing.B) {
			bt := targets[v]
			var ns float64
			var n int
			for b.Loop() {
				ns += bt.hits(b, hitsPerLoop)
				n += hitsPerLoop
			}
			b.ReportMetric(ns/float64(n), "ns/hit")
			b.ReportMetric(float64(bt.lostN()), "lost")
		})
	}
	b.Run("ratios", func(b *testing.B) {
		sum := map[string]float64{}
		for b.Loop() {
			for _, v := range []string{"empty", "args2", "ringbuf-bare"} {
				sum[v] += targets[v].hits(b, hitsPerLoop)
			}
		}
		b.ReportMetric(sum["args2"]/sum["empty"], "args2/empty")
		b.ReportMetric(sum["args2"]/sum["ringbuf-bare"], "args2/ringbuf-bare")
		b.ReportMetric(sum["ringbuf-bare"]/sum["empty"], "ringbuf-bare/empty")
		b.ReportMetric(float64(targets["args2"].lostN()), "lost")
	})
}
