package unwind

import (
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/go-delve/delve/pkg/dwarf/frame"

	"github.com/usdtkit/usdtkit/elfnotes"
	"github.com/usdtkit/usdtkit/internal/proc/procfs"
)

// jitSpace has one anonymous executable mapping at 0x400000 (no object:
// frame pointers only).
func jitSpace() *Space {
	return NewSpace(1, []procfs.Mapping{{Start: 0x400000, End: 0x500000, Perms: "r-xp"}})
}

// fpStack builds a stack at base 0x7000 of frame records: words are
// written little-endian at the given offsets.
func fpStack(words map[uint64]uint64) Stack {
	data := make([]byte, 0x200)
	for off, v := range words {
		binary.LittleEndian.PutUint64(data[off:], v)
	}
	return Stack{Base: 0x7000, Data: data}
}

func TestUnwindFramePointers(t *testing.T) {
	u, err := New(&Options{MaxDepth: 4})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		regs  Regs
		stack Stack
		want  []uint64
		stop  Stop
	}{
		{
			name: "chain to the end",
			regs: Regs{PC: 0x400010, SP: 0x7000, FP: 0x7010},
			stack: fpStack(map[uint64]uint64{
				0x10: 0x7040, 0x18: 0x400100, // frame record of frame 0
				0x40: 0x7080, 0x48: 0x400200,
				0x80: 0, 0x88: 0, // outermost: return address 0
			}),
			want: []uint64{0x400010, 0x400100, 0x400200},
			stop: StopEnd,
		},
		{
			name:  "self loop",
			regs:  Regs{PC: 0x400010, SP: 0x7000, FP: 0x7010},
			stack: fpStack(map[uint64]uint64{0x10: 0x7010, 0x18: 0x400100}),
			want:  []uint64{0x400010, 0x400100},
			stop:  StopNoProgress,
		},
		{
			name:  "downward",
			regs:  Regs{PC: 0x400010, SP: 0x7100, FP: 0x7010},
			stack: fpStack(map[uint64]uint64{0x10: 0x7040, 0x18: 0x400100}),
			want:  []uint64{0x400010},
			stop:  StopNoProgress,
		},
		{
			name: "max depth",
			regs: Regs{PC: 0x400010, SP: 0x7000, FP: 0x7010},
			stack: fpStack(map[uint64]uint64{
				0x10: 0x7020, 0x18: 0x400100, 0x20: 0x7030, 0x28: 0x400200,
				0x30: 0x7040, 0x38: 0x400300, 0x40: 0x7050, 0x48: 0x400400,
			}),
			want: []uint64{0x400010, 0x400100, 0x400200, 0x400300},
			stop: StopMaxDepth,
		},
		{
			name:  "outside the copy",
			regs:  Regs{PC: 0x400010, SP: 0x7000, FP: 0x7010},
			stack: fpStack(map[uint64]uint64{0x10: 0x9000, 0x18: 0x400100}),
			want:  []uint64{0x400010, 0x400100},
			stop:  StopOutsideCopy,
		},
		{
			name:  "no mapping",
			regs:  Regs{PC: 0x400010, SP: 0x7000, FP: 0x7010},
			stack: fpStack(map[uint64]uint64{0x10: 0x7040, 0x18: 0x600000}),
			want:  []uint64{0x400010, 0x600000},
			stop:  StopNoMapping,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := u.Unwind(jitSpace(), elf.EM_X86_64, tc.regs, tc.stack)
			if err != nil {
				t.Fatal(err)
			}
			var have []uint64
			for i, f := range res.Frames {
				have = append(have, f.PC)
				want := MethodFP
				if i == 0 {
					want = MethodRegs
				}
				if f.Method != want {
					t.Errorf("frame %d: method %v, want %v", i, f.Method, want)
				}
			}
			if len(have) != len(tc.want) {
				t.Fatalf("have %#x, want %#x", have, tc.want)
			}
			for i := range have {
				if have[i] != tc.want[i] {
					t.Fatalf("have %#x, want %#x", have, tc.want)
				}
			}
			if res.Stop != tc.stop {
				t.Fatalf("stop: have %v (%v), want %v", res.Stop, res.Err, tc.stop)
			}
		})
	}
	if _, err := u.Unwind(jitSpace(), elf.EM_386, Regs{}, Stack{}); err == nil {
		t.Error("EM_386: no error")
	}
	if _, err := New(&Options{MaxDepth: -1}); err == nil {
		t.Error("MaxDepth -1: no error")
	}
}

// selfSpace is the test process's own map: its executable has CFI (Go
// writes .debug_frame) and the anonymous mapping of jitSpace.
func selfSpace(tb testing.TB) (*Space, procfs.Mapping) {
	tb.Helper()
	maps, err := procfs.ReadMaps(os.Getpid())
	if err != nil {
		tb.Fatal(err)
	}
	exe, err := os.Readlink("/proc/self/exe")
	if err != nil {
		tb.Fatal(err)
	}
	var text procfs.Mapping
	for _, m := range maps {
		if m.Exec() && m.Path == exe {
			text = m
			break
		}
	}
	if text.Start == 0 {
		tb.Fatal("no executable mapping of the test binary")
	}
	maps = append(maps, procfs.Mapping{Start: 0x400000, End: 0x500000, Perms: "r-xp"})
	return NewSpace(os.Getpid(), maps), text
}

// FuzzUnwind walks hostile stacks and registers over the test binary's
// CFI and an anonymous mapping: no panic, no more than MaxDepth frames,
// always a reason to stop.
func FuzzUnwind(f *testing.F) {
	f.Add(uint64(0x10), uint64(0x7000), uint64(0x7010), false, []byte{})
	f.Add(uint64(0x1234), uint64(0x7008), uint64(0x7010), true, make([]byte, 64))
	f.Add(uint64(0), uint64(0x7000), uint64(0x7000), false, []byte("\x10\x70\x00\x00\x00\x00\x00\x00\x10\x00\x40\x00\x00\x00\x00\x00"))
	sp, text := selfSpace(f)
	u, err := New(&Options{MaxDepth: 32})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, pcOff, rsp, rbp uint64, self bool, data []byte) {
		pc := 0x400000 + pcOff%0x100000
		if self {
			pc = text.Start + pcOff%(text.End-text.Start)
		}
		res, err := u.Unwind(sp, elf.EM_X86_64, Regs{PC: pc, SP: rsp, FP: rbp, Entry: pcOff&1 == 1}, Stack{Base: 0x7000, Data: data})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Frames) == 0 || len(res.Frames) > 32 || res.Stop == 0 {
			t.Fatalf("%d frames, stop %v", len(res.Frames), res.Stop)
		}
		res, err = u.Unwind(sp, elf.EM_AARCH64, Regs{PC: pc, SP: rsp, FP: rbp, LR: pcOff, Entry: pcOff&2 == 2}, Stack{Base: 0x7000, Data: data})
		if err != nil || len(res.Frames) == 0 || len(res.Frames) > 32 || res.Stop == 0 {
			t.Fatalf("arm64: %d frames, stop %v, %v", len(res.Frames), res.Stop, err)
		}
	})
}

// FuzzParseCFI parses hostile .eh_frame and .debug_frame bytes and
// evaluates every FDE they give at its start and a fuzzed offset: errors,
// never panics.
func FuzzParseCFI(f *testing.F) {
	// A CIE (x86-64: code align 1, data align -8, RA 16, CFA rsp+8,
	// RA at CFA-8) and one FDE over 0x1000..0x1010 with
	// DW_CFA_advance_loc 1, DW_CFA_def_cfa_offset 16.
	debugFrame := []byte{
		0x14, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 1, 0, 1, 0x78, 16,
		0x0c, 7, 8, 0x90, 1, 0, 0, 0, 0,
		0x1c, 0, 0, 0, 0, 0, 0, 0, 0x00, 0x10, 0, 0, 0, 0, 0, 0, 0x10, 0, 0, 0, 0, 0, 0, 0,
		0x41, 0x0e, 16, 0, 0, 0,
	}
	f.Add(debugFrame, uint64(0), uint64(4))
	f.Add([]byte{}, uint64(0x2000), uint64(0))
	f.Fuzz(func(t *testing.T, data []byte, ehAddr, pcOff uint64) {
		for _, m := range []elf.Machine{elf.EM_X86_64, elf.EM_AARCH64} {
			fdes, err := parseCFI(data, binary.LittleEndian, ehAddr)
			if err != nil {
				return
			}
			if len(fdes) > len(data) {
				t.Fatalf("%d FDEs from %d bytes", len(fdes), len(data))
			}
			a, _ := archOf(m)
			if m == elf.EM_AARCH64 {
				fixARM64Programs(fdes)
			}
			stack := Stack{Base: 0x7000, Data: data}
			for _, fde := range fdes {
				for _, pc := range []uint64{fde.Begin(), fde.Begin() + pcOff%max(1, fde.End()-fde.Begin())} {
					r := establish(fde, pc)
					w := &walker{a: a, stack: &stack, pc: pc}
					w.regs = regFile{spNum: a.sp, fpNum: a.fp, lrNum: a.lr}
					w.regs.set(a.sp, 0x7000)
					w.regs.set(a.fp, 0x7010)
					w.regs.set(a.lr, 0x400100)
					w.applyCFI(r)
				}
			}
		}
	})
}

// TestUnwindConcurrent walks from several goroutines over one Unwinder
// (run with -race): objects and rows are parsed and cached once, and
// every walk of the same input gives the same result.
func TestUnwindConcurrent(t *testing.T) {
	sp, text := selfSpace(t)
	u, err := New(nil)
	if err != nil {
		t.Fatal(err)
	}
	stack := fpStack(map[uint64]uint64{0x10: 0x7040, 0x18: text.Start + 0x100, 0x40: 0x7080, 0x48: 0x400200})
	regs := Regs{PC: text.Start + 0x40, SP: 0x7000, FP: 0x7010}
	want, err := u.Unwind(sp, elf.EM_X86_64, regs, stack)
	if err != nil {
		t.Fatal(err)
	}
	u2, err := New(nil)
	if err != nil {
		t.Fatal(err)
	}
	results := make(chan Result, 8)
	for range 8 {
		go func() {
			res, _ := u2.Unwind(sp, elf.EM_X86_64, regs, stack)
			results <- res
		}()
	}
	for range 8 {
		res := <-results
		if res.Stop != want.Stop || len(res.Frames) != len(want.Frames) {
			t.Fatalf("have %+v, want %+v", res, want)
		}
		for i := range res.Frames {
			if res.Frames[i] != want.Frames[i] {
				t.Fatalf("have %+v, want %+v", res, want)
			}
		}
	}
}

// TestDamagedObject gives the walk an object that is not ELF: it unwinds
// with frame pointers, and ObjectError says why (an elfnotes.FormatError).
func TestDamagedObject(t *testing.T) {
	path := filepath.Join(t.TempDir(), "damaged")
	if err := os.WriteFile(path, []byte("\x7fELF but not really"), 0o600); err != nil {
		t.Fatal(err)
	}
	opened := 0
	u, err := New(&Options{Open: func(procfs.Object) (*os.File, error) {
		opened++
		return os.Open(path)
	}})
	if err != nil {
		t.Fatal(err)
	}
	m := procfs.Mapping{Start: 0x400000, End: 0x500000, Perms: "r-xp", Major: 8, Inode: 1234, Path: "/damaged"}
	sp := NewSpace(1, []procfs.Mapping{m})
	stack := fpStack(map[uint64]uint64{0x10: 0x7040, 0x18: 0x400100})
	res, err := u.Unwind(sp, elf.EM_X86_64, Regs{PC: 0x400010, SP: 0x7000, FP: 0x7010}, stack)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Frames) < 2 || res.Frames[1].Method != MethodFP || res.Frames[1].PC != 0x400100 {
		t.Fatalf("have %+v, want a second frame 0x400100 by fp", res.Frames)
	}
	var fe *elfnotes.FormatError
	if err := u.ObjectError(sp, m); !errors.As(err, &fe) {
		t.Fatalf("ObjectError: have %v, want an *elfnotes.FormatError", err)
	}
	if opened != 1 {
		t.Fatalf("opened %d times, want once", opened)
	}
}

// TestObjectOfExitedProcess: an object that could not be opened because
// its process is gone is opened again for the next process mapping it
// (another process, or a later try): a gone process says nothing of the
// file. Other errors are remembered (TestDamagedObject).
func TestObjectOfExitedProcess(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	opened := 0
	u, err := New(&Options{Open: func(o procfs.Object) (*os.File, error) {
		opened++
		if o.PID == 1 {
			return nil, fmt.Errorf("pid 1: %w", procfs.ErrNoProcess)
		}
		return os.Open(exe)
	}})
	if err != nil {
		t.Fatal(err)
	}
	m := procfs.Mapping{Start: 0x400000, End: 0x500000, Perms: "r-xp", Major: 8, Inode: 1234, Path: "/exe"}
	if err := u.ObjectError(NewSpace(1, []procfs.Mapping{m}), m); !errors.Is(err, procfs.ErrNoProcess) {
		t.Fatalf("ObjectError of a gone process: have %v, want ErrNoProcess", err)
	}
	if err := u.ObjectError(NewSpace(2, []procfs.Mapping{m}), m); err != nil {
		t.Fatalf("ObjectError through a live process: %v", err)
	}
	if opened != 2 {
		t.Fatalf("opened %d times, want twice", opened)
	}
}

// TestUnwindARM64Entry walks an arm64 stack stopped at a function's first
// instruction: the caller is in LR, then the frame records at x29.
func TestUnwindARM64Entry(t *testing.T) {
	u, err := New(nil)
	if err != nil {
		t.Fatal(err)
	}
	stack := fpStack(map[uint64]uint64{0x10: 0x7040, 0x18: 0x400200, 0x40: 0, 0x48: 0})
	regs := Regs{PC: 0x400010, SP: 0x7000, FP: 0x7010, LR: 0x400100, Entry: true}
	res, err := u.Unwind(jitSpace(), elf.EM_AARCH64, regs, stack)
	if err != nil {
		t.Fatal(err)
	}
	want := []Frame{{0x400010, MethodRegs}, {0x400100, MethodFP}, {0x400200, MethodFP}}
	if len(res.Frames) != len(want) || res.Stop != StopEnd {
		t.Fatalf("have %+v (%v), want %+v", res.Frames, res.Stop, want)
	}
	for i := range want {
		if res.Frames[i] != want[i] {
			t.Fatalf("have %+v, want %+v", res.Frames, want)
		}
	}
}

// TestRestoreKeepsCallersValue: after DW_CFA_restore of a register the
// CIE gives no rule (gcc's epilogue after "pop %rbp"), the frame pointer
// is the caller's value again, not unknown.
func TestRestoreKeepsCallersValue(t *testing.T) {
	// CIE: x86-64, CFA rsp+8, RA at CFA-8; no rule for rbp (6).
	cie := []byte{0x14, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 1, 0, 1, 0x78, 16, 0x0c, 7, 8, 0x90, 1, 0, 0, 0, 0, 0, 0}
	// FDE over 0x1000..0x1010: at +1 CFA rsp+16 and rbp at CFA-16
	// (push %rbp); at +2 rbp restored and CFA rsp+8 (pop %rbp).
	insns := []byte{0x41, 0x0e, 16, 0x86, 2, 0x41, 0xc6, 0x0e, 8}
	fde := []byte{0, 0, 0, 0, 0, 0, 0, 0, 0x00, 0x10, 0, 0, 0, 0, 0, 0, 0x10, 0, 0, 0, 0, 0, 0, 0}
	fde = append(fde, insns...)
	for (len(fde))%8 != 0 {
		fde = append(fde, 0)
	}
	binary.LittleEndian.PutUint32(fde, uint32(len(fde)-4))
	fdes, err := parseCFI(append(cie, fde...), binary.LittleEndian, 0)
	if err != nil || len(fdes) != 1 {
		t.Fatalf("%d FDEs, %v", len(fdes), err)
	}
	if r := establish(fdes[0], 0x1001); r.err != nil || r.regs[6].Rule != frame.RuleOffset || r.regs[6].Offset != -16 {
		t.Fatalf("after push: rbp rule %+v, %v; want at CFA-16", r.regs[6], r.err)
	}
	r := establish(fdes[0], 0x1002)
	if rule, ok := r.regs[6]; r.err != nil || ok {
		t.Fatalf("after restore: rbp rule %+v (%v), %v; want none (the caller's value)", rule, ok, r.err)
	}
	if rule := r.regs[16]; rule.Rule != frame.RuleOffset || rule.Offset != -8 {
		t.Errorf("return address rule %+v, want at CFA-8", rule)
	}
}
