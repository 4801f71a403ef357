package usdtlink_test

import (
	"fmt"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"

	"github.com/usdtkit/usdtkit/usdtlink"
)

// Attach a program compiled against <bpf/usdt.bpf.h> to python3.11's
// gc__start probe in one process; bpf_usdt_cookie(ctx) returns 42 in it.
func ExampleAttach() {
	spec, err := usdtlink.LoadCollectionSpec("prog.bpf.o")
	if err != nil {
		fmt.Println(err)
		return
	}
	coll, err := ebpf.NewCollection(spec)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer coll.Close()
	pid := 1234
	link, err := usdtlink.Attach(coll.Programs["handle"], coll.Maps[usdtlink.SpecsMap],
		"/usr/bin/python3.11", "python", "gc__start", &usdtlink.Options{PID: pid, Cookie: 42})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer link.Close()
	// Read the program's maps until done.
}

// Read argument 0 of python3.11's gc__start into R2, in a program written
// with cilium/ebpf/asm, and attach it.
func ExampleEmitArgSwitch() {
	probes, err := usdtlink.Find("/usr/bin/python3.11", "python", "gc__start", nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	read, err := usdtlink.EmitArgSwitch(probes, 0, asm.R2, "arg0", usdtlink.Symbols, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	insns := asm.Instructions{asm.Mov.Reg(usdtlink.CtxReg, asm.R1)}
	insns = append(insns, read...)
	// ... use R2 ...
	insns = append(insns, asm.Mov.Imm(asm.R0, 0), asm.Return())
	prog, err := ebpf.NewProgram(&ebpf.ProgramSpec{Type: ebpf.Kprobe, AttachType: ebpf.AttachTraceUprobeMulti, License: "GPL", Instructions: insns})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer prog.Close()
	link, err := usdtlink.AttachProbes(prog, probes, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer link.Close()
}

// ParseSection reads the probe a libbpf-style section names.
func ExampleParseSection() {
	path, provider, name, ok := usdtlink.ParseSection("usdt/libc:libc:setjmp")
	fmt.Println(path, provider, name, ok)
	// Output: libc libc setjmp true
}
