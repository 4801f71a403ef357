package symbolize

import (
	"encoding/hex"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/usdtkit/usdtkit/elfnotes"
	"github.com/usdtkit/usdtkit/internal/elf/symtab"
	"github.com/usdtkit/usdtkit/internal/proc/procfs"
	"github.com/usdtkit/usdtkit/internal/testutil"
)

// run runs a build tool and fails the test on error.
func run(t *testing.T, name string, args ...string) {
	t.Helper()
	if out, err := exec.Command(testutil.RequireTool(t, name), args...).CombinedOutput(); err != nil {
		t.Fatalf("%s %v: %v\n%s", name, args, err, out)
	}
}

// buildC compiles testdata/src with compiler cc into dir/out.
func buildC(t *testing.T, cc, src, dir, out string, flags ...string) string {
	t.Helper()
	bin := filepath.Join(dir, out)
	args := append(append([]string{}, flags...), "-o", bin, filepath.Join("testdata", src))
	run(t, cc, args...)
	return bin
}

// addrs starts bin and returns the "NAME ADDRESS" lines it prints as a
// map from name to address, and the running program.
func addrs(t *testing.T, bin string) (map[string]uint64, *testutil.Tracee) {
	t.Helper()
	tr := testutil.StartTracee(t, bin)
	out := make(map[string]uint64)
	for _, line := range tr.Do(t, "addrs") {
		i := strings.LastIndexByte(line, ' ')
		a, err := strconv.ParseUint(strings.TrimPrefix(line[i+1:], "0x"), 16, 64)
		if i < 0 || err != nil {
			t.Fatalf("bad line %q from %s", line, bin)
		}
		out[line[:i]] = a
	}
	return out, tr
}

func newSymbolizer(t *testing.T, pid int, opts *Options) *Symbolizer {
	t.Helper()
	s, err := New(pid, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// checkFuncs symbolizes each function's address and its address plus 1,
// and wants the function's name with offsets 0 and 1, in object bin.
func checkFuncs(t *testing.T, s *Symbolizer, want map[string]uint64, bin string) {
	t.Helper()
	for name, a := range want {
		fr := s.Frames([]uint64{a, a + 1})
		for i, f := range fr {
			if f.Symbol != name || f.SymOffset != uint64(i) || f.Object != bin || f.Addr != a+uint64(i) {
				t.Errorf("%s+%d at %#x: have %+v, want %s+%d in %s", name, i, a+uint64(i), f, name, i, bin)
			}
		}
	}
}

// TestSeparateDebugFile builds a C program with -g, moves its symbols to
// a separate debug file and strips it, and symbolizes its functions with
// the debug file found in each place GDB looks; with a debug file whose
// CRC does not match, or none, frames name the object and file offset.
func TestSeparateDebugFile(t *testing.T) {
	testutil.RequireRoot(t)
	tests := []struct {
		name string
		// place puts the debug file of bin (built in dir) where it is to
		// be found and returns the debug directories to search.
		place   func(t *testing.T, bin, dbg, dir string) []string
		buildID bool
		found   bool
	}{
		{"debuglink-beside", func(t *testing.T, bin, dbg, dir string) []string {
			run(t, "objcopy", "--add-gnu-debuglink="+dbg, bin)
			return []string{filepath.Join(dir, "none")}
		}, false, true},
		{"debuglink-dotdebug", func(t *testing.T, bin, dbg, dir string) []string {
			run(t, "objcopy", "--add-gnu-debuglink="+dbg, bin)
			move(t, dbg, filepath.Join(dir, ".debug", filepath.Base(dbg)))
			return []string{filepath.Join(dir, "none")}
		}, false, true},
		{"debuglink-debugdir", func(t *testing.T, bin, dbg, dir string) []string {
			run(t, "objcopy", "--add-gnu-debuglink="+dbg, bin)
			root := filepath.Join(dir, "debugroot")
			move(t, dbg, filepath.Join(root, dir, filepath.Base(dbg)))
			return []string{root}
		}, false, true},
		{"debuglink-bad-crc", func(t *testing.T, bin, dbg, dir string) []string {
			run(t, "objcopy", "--add-gnu-debuglink="+dbg, bin)
			f, err := os.OpenFile(dbg, os.O_APPEND|os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			f.Write([]byte{0})
			if err := f.Close(); err != nil {
				t.Fatal(err)
			}
			return []string{filepath.Join(dir, "none")}
		}, false, false},
		{"build-id", func(t *testing.T, bin, dbg, dir string) []string {
			f, err := elfnotes.Open(bin)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			id := hex.EncodeToString(symtab.BuildID(f))
			if len(id) < 4 {
				t.Fatalf("%s has no build ID", bin)
			}
			root := filepath.Join(dir, "debugroot")
			move(t, dbg, filepath.Join(root, ".build-id", id[:2], id[2:]+".debug"))
			return []string{root}
		}, true, true},
		{"none", func(t *testing.T, bin, dbg, dir string) []string {
			os.Remove(dbg)
			return []string{filepath.Join(dir, "none")}
		}, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			flags := []string{"-g", "-O1", "-fno-omit-frame-pointer"}
			if tt.buildID {
				flags = append(flags, "-Wl,--build-id")
			}
			bin := buildC(t, "gcc", "stack.c", dir, "stack", flags...)
			dbg := bin + ".debug"
			run(t, "objcopy", "--only-keep-debug", bin, dbg)
			run(t, "strip", "--strip-all", bin)
			dirs := tt.place(t, bin, dbg, dir)
			want, tr := addrs(t, bin)
			if len(want) != 4 {
				t.Fatalf("the program printed %d addresses, want 4", len(want))
			}
			s := newSymbolizer(t, tr.PID(), &Options{DebugDirs: dirs})
			if tt.found {
				checkFuncs(t, s, want, bin)
				return
			}
			// Stripped and no debug file: only main's .dynsym entries
			// (none here), so every frame is object+offset.
			offs := fileOffsets(t, bin, tr.PID(), want)
			for name, a := range want {
				f := s.Frames([]uint64{a})[0]
				wantStr := "[stack+0x" + strconv.FormatUint(offs[name], 16) + "]"
				if f.Symbol != "" || f.Object != bin || f.String() != wantStr {
					t.Errorf("%s at %#x: have %+v (%s), want no symbol, %s", name, a, f, f, wantStr)
				}
			}
		})
	}
}

func move(t *testing.T, from, to string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(from, to); err != nil {
		t.Fatal(err)
	}
}

// fileOffsets returns the file offset of each address in bin, computed
// from the process's maps by hand.
func fileOffsets(t *testing.T, bin string, pid int, at map[string]uint64) map[string]uint64 {
	t.Helper()
	maps, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/maps")
	if err != nil {
		t.Fatal(err)
	}
	out := make(map[string]uint64)
	for _, line := range strings.Split(string(maps), "\n") {
		f := strings.Fields(line)
		if len(f) < 6 || f[5] != bin {
			continue
		}
		lo, hi, _ := strings.Cut(f[0], "-")
		start, _ := strconv.ParseUint(lo, 16, 64)
		end, _ := strconv.ParseUint(hi, 16, 64)
		off, _ := strconv.ParseUint(f[2], 16, 64)
		for name, a := range at {
			if a >= start && a < end {
				out[name] = a - start + off
			}
		}
	}
	if len(out) != len(at) {
		t.Fatalf("maps of %d place %d of %d addresses in %s", pid, len(out), len(at), bin)
	}
	return out
}

// TestCPlusPlus symbolizes a C++ method and a template instance: names
// are demangled.
func TestCPlusPlus(t *testing.T) {
	testutil.RequireRoot(t)
	bin := buildC(t, "g++", "stack.cc", t.TempDir(), "stackcc", "-g", "-O1")
	want, tr := addrs(t, bin)
	if len(want) != 2 {
		t.Fatalf("the program printed %d addresses, want 2", len(want))
	}
	checkFuncs(t, newSymbolizer(t, tr.PID(), nil), want, bin)
}

// TestGo symbolizes a PC inside a Go function, with its file and line as
// the runtime reports them, and a function's entry, in a binary with its
// .symtab and DWARF and in one stripped of both (-ldflags=-s -w), which
// has .gopclntab; and a PC where two calls are inlined, whose frames must
// be those runtime.CallersFrames gives (with DWARF) or the outermost
// function with the innermost position (stripped).
func TestGo(t *testing.T) {
	testutil.RequireRoot(t)
	for _, tt := range []struct {
		name     string
		flags    []string
		inlining bool
	}{
		{"default", nil, true},
		{"stripped", []string{"-ldflags=-s -w"}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			bin := testutil.BuildGo(t, "testdata/gostack", tt.flags...)
			tr := testutil.StartTracee(t, bin)
			s := newSymbolizer(t, tr.PID(), nil)
			lines := tr.Do(t, "addrs")
			var inlinePC uint64
			var wantInline []Frame
			for _, line := range lines {
				f := strings.Fields(line)
				switch {
				case len(f) == 2 && f[0] == "inline":
					inlinePC = hexArg(t, f[1])
					continue
				case len(f) == 4 && f[0] == "frame":
					n, _ := strconv.Atoi(f[3])
					wantInline = append(wantInline, Frame{Symbol: f[1], File: f[2], Line: n, Inlined: true})
					continue
				case len(f) != 4:
					t.Fatalf("bad line %q", line)
				}
				pc := hexArg(t, f[1])
				wantLine, _ := strconv.Atoi(f[3])
				if f[2] == "-" {
					// A function's entry: offset 0.
					fr := s.Frames([]uint64{pc})[0]
					if fr.Symbol != f[0] || fr.SymOffset != 0 || fr.Object != bin || fr.File == "" || fr.Line == 0 {
						t.Errorf("entry %#x: have %+v, want %s+0 with a file and line", pc, fr, f[0])
					}
					continue
				}
				// runtime.Caller's PC is a return address: its call
				// is at PC-1, as for every caller frame of a stack.
				fr := s.Frames([]uint64{pc - 1})[0]
				if fr.Symbol != f[0] || fr.File != f[2] || fr.Line != wantLine || fr.SymOffset == 0 {
					t.Errorf("%#x: have %+v, want %s at %s:%d", pc-1, fr, f[0], f[2], wantLine)
				}
			}
			if inlinePC == 0 || len(wantInline) != 3 {
				t.Fatalf("the program printed %q, want an inline PC and 3 frames", lines)
			}
			wantInline[2].Inlined = false
			have := s.Frames([]uint64{inlinePC - 1})
			if !tt.inlining {
				// The outermost function, at the innermost position.
				wantInline = []Frame{{Symbol: wantInline[2].Symbol, File: wantInline[0].File, Line: wantInline[0].Line}}
			}
			if len(have) != len(wantInline) {
				t.Fatalf("%#x: have %+v, want %+v", inlinePC-1, have, wantInline)
			}
			for i, w := range wantInline {
				h := have[i]
				if h.Symbol != w.Symbol || h.File != w.File || h.Line != w.Line || h.Inlined != w.Inlined || h.Addr != inlinePC-1 {
					t.Errorf("%#x frame %d: have %+v, want %+v", inlinePC-1, i, h, w)
				}
			}
			// StackFrames looks a return address up at the call before
			// it, keeping the address and its symbol offset.
			first := s.Frames([]uint64{inlinePC})
			stack := s.StackFrames([]uint64{inlinePC, inlinePC})
			if len(stack) != len(first)+len(have) {
				t.Fatalf("StackFrames(%#x, %#x): %+v, want %d frames then %+v", inlinePC, inlinePC, stack, len(first), have)
			}
			for i, h := range have {
				r := stack[len(first)+i]
				wantOff := h.SymOffset
				if !h.Inlined {
					wantOff++
				}
				if r.Symbol != h.Symbol || r.File != h.File || r.Line != h.Line || r.Inlined != h.Inlined || r.Addr != inlinePC || r.SymOffset != wantOff {
					t.Errorf("StackFrames return address frame %d: have %+v, want %+v at %#x", i, r, h, inlinePC)
				}
			}
		})
	}
}

func hexArg(t *testing.T, s string) uint64 {
	t.Helper()
	v, err := strconv.ParseUint(strings.TrimPrefix(s, "0x"), 16, 64)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestPerfMap symbolizes code in an anonymous executable mapping named
// by the process's /tmp/perf-PID.map, as JIT compilers write it.
func TestPerfMap(t *testing.T) {
	testutil.RequireRoot(t)
	bin := buildC(t, "gcc", "jit.c", t.TempDir(), "jit", "-O1")
	want, tr := addrs(t, bin)
	t.Cleanup(func() { os.Remove("/tmp/perf-" + strconv.Itoa(tr.PID()) + ".map") })
	if len(want) != 2 {
		t.Fatalf("the program printed %d addresses, want 2", len(want))
	}
	s := newSymbolizer(t, tr.PID(), &Options{PerfMapReread: -1})
	// With the default, a changed map is read again after a second at
	// the earliest; this one waits an hour.
	slow := newSymbolizer(t, tr.PID(), &Options{PerfMapReread: time.Hour})
	perf := "/tmp/perf-" + strconv.Itoa(tr.PID()) + ".map"
	for name, a := range want {
		fr := s.Frames([]uint64{a + 3})[0]
		if fr.Symbol != name || fr.SymOffset != 3 || fr.Object != perf || fr.String() != name+"+3" {
			t.Errorf("%s+3 at %#x: have %+v, want %s+3 from %s", name, a+3, fr, name, perf)
		}
		if fr := slow.Frames([]uint64{a})[0]; fr.Symbol != name {
			t.Errorf("%s at %#x, first read: have %+v", name, a, fr)
		}
	}
	// Past the last symbol, in the same page: anonymous memory no perf
	// map names is a bare address.
	a := want["jit stub with spaces"] + 0x100
	if fr := s.Frames([]uint64{a})[0]; fr.Symbol != "" || fr.String() != "0x"+strconv.FormatUint(a, 16) {
		t.Errorf("%#x: have %+v (%s), want a bare address", a, fr, fr)
	}
	if n := s.UnnamedJIT(); n != 1 {
		t.Errorf("UnnamedJIT() = %d after one unnamed frame in anonymous memory, want 1", n)
	}

	// A map another user owns is not the process's (/tmp is everyone's).
	owner := chownTo(t, perf, 54321)
	other := newSymbolizer(t, tr.PID(), nil)
	first := want["LJava/lang/String;::hashCode"]
	if fr := other.Frames([]uint64{first})[0]; fr.Symbol != "" {
		t.Errorf("perf map owned by uid 54321, process's uid %d: have %+v, want no symbol", owner, fr)
	}
	chownTo(t, perf, owner)
	if fr := other.Frames([]uint64{first})[0]; fr.Symbol != "LJava/lang/String;::hashCode" {
		t.Errorf("perf map owned by the process's uid %d again: have %+v, want its symbol", owner, fr)
	}

	// The map grows while the process runs: it is read again.
	line := tr.Do(t, "more")
	if len(line) != 1 || !strings.HasPrefix(line[0], "compiled later ") {
		t.Fatalf("more: %q", line)
	}
	later := hexArg(t, strings.TrimPrefix(line[0], "compiled later "))
	if fr := s.Frames([]uint64{later})[0]; fr.Symbol != "compiled later" || fr.SymOffset != 0 {
		t.Errorf("%#x after the map grew: have %#v, want compiled later+0", later, fr)
	}
	if fr := slow.Frames([]uint64{later})[0]; fr.Symbol != "" {
		t.Errorf("%#x after the map grew, read again an hour after the first read at the earliest: have %#v, want no symbol yet", later, fr)
	}

	// With MaxPerfMap below the first two lines, only the first, whole
	// one is read.
	small := newSymbolizer(t, tr.PID(), &Options{MaxPerfMap: 50})
	if fr := small.Frames([]uint64{first})[0]; fr.Symbol != "LJava/lang/String;::hashCode" {
		t.Errorf("MaxPerfMap 50, %#x: have %#v, want the first symbol", first, fr)
	}
	second := want["jit stub with spaces"]
	if fr := small.Frames([]uint64{second})[0]; fr.Symbol != "" {
		t.Errorf("MaxPerfMap 50, %#x: have %#v, want no symbol past the limit", second, fr)
	}
}

// TestExited symbolizes the addresses of a process that has exited after
// New, and of a stripped one whose symbols are in a debug file.
func TestExited(t *testing.T) {
	testutil.RequireRoot(t)
	dir := t.TempDir()
	bin := buildC(t, "gcc", "stack.c", dir, "stack", "-g", "-O1")
	run(t, "objcopy", "--only-keep-debug", bin, bin+".debug")
	run(t, "strip", "--strip-all", bin)
	run(t, "objcopy", "--add-gnu-debuglink="+bin+".debug", bin)
	want, tr := addrs(t, bin)
	s := newSymbolizer(t, tr.PID(), &Options{DebugDirs: []string{filepath.Join(dir, "none")}})
	tr.Quit(t)
	if _, err := os.Stat("/proc/" + strconv.Itoa(tr.PID())); err == nil {
		t.Fatalf("process %d still exists", tr.PID())
	}
	checkFuncs(t, s, want, bin)
	// An address in no mapping is a bare address, and no error.
	if fr := s.Frames([]uint64{0x10})[0]; fr.Object != "" || fr.String() != "0x10" {
		t.Errorf("0x10: have %+v (%s), want a bare address", fr, fr)
	}
}

// TestNoProcess wants an error wrapping procfs.ErrNoProcess.
func TestNoProcess(t *testing.T) {
	if _, err := New(1<<30, nil); !errors.Is(err, procfs.ErrNoProcess) {
		t.Errorf("New(1<<30): err = %v, want ErrNoProcess", err)
	}
}

// TestFormatBpftrace compares Format with bpftrace's ustack on a
// frame-pointer program: bpftrace prints each stack twice, as
// ustack(perf), whose addresses we symbolize, and as ustack, which Format
// must reproduce byte for byte. bpftrace attaches with -p to a running
// process (with -c it prints bare addresses).
func TestFormatBpftrace(t *testing.T) {
	testutil.RequireBPF(t)
	testutil.RequireTool(t, "bpftrace")
	bin := buildC(t, "gcc", "stack.c", t.TempDir(), "stack", "-g", "-O1", "-fno-omit-frame-pointer")
	target := exec.Command(bin, "loop")
	if err := target.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { target.Process.Kill(); target.Wait() })
	s := newSymbolizer(t, target.Process.Pid, nil)

	prog := `uprobe:` + bin + `:leaf { printf("<<%s|%s>>\n", ustack(perf), ustack); exit(); }`
	out, err := testutil.RunBpftrace(t, "-p", strconv.Itoa(target.Process.Pid), "-e", prog)
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(out), "<<")
	perf, stack, ok2 := strings.Cut(rest, "|")
	stack, _, ok3 := strings.Cut(stack, ">>")
	if !ok || !ok2 || !ok3 {
		t.Fatalf("bpftrace printed %q", out)
	}
	var pcs []uint64
	for _, line := range strings.Split(strings.TrimSpace(perf), "\n") {
		f := strings.Fields(line)
		a, err := strconv.ParseUint(f[0], 16, 64)
		if err != nil {
			t.Fatalf("ustack(perf) line %q: %v", line, err)
		}
		pcs = append(pcs, a)
	}
	frames := s.Frames(pcs)
	if len(frames) < 3 || frames[0].Symbol != "leaf" {
		t.Fatalf("frames %+v, want leaf and its callers", frames)
	}
	t.Logf("bpftrace ustack and Format: %q", stack)
	if have := Format(frames, 8); have != stack {
		t.Errorf("Format:\n%q\nbpftrace ustack:\n%q", have, stack)
	}
}

// TestInlinedC symbolizes a return address in a C function where two
// calls are inlined, from the program's own DWARF and from its separate
// debug file, and compares the frames with addr2line -f -i, which we did
// not write.
func TestInlinedC(t *testing.T) {
	testutil.RequireRoot(t)
	addr2line := testutil.RequireTool(t, "addr2line")
	for _, split := range []bool{false, true} {
		t.Run("split="+strconv.FormatBool(split), func(t *testing.T) {
			dir := t.TempDir()
			// -no-pie: addresses are the file's, as addr2line wants.
			bin := buildC(t, "gcc", "inline.c", dir, "inline", "-g", "-O2", "-no-pie")
			if split {
				run(t, "objcopy", "--only-keep-debug", bin, bin+".debug")
				run(t, "strip", "--strip-all", bin)
				run(t, "objcopy", "--add-gnu-debuglink="+bin+".debug", bin)
			}
			want, tr := addrs(t, bin)
			pc := want["ret"] - 1
			ref, err := exec.Command(addr2line, "-f", "-i", "-e", bin+map[bool]string{true: ".debug"}[split], "0x"+strconv.FormatUint(pc, 16)).Output()
			if err != nil {
				t.Fatal(err)
			}
			lines := strings.Split(strings.TrimSpace(string(ref)), "\n")
			if len(lines) != 6 {
				t.Fatalf("addr2line: %q, want 3 frames", lines)
			}
			s := newSymbolizer(t, tr.PID(), &Options{DebugDirs: []string{filepath.Join(dir, "none")}})
			have := s.Frames([]uint64{pc})
			if len(have) != 3 {
				t.Fatalf("%#x: have %+v, want 3 frames as addr2line: %q", pc, have, lines)
			}
			for i, h := range have {
				file, line, _ := strings.Cut(lines[2*i+1], ":")
				line, _, _ = strings.Cut(line, " ") // "12 (discriminator 1)"
				if h.Symbol != lines[2*i] || h.File != file || strconv.Itoa(h.Line) != line || h.Inlined != (i < 2) {
					t.Errorf("frame %d: have %#v, want %s at %s:%s", i, h, lines[2*i], file, line)
				}
			}
			// Without DWARF: the function the code is in, no position.
			nd := newSymbolizer(t, tr.PID(), &Options{NoDWARF: true, DebugDirs: []string{filepath.Join(dir, "none")}})
			if have := nd.Frames([]uint64{pc}); len(have) != 1 || have[0].Symbol != lines[4] || have[0].File != "" || have[0].Inlined {
				t.Errorf("NoDWARF %#x: have %#v, want %s only", pc, have, lines[4])
			}
		})
	}
}

// TestDeleted symbolizes a program whose file was removed while it runs:
// the object is read through map_files and named "PATH (deleted)".
func TestDeleted(t *testing.T) {
	testutil.RequireRoot(t)
	bin := buildC(t, "gcc", "stack.c", t.TempDir(), "stack", "-O1")
	want, tr := addrs(t, bin)
	if err := os.Remove(bin); err != nil {
		t.Fatal(err)
	}
	s := newSymbolizer(t, tr.PID(), nil)
	checkFuncs(t, s, want, bin+" (deleted)")
}

// TestCacheShared symbolizes two processes of one program with one Cache:
// the program's table is read once and shared.
func TestCacheShared(t *testing.T) {
	testutil.RequireRoot(t)
	bin := buildC(t, "gcc", "stack.c", t.TempDir(), "stack", "-O1")
	want1, tr1 := addrs(t, bin)
	want2, tr2 := addrs(t, bin)
	c := &Cache{}
	s1 := newSymbolizer(t, tr1.PID(), &Options{Cache: c})
	s2 := newSymbolizer(t, tr2.PID(), &Options{Cache: c})
	checkFuncs(t, s1, want1, bin)
	checkFuncs(t, s2, want2, bin)
	table := func(s *Symbolizer) *objectSyms {
		for _, o := range s.files {
			if o.name == bin {
				return o.syms
			}
		}
		return nil
	}
	if t1, t2 := table(s1), table(s2); t1 == nil || t1 != t2 {
		t.Errorf("tables of %s: %p and %p, want one shared", bin, t1, t2)
	}
}

// chownTo gives path to uid and returns its owner before.
func chownTo(t *testing.T, path string, uid int) int {
	t.Helper()
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(path, uid, -1); err != nil {
		t.Fatal(err)
	}
	return int(st.Sys().(*syscall.Stat_t).Uid)
}
