package stackcap_test

import (
	"debug/elf"
	"fmt"

	"github.com/cilium/ebpf/asm"
	"github.com/usdtkit/usdtkit/internal/bpf/stackcap"
)

// A generator splices the frame-pointer capture into its program: R6
// holds the context, R7 points to a record (ring buffer or per-CPU
// scratch) with room for FramesSize bytes at offset 64. The site is a
// function's entry, so the caller word is read too.
func ExampleEmitFrames() {
	opts := &stackcap.FramesOptions{MaxFrames: 32, Entry: true}
	insns, err := stackcap.EmitFrames(elf.EM_X86_64, asm.R6, asm.R7, 64, opts, "ustack0")
	if err != nil {
		panic(err)
	}
	fmt.Println(stackcap.FramesSize(opts), "bytes;", len(insns) > 0)
	// Output: 272 bytes; true
}
