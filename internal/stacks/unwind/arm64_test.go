package unwind_test

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"testing"

	"github.com/usdtkit/usdtkit/internal/proc/procfs"
	"github.com/usdtkit/usdtkit/internal/stacks/unwind"
	"github.com/usdtkit/usdtkit/internal/testutil"
)

// arm64Sysroot is where Debian's cross toolchain (gcc-aarch64-linux-gnu)
// keeps the arm64 libc that qemu-user loads.
const arm64Sysroot = "/usr/aarch64-linux-gnu"

// arm64Record is what testdata/arm64chain.c recorded at capture's first
// instruction under qemu-user: its registers, its stack from SP to the
// end of the stack's mapping, and its mappings (guest addresses, host
// files), as the process of pid would have them.
type arm64Record struct {
	exe   string
	regs  unwind.Regs
	stack unwind.Stack
	maps  []procfs.Mapping
}

// buildARM64Chain cross-compiles testdata/arm64chain.c with flags after
// -O2 -fomit-frame-pointer.
func buildARM64Chain(tb testing.TB, flags ...string) string {
	tb.Helper()
	gcc := testutil.RequireTool(tb, "aarch64-linux-gnu-gcc")
	testutil.RequireFile(tb, filepath.Join(arm64Sysroot, "lib", "libc.so.6"))
	exe := filepath.Join(tb.TempDir(), "arm64chain")
	args := append([]string{"-O2", "-fomit-frame-pointer"}, flags...)
	args = append(args, "-o", exe, filepath.Join("testdata", "arm64chain.c"))
	if out, err := exec.Command(gcc, args...).CombinedOutput(); err != nil {
		tb.Fatalf("%s %v: %v\n%s", gcc, args, err, out)
	}
	return exe
}

// runARM64Chain runs exe's command under qemu-user and reads what it
// recorded.
func runARM64Chain(tb testing.TB, exe, command string) arm64Record {
	tb.Helper()
	qemu, err := exec.LookPath("qemu-aarch64-static")
	if err != nil {
		qemu = testutil.RequireTool(tb, "qemu-aarch64")
	}
	out := filepath.Join(tb.TempDir(), "rec")
	cmd := exec.Command(qemu, "-L", arm64Sysroot, exe, command, out)
	if b, err := cmd.CombinedOutput(); err != nil {
		tb.Fatalf("%s: %v\n%s", cmd, err, b)
	}
	rec := arm64Record{exe: exe}
	b, err := os.ReadFile(out + ".regs")
	if err != nil {
		tb.Fatal(err)
	}
	r := &rec.regs
	if _, err := fmt.Sscanf(string(b), "%x %x %x %x", &r.PC, &r.SP, &r.FP, &r.LR); err != nil {
		tb.Fatalf("%s.regs %q: %v", out, b, err)
	}
	r.Entry = true
	if rec.stack.Data, err = os.ReadFile(out + ".stack"); err != nil {
		tb.Fatal(err)
	}
	rec.stack.Base = r.SP
	b, err = os.ReadFile(out + ".maps")
	if err != nil {
		tb.Fatal(err)
	}
	if rec.maps, err = procfs.ParseMaps(bytes.NewReader(b)); err != nil {
		tb.Fatal(err)
	}
	return rec
}

// forEachARM64Chain runs f in a subtest for each build of arm64chain.c
// ("plain", and "pac-ret": -mbranch-protection=pac-ret, saved return
// addresses signed) and each of its commands (levels, sort), on what
// that run recorded.
func forEachARM64Chain(t *testing.T, f func(t *testing.T, build, command string, rec arm64Record)) {
	for _, v := range []struct {
		name  string
		flags []string
	}{{"plain", nil}, {"pac-ret", []string{"-mbranch-protection=pac-ret"}}} {
		t.Run(v.name, func(t *testing.T) {
			exe := buildARM64Chain(t, v.flags...)
			for _, command := range []string{"levels", "sort"} {
				t.Run(command, func(t *testing.T) { f(t, v.name, command, runARM64Chain(t, exe, command)) })
			}
		})
	}
}

// framePCs returns the frames' PCs.
func framePCs(frames []unwind.Frame) []uint64 {
	pcs := make([]uint64, 0, len(frames))
	for _, f := range frames {
		pcs = append(pcs, f.PC)
	}
	return pcs
}

// openHost opens an object by the path the maps give: qemu-user maps the
// host's files.
func openHost(o procfs.Object) (*os.File, error) { return os.Open(o.Path) }

// arm64Namer names PCs by the ELF symbols of the objects mapping them.
type arm64Namer struct {
	sp   *unwind.Space
	u    *unwind.Unwinder
	syms map[string][]elf.Symbol // by path, sorted by address
}

// name returns the function holding pc (a return address, unless first,
// is looked up at pc-1) and the path of its object.
func (n *arm64Namer) name(tb testing.TB, pc uint64, first bool) (string, string) {
	tb.Helper()
	m, ok := n.sp.Mapping(pc)
	if !ok {
		return fmt.Sprintf("%#x", pc), ""
	}
	t, err := n.u.Table(n.sp, m)
	if err != nil {
		tb.Fatalf("%s: %v", m.Path, err)
	}
	bias, ok := t.Bias(m)
	if !ok {
		tb.Fatalf("%s: mapping at offset %#x is in no segment", m.Path, m.Offset)
	}
	if !first {
		pc--
	}
	addr := pc - bias
	syms, ok := n.syms[m.Path]
	if !ok {
		f, err := elf.Open(m.Path)
		if err != nil {
			tb.Fatal(err)
		}
		defer f.Close()
		all, _ := f.Symbols()
		dyn, _ := f.DynamicSymbols()
		for _, s := range append(all, dyn...) {
			if elf.ST_TYPE(s.Info) == elf.STT_FUNC && s.Value != 0 {
				syms = append(syms, s)
			}
		}
		sort.Slice(syms, func(i, j int) bool { return syms[i].Value < syms[j].Value })
		n.syms[m.Path] = syms
	}
	i := sort.Search(len(syms), func(i int) bool { return syms[i].Value > addr }) - 1
	if i < 0 || addr-syms[i].Value >= max(syms[i].Size, 1) {
		return fmt.Sprintf("%s+%#x", filepath.Base(m.Path), addr), m.Path
	}
	return syms[i].Name, m.Path
}

// names returns the frames' functions and objects.
func (n *arm64Namer) names(tb testing.TB, frames []unwind.Frame) (names, objs []string) {
	tb.Helper()
	for i, f := range frames {
		name, obj := n.name(tb, f.PC, i == 0)
		names = append(names, name)
		objs = append(objs, obj)
	}
	return names, objs
}

// checkARM64Chain checks that names begin with chain, functions of exe
// known by its symbols, except "libc" frames: one or more frames in libc
// (qsort's). After the chain come libc's start and, last, the
// executable's _start.
func checkARM64Chain(t *testing.T, exe string, names, objs []string, chain []string) {
	t.Helper()
	f, err := elf.Open(exe)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	syms, err := f.Symbols()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range chain {
		if c != "libc" && !slices.ContainsFunc(syms, func(s elf.Symbol) bool { return s.Name == c && elf.ST_TYPE(s.Info) == elf.STT_FUNC }) {
			t.Fatalf("%s has no function %s", exe, c)
		}
	}
	i := 0
	for _, c := range chain {
		if c == "libc" {
			j := i
			for i < len(objs) && filepath.Base(objs[i]) == "libc.so.6" {
				i++
			}
			if i == j {
				t.Fatalf("have %v: frame %d is not in libc", names, j)
			}
			continue
		}
		if i >= len(names) || names[i] != c || objs[i] != exe {
			t.Fatalf("have %v, want %v then libc's start and _start", names, chain)
		}
		i++
	}
	if i >= len(objs) || filepath.Base(objs[i]) != "libc.so.6" {
		t.Errorf("have %v: no libc frame after main", names)
	}
	if names[len(names)-1] != "_start" {
		t.Errorf("have %v: the last frame is not _start", names)
	}
}

// TestUnwindARM64 unwinds stacks recorded by arm64 code under qemu-user
// with the arm64 objects' tables and with their CFI: testdata/arm64chain.c
// built -O2 -fomit-frame-pointer (its functions save the link register
// without a frame record), and again with pointer authentication
// (-mbranch-protection=pac-ret: saved return addresses are signed, their
// CFI has DW_CFA_AARCH64_negate_ra_state), through Debian's arm64 libc.
// The walk starts at capture's first instruction, its return address
// still in the link register, and ends at _start: capture, leaf, the
// callers to main, libc's start, _start; for sort, libc's qsort frames
// between cmp and sort_them.
func TestUnwindARM64(t *testing.T) {
	forEachARM64Chain(t, func(t *testing.T, build, command string, rec arm64Record) {
		exe := rec.exe
		sp := unwind.NewSpace(1, rec.maps)
		u, err := unwind.New(&unwind.Options{Open: openHost})
		if err != nil {
			t.Fatal(err)
		}
		if err := u.Load(sp); err != nil {
			t.Fatal(err)
		}
		have, err := u.UnwindTables(sp, elf.EM_AARCH64, rec.regs, rec.stack)
		if err != nil {
			t.Fatal(err)
		}
		n := &arm64Namer{sp: sp, u: u, syms: map[string][]elf.Symbol{}}
		names, objs := n.names(t, have.Frames)
		t.Logf("regs %+v, %d bytes of stack; frames %v, stop %v (%v)", rec.regs, len(rec.stack.Data), names, have.Stop, have.Err)
		if have.Stop != unwind.StopEnd {
			t.Errorf("stop %v (%v), want %v", have.Stop, have.Err, unwind.StopEnd)
		}
		for i, f := range have.Frames[1:] {
			if f.Method != unwind.MethodCFI {
				t.Errorf("frame %d (%s): method %v, want %v", i+1, names[i+1], f.Method, unwind.MethodCFI)
			}
		}
		chain := []string{"capture", "leaf", "level3", "level2", "level1", "main"}
		if command == "sort" {
			chain = []string{"capture", "leaf", "cmp", "libc", "sort_them", "main"}
		}
		checkARM64Chain(t, exe, names, objs, chain)
		if build == "pac-ret" {
			checkSigned(t, rec.stack, have.Frames)
		}

		want, err := u.Unwind(sp, elf.EM_AARCH64, rec.regs, rec.stack)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(have.Frames, want.Frames) || have.Stop != want.Stop {
			t.Errorf("tables: %+v, stop %v (%v)\nCFI: %+v, stop %v (%v)", have.Frames, have.Stop, have.Err, want.Frames, want.Stop, want.Err)
		}
	})
}

// checkSigned checks that the stack holds a return address of frames
// signed (qemu-user's default CPU has pointer authentication): a word
// with bits above ARM64AddressBits that is a frame's PC below them.
func checkSigned(t *testing.T, stack unwind.Stack, frames []unwind.Frame) {
	t.Helper()
	const mask = 1<<unwind.ARM64AddressBits - 1
	for i := 0; i+8 <= len(stack.Data); i += 8 {
		w := binary.LittleEndian.Uint64(stack.Data[i:])
		if w&^mask != 0 && slices.ContainsFunc(frames[1:], func(f unwind.Frame) bool { return f.PC == w&mask }) {
			t.Logf("signed return address %#x at sp+%#x", w, i)
			return
		}
	}
	t.Fatal("no signed return address on the stack: the walk's stripping is not tested")
}
