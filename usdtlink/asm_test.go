package usdtlink_test

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/ringbuf"

	"github.com/usdtkit/usdtkit/internal/testutil"
	"github.com/usdtkit/usdtkit/usdtlink"
)

// TestEmitArgSwitch writes a program in Go with cilium/ebpf/asm that sends
// the cookie and 12 arguments of every hit, using EmitArgSwitch, attaches
// it with AttachProbes to every probe of the operands program, and checks
// the values, every operand kind included (SIB in any layout: no libbpf
// spec is involved).
func TestEmitArgSwitch(t *testing.T) {
	testutil.RequireBPF(t)
	exe := buildC(t, "testdata/operands.c")
	probes, err := usdtlink.Find(exe, "t", "*", nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(probes) != len(operandProbes) {
		t.Fatalf("%d probes, want %d", len(probes), len(operandProbes))
	}
	rb, err := ebpf.NewMap(&ebpf.MapSpec{Type: ebpf.RingBuf, MaxEntries: 1 << 16})
	if err != nil {
		t.Fatal(err)
	}
	defer rb.Close()

	const recSize = 8 * (1 + nargs)
	insns := asm.Instructions{
		asm.Mov.Reg(usdtlink.CtxReg, asm.R1),
		asm.LoadMapPtr(asm.R1, rb.FD()),
		asm.Mov.Imm(asm.R2, recSize),
		asm.Mov.Imm(asm.R3, 0),
		asm.FnRingbufReserve.Call(),
		asm.JNE.Imm(asm.R0, 0, "reserved"),
		asm.Return(),
		asm.Mov.Reg(asm.R8, asm.R0).WithSymbol("reserved"),
		asm.Mov.Reg(asm.R1, usdtlink.CtxReg),
		asm.FnGetAttachCookie.Call(),
		asm.StoreMem(asm.R8, 0, asm.R0, asm.DWord),
	}
	for n := range nargs {
		code, err := usdtlink.EmitArgSwitch(probes, n, asm.R2, fmt.Sprintf("arg%d", n), usdtlink.Symbols, nil)
		if err != nil {
			t.Fatal(err)
		}
		insns = append(insns, code...)
		insns = append(insns, asm.StoreMem(asm.R8, int16(8+8*n), asm.R2, asm.DWord))
	}
	insns = append(insns,
		asm.Mov.Reg(asm.R1, asm.R8),
		asm.Mov.Imm(asm.R2, 0),
		asm.FnRingbufSubmit.Call(),
		asm.Mov.Imm(asm.R0, 0),
		asm.Return(),
	)
	prog, err := ebpf.NewProgram(&ebpf.ProgramSpec{Type: ebpf.Kprobe, AttachType: ebpf.AttachTraceUprobeMulti, License: "GPL", Instructions: insns})
	if err != nil {
		t.Fatal(err)
	}
	defer prog.Close()
	link, err := usdtlink.AttachProbes(prog, probes, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer link.Close()
	if link.Sites() != len(probes) || !link.Multi() {
		t.Errorf("%d sites, multi %v", link.Sites(), link.Multi())
	}
	rd, err := ringbuf.NewReader(rb)
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()

	tr := testutil.StartTracee(t, exe)
	lines := tr.Do(t, "fire")
	var natural []int64
	for _, f := range strings.Fields(lines[0])[1:] {
		u, err := strconv.ParseUint(strings.TrimPrefix(f, "-"), 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasPrefix(f, "-") {
			u = -u
		}
		natural = append(natural, int64(u))
	}
	for range probes {
		rd.SetDeadline(time.Now().Add(20 * time.Second))
		rec, err := rd.Read()
		if err != nil {
			t.Fatal(err)
		}
		var r struct {
			Cookie uint64
			Args   [nargs]int64
		}
		if err := binary.Read(bytes.NewReader(rec.RawSample), binary.NativeEndian, &r); err != nil {
			t.Fatal(err)
		}
		if r.Cookie >= uint64(len(probes)) {
			t.Fatalf("cookie %d", r.Cookie)
		}
		p := probes[r.Cookie]
		var want []int64
		for _, op := range operandProbes {
			if op.name == p.Name {
				want = op.want
			}
		}
		if p.Name == "natural" {
			want = natural
		}
		for i := range nargs {
			w := int64(0)
			if i < len(want) {
				w = want[i]
			}
			if r.Args[i] != w {
				t.Errorf("t:%s arg%d = %#x, want %#x", p.Name, i, r.Args[i], w)
			}
		}
	}
}
