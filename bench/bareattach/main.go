// Command bareattach is the floor of the start-to-attached comparison: the
// least a cilium/ebpf program does to raise one USDT semaphore. It loads
// an empty program, attaches it with one uprobe_multi link, prints
// "attached" (or READY when given) and waits for SIGINT.
//
//	bareattach PATH OFFSET REFCTR PID [READY]
package main

import (
	"fmt"
	"os"
	"os/signal"
	"strconv"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/link"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "bareattach:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	if len(args) != 4 && len(args) != 5 {
		return fmt.Errorf("usage: bareattach PATH OFFSET REFCTR PID [READY]")
	}
	ready := "attached"
	if len(args) == 5 {
		ready, args = args[4], args[:4]
	}
	var nums [3]uint64
	for i, a := range args[1:] {
		n, err := strconv.ParseUint(a, 0, 64)
		if err != nil {
			return err
		}
		nums[i] = n
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt)
	prog, err := ebpf.NewProgram(&ebpf.ProgramSpec{
		Type:       ebpf.Kprobe,
		AttachType: ebpf.AttachTraceUprobeMulti,
		License:    "GPL",
		Instructions: asm.Instructions{
			asm.Mov.Imm(asm.R0, 0),
			asm.Return(),
		},
	})
	if err != nil {
		return err
	}
	defer prog.Close()
	ex, err := link.OpenExecutable(args[0])
	if err != nil {
		return err
	}
	l, err := ex.UprobeMulti(nil, prog, &link.UprobeMultiOptions{
		Addresses:     []uint64{nums[0]},
		RefCtrOffsets: []uint64{nums[1]},
		PID:           uint32(nums[2]),
	})
	if err != nil {
		return err
	}
	defer l.Close()
	fmt.Println(ready)
	<-sig
	return nil
}
