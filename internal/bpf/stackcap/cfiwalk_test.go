package stackcap_test

import (
	"debug/elf"
	"encoding/binary"
	"flag"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/cilium/ebpf/asm"
	"github.com/usdtkit/usdtkit/internal/bpf/stackcap"
	"github.com/usdtkit/usdtkit/internal/bpf/stackcap/stacktest"
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
		{"i386", elf.EM_386, asm.R6, 0, func(o *stackcap.CFIWalkOptions) *stackcap.CFIWalkOptions { return o }},
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
	for _, m := range []elf.Machine{elf.EM_X86_64, elf.EM_AARCH64} {
		if _, _, err := stackcap.EmitCFIWalkID(m, asm.R6, asm.R7, 0, "frames", &ok, "w"); err != nil {
			t.Fatalf("%v: %v", m, err)
		}
	}
}

var update = flag.Bool("update", false, "rewrite testdata/golden")

// TestCFIWalkGolden keeps the listings of a walk with call frame
// information (127 frames, at a function's entry) in
// testdata/golden/cfiwalk.txt (x86-64) and cfiwalk-arm64.txt (arm64: the
// link register at frame 0, return addresses without their pointer
// authentication code): a change that should not alter the BPF leaves
// them as they are (go test -update rewrites them).
func TestCFIWalkGolden(t *testing.T) {
	files := map[string][]byte{}
	for _, a := range []struct {
		file, name string
		m          elf.Machine
	}{{"cfiwalk.txt", "x86-64", elf.EM_X86_64}, {"cfiwalk-arm64.txt", "arm64", elf.EM_AARCH64}} {
		insns, callback, err := stackcap.EmitCFIWalkID(a.m, asm.R6, asm.R7, 0, "frames", &stackcap.CFIWalkOptions{Entry: true, Scratch: 16, Stack: -32}, "w")
		if err != nil {
			t.Fatal(err)
		}
		files[a.file] = []byte(fmt.Sprintf("; EmitCFIWalkID(%s, ctx R6, dst R7, 0, frames, {Entry, Scratch 16, Stack -32}, w)\n%v; callback\n%v", a.name, insns, callback))
	}
	testutil.GoldenDir(t, "testdata/golden", files,
		func(name string) bool { return strings.HasPrefix(name, "cfiwalk") }, *update, "go test ./internal/bpf/stackcap -run TestCFIWalkGolden -update")
}

// TestCFIWalkShape: the callback has no loop (every jump goes forward,
// so the verifier walks each of its paths once per call site), looks up
// the tables map once and the rows map once for the page index, once
// per search step and once for the row, and has five reads of the stack
// (arm64: four, the return address at a function's entry is in the link
// register).
func TestCFIWalkShape(t *testing.T) {
	for _, m := range []elf.Machine{elf.EM_X86_64, elf.EM_AARCH64} {
		t.Run(m.String(), func(t *testing.T) { testCFIWalkShape(t, m) })
	}
}

func testCFIWalkShape(t *testing.T, m elf.Machine) {
	_, callback, err := stackcap.EmitCFIWalkID(m, asm.R6, asm.R7, 0, "frames", &stackcap.CFIWalkOptions{Entry: true, Stack: -32}, "w")
	if err != nil {
		t.Fatal(err)
	}
	at := map[string]int{}
	for i, ins := range callback {
		if s := ins.Symbol(); s != "" {
			at[s] = i
		}
	}
	lookups := map[string]int{}
	reads := 0
	for i, ins := range callback {
		if ins.OpCode.JumpOp() != asm.InvalidJumpOp && ins.OpCode.JumpOp() != asm.Call && ins.OpCode.JumpOp() != asm.Exit {
			if j, ok := at[ins.Reference()]; !ok || j <= i {
				t.Errorf("instruction %d: %v jumps back or nowhere", i, ins)
			}
		}
		if ins.IsBuiltinCall() && asm.BuiltinFunc(ins.Constant) == asm.FnProbeReadUser {
			reads++
		}
		if ins.IsLoadFromMap() {
			lookups[ins.Reference()]++
		}
	}
	if want := map[string]int{"cfi_tables": 1, "cfi_rows": 23, "cfi_wanted": 1}; !maps.Equal(lookups, want) {
		t.Errorf("map lookups %v, want %v", lookups, want)
	}
	want := 5
	if m == elf.EM_AARCH64 {
		want = 4
	}
	if reads != want {
		t.Errorf("%d stack reads, want %d (return address and frame pointer together, or apart; at entry but on arm64; frame record)", reads, want)
	}
}

// TestCFIWalkVerifier: the kernel's verifier accepts the walk for 1 to
// MaxFrames frames, at a function's entry or not, and the instructions it
// processes do not grow with the frames (the loop is bpf_loop's).
func TestCFIWalkVerifier(t *testing.T) {
	testutil.RequireBPF(t)
	stacktest.CheckWalkVerifier(t, func(frames int, entry bool) string {
		coll, _ := stacktest.Load(t, &stacktest.Options{Mode: stacktest.CFIWalk, Entry: entry, MaxFrames: frames})
		return coll.Programs["capture"].VerifierLog
	})
}

func TestMarshalCFIProc(t *testing.T) {
	m := func(start, end uint64) stackcap.CFIMapping {
		return stackcap.CFIMapping{Start: start, End: end, Bias: start - 0x1000, Table: 7}
	}
	b, err := stackcap.MarshalCFIProc([]stackcap.CFIMapping{m(0x1000, 0x2000), m(0x2000, 0x5000)})
	if err != nil {
		t.Fatal(err)
	}
	ne := binary.NativeEndian
	if len(b) != stackcap.CFIProcSize || ne.Uint32(b) != 2 || ne.Uint64(b[8+32:]) != 0x2000 || ne.Uint64(b[8+32+8:]) != 0x5000 || ne.Uint64(b[8+32+16:]) != 0x1000 || ne.Uint32(b[8+32+24:]) != 7 {
		t.Fatalf("value % x", b[:8+64])
	}
	for _, tc := range []struct {
		name string
		ms   []stackcap.CFIMapping
	}{
		{"empty mapping", []stackcap.CFIMapping{m(0x1000, 0x1000)}},
		{"overlap", []stackcap.CFIMapping{m(0x1000, 0x3000), m(0x2000, 0x4000)}},
		{"unsorted", []stackcap.CFIMapping{m(0x3000, 0x4000), m(0x1000, 0x2000)}},
		{"too many", make([]stackcap.CFIMapping, stackcap.CFIMaxMappings+1)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if b, err := stackcap.MarshalCFIProc(tc.ms); err == nil || b != nil {
				t.Fatalf("no error")
			}
		})
	}
}
