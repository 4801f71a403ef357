package stackcap_test

import (
	"debug/elf"
	"slices"
	"testing"

	"github.com/cilium/ebpf/asm"
	"github.com/usdtkit/usdtkit/internal/stackcap"
	"github.com/usdtkit/usdtkit/internal/stackcap/stacktest"
	"github.com/usdtkit/usdtkit/internal/testutil"
)

// TestCFIWalkFramePointers: without tables (no process known) every step
// of the walk with call frame information is by frame pointer: on code
// with frame pointers its frames are the frame-pointer walk's, to main.
func TestCFIWalkFramePointers(t *testing.T) {
	testutil.RequireBPF(t)
	exe := stacktest.BuildChain(t, "-O0", "-fno-omit-frame-pointer")
	tr := testutil.StartTracee(t, exe)
	walk := stacktest.Attach(t, exe, "leaf", &stacktest.Options{Mode: stacktest.Walk, Entry: true, PID: tr.PID()})
	cfi := stacktest.Attach(t, exe, "leaf", &stacktest.Options{Mode: stacktest.CFIWalk, Entry: true, PID: tr.PID()})
	for _, cmd := range []string{"levels", "deep 12"} {
		tr.Do(t, cmd)
		w, c := walk.Next(t), cfi.Next(t)
		have := names(t, tr.PID(), exe, c.Frames)
		t.Logf("%s: %v", cmd, have)
		i := slices.Index(have, "main")
		if i < 0 || len(w.Frames) <= i || !slices.Equal(c.Frames[:i+1], w.Frames[:i+1]) {
			t.Fatalf("%s: cfi walk %x\nfp walk %x", cmd, c.Frames, w.Frames)
		}
	}
}

// TestEmitCFIWalkOptions: the options EmitCFIWalkID refuses.
func TestEmitCFIWalkOptions(t *testing.T) {
	ok := stackcap.CFIWalkOptions{Stack: -32}
	for _, tc := range []struct {
		name string
		m    elf.Machine
		ctx  asm.Register
		off  int16
		opts func(o *stackcap.CFIWalkOptions) *stackcap.CFIWalkOptions
	}{
		{"arm64", elf.EM_AARCH64, asm.R6, 0, func(o *stackcap.CFIWalkOptions) *stackcap.CFIWalkOptions { return o }},
		{"ctx register", elf.EM_X86_64, asm.R1, 0, func(o *stackcap.CFIWalkOptions) *stackcap.CFIWalkOptions { return o }},
		{"no options", elf.EM_X86_64, asm.R6, 0, func(o *stackcap.CFIWalkOptions) *stackcap.CFIWalkOptions { return nil }},
		{"max frames", elf.EM_X86_64, asm.R6, 0, func(o *stackcap.CFIWalkOptions) *stackcap.CFIWalkOptions {
			o.MaxFrames = stackcap.MaxFrames + 1
			return o
		}},
		{"stack slots", elf.EM_X86_64, asm.R6, 0, func(o *stackcap.CFIWalkOptions) *stackcap.CFIWalkOptions {
			o.Stack = -24
			return o
		}},
		{"scratch past 32 KiB", elf.EM_X86_64, asm.R6, 0, func(o *stackcap.CFIWalkOptions) *stackcap.CFIWalkOptions {
			o.Scratch = 32000
			return o
		}},
		{"id past 32 KiB", elf.EM_X86_64, asm.R6, 32760, func(o *stackcap.CFIWalkOptions) *stackcap.CFIWalkOptions { return o }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := ok
			if _, _, err := stackcap.EmitCFIWalkID(tc.m, tc.ctx, asm.R7, tc.off, "frames", tc.opts(&o), "w"); err == nil {
				t.Fatal("no error")
			}
		})
	}
	if _, _, err := stackcap.EmitCFIWalkID(elf.EM_X86_64, asm.R6, asm.R7, 0, "frames", &ok, "w"); err != nil {
		t.Fatal(err)
	}
}
