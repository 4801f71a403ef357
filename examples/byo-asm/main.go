// Command byo-asm reads USDT arguments from a BPF program written in Go
// with cilium/ebpf/asm, no C. usdtlink.EmitArgSwitch reads argument N of
// whichever location fired; usdtlink.AttachProbes attaches with matching
// cookies. It prints one line per hit.
//
//	byo-asm [-p PID] TARGET PROVIDER:NAME
//
// TARGET is a file, a library short name ("libc"), or "" with -p.
// PROVIDER and NAME may be globs.
package main

import (
	"bytes"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/features"
	"github.com/cilium/ebpf/ringbuf"

	"github.com/usdtkit/usdtkit/sdt"
	"github.com/usdtkit/usdtkit/usdtlink"
)

// maxArgs is the number of arguments each hit sends: as many as a
// usdt_spec holds.
const maxArgs = usdtlink.MaxArgs

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "byo-asm:", err)
		os.Exit(1)
	}
}

func run() error {
	pid := flag.Int("p", 0, "process to trace")
	flag.Parse()
	if flag.NArg() != 2 {
		return errors.New("usage: byo-asm [-p PID] TARGET PROVIDER:NAME")
	}
	provider, name, ok := strings.Cut(flag.Arg(1), ":")
	if !ok {
		return fmt.Errorf("%q is not PROVIDER:NAME", flag.Arg(1))
	}
	probes, err := usdtlink.Find(flag.Arg(0), provider, name, &usdtlink.Options{PID: *pid})
	if err != nil {
		return err
	}

	events, err := ebpf.NewMap(&ebpf.MapSpec{Type: ebpf.RingBuf, MaxEntries: 1 << 20})
	if err != nil {
		return err
	}
	defer events.Close()
	insns, err := program(probes, events)
	if err != nil {
		return err
	}
	spec := &ebpf.ProgramSpec{Type: ebpf.Kprobe, License: "GPL", Instructions: insns}
	if features.HaveBPFLinkUprobeMulti() == nil {
		spec.AttachType = ebpf.AttachTraceUprobeMulti
	}
	prog, err := ebpf.NewProgram(spec)
	if err != nil {
		return err
	}
	defer prog.Close()

	link, err := usdtlink.AttachProbes(prog, probes, &usdtlink.Options{PID: *pid})
	if err != nil {
		return err
	}
	defer link.Close()
	fmt.Printf("attached %d sites\n", link.Sites())

	// The cookie of a hit is its location's index over all probes.
	var site []*sdt.Probe
	for i := range probes {
		for range probes[i].Locations {
			site = append(site, &probes[i])
		}
	}
	rd, err := ringbuf.NewReader(events)
	if err != nil {
		return err
	}
	defer rd.Close()
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	go func() { <-sig; rd.Close() }()
	for {
		rec, err := rd.Read()
		if errors.Is(err, ringbuf.ErrClosed) {
			return nil
		}
		if err != nil {
			return err
		}
		var r struct {
			Cookie uint64
			Args   [maxArgs]int64
		}
		if err := binary.Read(bytes.NewReader(rec.RawSample), binary.NativeEndian, &r); err != nil {
			return err
		}
		if r.Cookie >= uint64(len(site)) {
			continue
		}
		p, loc := site[r.Cookie], 0
		for i := int(r.Cookie) - 1; i >= 0 && site[i] == p; i-- {
			loc++
		}
		var b strings.Builder
		fmt.Fprintf(&b, "%s:", p)
		for i := range min(len(p.Locations[loc].Args), maxArgs) {
			fmt.Fprintf(&b, " %d", r.Args[i])
		}
		fmt.Println(b.String())
	}
}

// program sends {cookie, arg0..arg11} to events on every hit.
func program(probes []sdt.Probe, events *ebpf.Map) (asm.Instructions, error) {
	insns := asm.Instructions{
		asm.Mov.Reg(usdtlink.CtxReg, asm.R1), // R6: the context, kept throughout
		asm.LoadMapPtr(asm.R1, events.FD()),
		asm.Mov.Imm(asm.R2, 8*(1+maxArgs)),
		asm.Mov.Imm(asm.R3, 0),
		asm.FnRingbufReserve.Call(),
		asm.JNE.Imm(asm.R0, 0, "reserved"),
		asm.Return(),
		asm.Mov.Reg(asm.R8, asm.R0).WithSymbol("reserved"), // R8: the record
		asm.Mov.Reg(asm.R1, usdtlink.CtxReg),
		asm.FnGetAttachCookie.Call(),
		asm.StoreMem(asm.R8, 0, asm.R0, asm.DWord),
	}
	for n := range maxArgs {
		read, err := usdtlink.EmitArgSwitch(probes, n, asm.R2, fmt.Sprintf("arg%d", n), usdtlink.Symbols, nil)
		if err != nil {
			return nil, err
		}
		insns = append(insns, read...)
		insns = append(insns, asm.StoreMem(asm.R8, int16(8+8*n), asm.R2, asm.DWord))
	}
	return append(insns,
		asm.Mov.Reg(asm.R1, asm.R8),
		asm.Mov.Imm(asm.R2, 0),
		asm.FnRingbufSubmit.Call(),
		asm.Mov.Imm(asm.R0, 0),
		asm.Return(),
	), nil
}
