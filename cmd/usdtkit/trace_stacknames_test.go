package main

import (
	"bytes"
	"debug/elf"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/arch/x86/x86asm"

	"github.com/usdtkit/usdtkit/internal/lang/flame"
	"github.com/usdtkit/usdtkit/internal/testutil"
)

// stackNames returns the functions of the first stack of a map as
// `usdtkit trace` prints it in text ("@[\n    sym+off\n ...]: N"),
// innermost first, each without its "+off", and the entry's value.
func stackNames(t *testing.T, out string) ([]string, int) {
	t.Helper()
	var names []string
	in := false
	for l := range strings.Lines(out) {
		l = strings.TrimSuffix(l, "\n")
		switch {
		case strings.HasSuffix(l, "@["):
			in = true
		case in && strings.HasPrefix(l, "    "):
			name := strings.TrimSpace(l)
			if i := strings.LastIndexByte(name, '+'); i > 0 {
				name = name[:i]
			}
			names = append(names, name)
		case in && strings.HasPrefix(l, "]: "):
			n, err := strconv.Atoi(l[3:])
			if err != nil {
				t.Fatalf("value %q: %v", l, err)
			}
			return names, n
		}
	}
	t.Fatalf("no stack in the output:\n%s", out)
	return nil, 0
}

// checkChain checks that the printed stack begins with want (innermost
// first) and counts n hits.
func checkChain(t *testing.T, out string, want []string, n int) {
	t.Helper()
	have, count := stackNames(t, out)
	if len(have) < len(want) || !slices.Equal(have[:len(want)], want) || count != n {
		t.Errorf("stack %q counted %d: want it to begin %q and count %d; output:\n%s", have, count, want, n, out)
	}
}

// buildTool runs a build command, failing the test with its output.
func buildTool(t *testing.T, name string, args ...string) {
	t.Helper()
	path := testutil.RequireTool(t, name)
	if out, err := exec.Command(path, args...).CombinedOutput(); err != nil {
		t.Fatalf("%s %q: %v\n%s", name, args, err, out)
	}
}

// TestTraceStackCPlusPlus: the frames of a C++ program are demangled:
// leaf ← shapes::Circle::area(int) const ← shapes::Area<double>::of(…)
// ← main, with the default flags, with frame pointers and without (then
// walked with the program's CFI).
func TestTraceStackCPlusPlus(t *testing.T) {
	for _, flags := range [][]string{{"-O0", "-fno-omit-frame-pointer"}, {"-O2", "-fomit-frame-pointer"}} {
		t.Run(strings.Join(flags, " "), func(t *testing.T) {
			bin := filepath.Join(t.TempDir(), "names")
			buildTool(t, "g++", append(flags, "-o", bin, "testdata/stacks/names.cc")...)
			out, _ := traceLevels(t, bin, 2, "-e", "uprobe:"+bin+":leaf { @[ustack] = count(); }")
			checkChain(t, out, []string{"leaf", "shapes::Circle::area(int) const", "shapes::Area<double>::of(shapes::Circle const&, double)", "main"}, 2)
		})
	}
}

// TestTraceStackGoInlined: a Go program built with the default flags, where
// middle is inlined into outer: the flame graph's stack has middle as a
// frame of its own between leaf and outer (symbolize reads Go's inline
// tables), and so has the text map, as "[inlined] main.middle" (bpftrace
// 0.24 and later print an inlined frame as "[inlined] NAME", without an
// offset).
func TestTraceStackGoInlined(t *testing.T) {
	bin := testutil.BuildGo(t, "testdata/stacks/inlinego")
	out, errs := traceLevels(t, bin, 3, "-e", "uprobe:"+bin+":main.leaf { @[ustack] = count(); }", "-o", "folded")
	samples, err := flame.ParseFolded(strings.NewReader(out))
	if err != nil || len(samples) != 1 {
		t.Fatalf("folded %q: %d stacks, %v; want 1", out, len(samples), err)
	}
	var names []string
	for _, f := range samples[0].Frames {
		names = append(names, f.Symbol)
	}
	want := []string{"main.leaf", "main.middle", "main.outer", "main.main"}
	if len(names) < len(want) || !slices.Equal(names[:len(want)], want) || samples[0].Count != 3 {
		t.Errorf("folded %q: want the stack to end %q with count 3", out, want)
	}
	checkChain(t, errs, []string{"main.leaf", "[inlined] main.middle", "main.outer", "main.main"}, 3)
	if !strings.Contains(errs, "\n    [inlined] main.middle\n") {
		t.Errorf("no line \"    [inlined] main.middle\" in the map:\n%s", errs)
	}

	// The flags' --stacks on the Go function: the same stack, under the
	// probe's frame.
	out, _ = traceLevels(t, bin, 3, "uprobe:"+bin+":main.leaf", "--stacks", "-o", "folded")
	samples, err = flame.ParseFolded(strings.NewReader(out))
	if err != nil || len(samples) != 1 {
		t.Fatalf("--stacks: folded %q: %d stacks, %v; want 1", out, len(samples), err)
	}
	names = names[:0]
	for _, f := range samples[0].Frames {
		names = append(names, f.Symbol)
	}
	if len(names) < len(want) || !slices.Equal(names[:len(want)], want) || samples[0].Count != 3 || !strings.Contains(out, "main.leaf") {
		t.Errorf("--stacks: folded %q: want the stack to end %q with count 3", out, want)
	}
}

// TestTraceStackCInlined: a C program built -O2 -g with the default
// flags, where mid (always_inline) and inner (static inline) are inlined
// into outer: every format has them as frames of their own between leaf
// and outer, innermost first, as gdb's bt shows them. The text map and
// printf print them as bpftrace 0.24 and later do: "[inlined] NAME" with
// no offset, and "ADDR NAME (inlined)" in ustack(perf); ustack(2) keeps
// leaf and outer's return address with its two inlined calls.
func TestTraceStackCInlined(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "inlinec")
	buildTool(t, "gcc", "-O2", "-g", "-o", bin, "testdata/stacks/inlinec.c")
	prog := "uprobe:" + bin + `:leaf { @[ustack] = count(); @two[ustack(2)] = count(); printf("%s|\n", ustack(perf)); }`
	out, errs := traceLevels(t, bin, 2, "-e", prog)
	want := []string{"leaf", "[inlined] inner", "[inlined] mid", "outer", "main"}
	checkChain(t, out, want, 2)
	if !regexp.MustCompile(`\n    leaf\+0\n    \[inlined\] inner\n    \[inlined\] mid\n    outer\+\d+\n    main\+\d+\n`).MatchString(out) {
		t.Errorf("the map's stack is not leaf+0, [inlined] inner, [inlined] mid, outer+N, main+N:\n%s", out)
	}
	// ustack(2) keeps two addresses, each with its inlined calls (as
	// bpftrace's limit counts addresses, not printed frames).
	if !regexp.MustCompile(`@two\[\n    leaf\+0\n    \[inlined\] inner\n    \[inlined\] mid\n    outer\+\d+\n\]: 2\n`).MatchString(out) {
		t.Errorf("@two's stack is not leaf+0, [inlined] inner, [inlined] mid, outer+N, counted 2:\n%s", out)
	}
	// ustack(perf): the inlined frames at outer's return address.
	perf := regexp.MustCompile(`\t([0-9a-f]+) leaf\+0 \(` + regexp.QuoteMeta(bin) + `\)\n\t([0-9a-f]+) inner \(inlined\)\n\t([0-9a-f]+) mid \(inlined\)\n\t([0-9a-f]+) outer\+\d+ \(` + regexp.QuoteMeta(bin) + `\)\n\t[0-9a-f]+ main\+\d+ `)
	m := perf.FindAllStringSubmatch(out, -1)
	if len(m) != 2 {
		t.Fatalf("ustack(perf): %d stacks leaf, inner (inlined), mid (inlined), outer, main; want 2:\n%s\n%s", len(m), out, errs)
	}
	if m[0][2] != m[0][4] || m[0][3] != m[0][4] {
		t.Errorf("ustack(perf): the inlined frames' addresses %s, %s are not outer's %s", m[0][2], m[0][3], m[0][4])
	}

	// JSON: the same frames, the inlined ones marked.
	out, errs = traceLevels(t, bin, 1, "-o", "json", "-e", "uprobe:"+bin+`:leaf { printf("%s\n", ustack); }`)
	var names []string
	for l := range strings.Lines(out) {
		var ev struct {
			Type   string
			Stacks [][]struct {
				Symbol  string
				Inlined bool
			}
		}
		if json.Unmarshal([]byte(l), &ev) != nil || ev.Type != "printf" || len(ev.Stacks) != 1 {
			continue
		}
		for _, f := range ev.Stacks[0] {
			n := f.Symbol
			if f.Inlined {
				n = "[inlined] " + n
			}
			names = append(names, n)
		}
	}
	if len(names) < len(want) || !slices.Equal(names[:len(want)], want) {
		t.Errorf("JSON stack %q: want it to begin %q\n%s\n%s", names, want, out, errs)
	}
}

// TestTraceStackDebugFile: a stripped shared library whose static
// functions are named only in its separate debug file (found by its
// .gnu_debuglink beside it) has those names in the stack, with the
// default flags. Built -O0 with frame pointers, and built -O2 without
// frame pointers and without unwind tables: its CFI is then only the
// debug file's .debug_frame, which the program's CFI walk needs to get
// from dbg_leaf to main.
func TestTraceStackDebugFile(t *testing.T) {
	for _, flags := range [][]string{
		{"-O0", "-fno-omit-frame-pointer"},
		{"-O2", "-fomit-frame-pointer", "-fno-asynchronous-unwind-tables", "-fno-unwind-tables"},
	} {
		t.Run(strings.Join(flags, " "), func(t *testing.T) {
			dir := t.TempDir()
			lib := filepath.Join(dir, "libdbg.so")
			buildTool(t, "gcc", append(flags, "-g", "-fPIC", "-shared", "-o", lib, "testdata/stacks/dbglib.c")...)
			buildTool(t, "objcopy", "--only-keep-debug", lib, lib+".debug")
			buildTool(t, "strip", "--strip-all", lib)
			buildTool(t, "objcopy", "--add-gnu-debuglink="+lib+".debug", lib)
			bin := filepath.Join(dir, "dbgmain")
			buildTool(t, "gcc", "-O2", "-o", bin, "testdata/stacks/dbgmain.c", "-L"+dir, "-ldbg", "-Wl,-rpath,"+dir)
			// The stripped library does not name the static functions.
			f, err := elf.Open(lib)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			syms, _ := f.Symbols()
			dyn, _ := f.DynamicSymbols()
			for _, s := range append(syms, dyn...) {
				if strings.HasPrefix(s.Name, "hidden_") {
					t.Fatalf("the stripped library still has %s", s.Name)
				}
			}
			if flags[0] == "-O2" {
				checkCFIOnlyInDebugFile(t, f, lib+".debug")
			}
			out, _ := traceLevels(t, bin, 2, "-e", "uprobe:"+lib+":dbg_leaf { @[ustack] = count(); }")
			checkChain(t, out, []string{"dbg_leaf", "hidden_inner", "hidden_outer", "dbg_entry", "main"}, 2)
		})
	}
}

// checkCFIOnlyInDebugFile checks that the stripped library f has no CFI
// (no .debug_frame; an .eh_frame, if any, of zeros only: the terminator
// crtend.o adds, without CIE or FDE) and that its debug file has a
// .debug_frame.
func checkCFIOnlyInDebugFile(t *testing.T, f *elf.File, debug string) {
	t.Helper()
	if s := f.Section(".debug_frame"); s != nil {
		t.Fatalf("the stripped library has a .debug_frame")
	}
	if s := f.Section(".eh_frame"); s != nil {
		data, err := s.Data()
		if err != nil {
			t.Fatal(err)
		}
		if slices.ContainsFunc(data, func(b byte) bool { return b != 0 }) {
			t.Fatalf("the stripped library's .eh_frame has CFI (% x)", data)
		}
	}
	d, err := elf.Open(debug)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if s := d.Section(".debug_frame"); s == nil || s.Type == elf.SHT_NOBITS || s.Size == 0 {
		t.Fatalf("the debug file %s has no .debug_frame", debug)
	}
}

// TestTraceStackJava: a JVM whose hot method Hot.work (JIT-compiled, with
// -XX:+PreserveFramePointer so the compiled code keeps frame pointers)
// calls Thread.yield, with its perf map written by `jcmd PID
// Compiler.perfmap`: the stacks at the C library's sched_yield name the
// JIT-compiled frames by the map's Java method names, the C library's and
// libjvm's frames by their symbols.
func TestTraceStackJava(t *testing.T) {
	testutil.RequireFile(t, testutil.LibJVM)
	javac := testutil.RequireTool(t, "javac")
	java := testutil.RequireTool(t, "java")
	jcmd := testutil.RequireTool(t, "jcmd")
	dir := t.TempDir()
	if out, err := exec.Command(javac, "-d", dir, "testdata/stacks/Hot.java").CombinedOutput(); err != nil {
		t.Fatalf("javac: %v\n%s", err, out)
	}
	// -Xbatch compiles in the foreground: Hot.work is compiled before
	// "ready", not whenever a loaded machine's compiler thread gets to it
	// (a fresh-root CI run once saw it still interpreted).
	hot := testutil.StartCmd(t, exec.Command(java, "-Xbatch", "-XX:+PreserveFramePointer", "-cp", dir, "Hot"))
	pid := strconv.Itoa(hot.PID())
	perfMap := "/tmp/perf-" + pid + ".map"
	t.Cleanup(func() {
		hot.Stdin().Close()
		hot.Cmd.Process.Kill()
		hot.Cmd.Wait()
		os.Remove(perfMap)
	})
	// Hot.work is compiled before "ready"; the perf map lists it then.
	hot.Expect(t, "ready")
	if out, err := exec.Command(jcmd, pid, "Compiler.perfmap").CombinedOutput(); err != nil {
		t.Fatalf("jcmd: %v\n%s", err, out)
	}
	run := startTrace(t, "trace", "-p", pid, "-e", "uprobe:libc:sched_yield { @[ustack] = count(); }")
	hot.Send(t, "go")
	hot.Expect(t, "done")
	// Methods compiled since are added to the map, which is read again
	// when the stacks are named at the end and an address is not in it.
	if out, err := exec.Command(jcmd, pid, "Compiler.perfmap").CombinedOutput(); err != nil {
		t.Fatalf("jcmd: %v\n%s", err, out)
	}
	run.stop()
	code, out, errs := run.wait(t)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	// The loop yields 100 times per line, from the compiled Hot.work.
	found := false
	for _, block := range strings.Split(out, "@[")[1:] {
		names, n := stackNames(t, "@["+block)
		i := slices.IndexFunc(names, func(s string) bool { return strings.Contains(s, "Hot.work(int, boolean)") })
		if i > 0 && strings.Contains(names[i-1], "java.lang.Thread.yield()") && slices.Contains(names[:i], "JVM_Yield") && n >= 1 {
			found = true
		}
	}
	if !found {
		t.Errorf("no stack names Hot.work under Thread.yield and JVM_Yield:\n%s", out)
	}
}

// TestTraceStackJitdump: code in anonymous executable memory is named by
// the process's jitdump (/tmp/jit-PID.dump): jitdump.c (internal/stacks/
// symbolize's testdata) writes jit_hot into such memory and calls it,
// and jit_hot calls back into the program. At the callback, a stack-keyed
// map (the frame-pointer walk, through jit_hot's frame pointer) and a
// printf'd ustack(perf) (unwound with CFI, and with frame pointers
// through the JIT code, which has no CFI) both go callback, jit_hot (from
// the dump), main. The process removes its dump as it exits, before the
// map is printed and maybe before the printf records are: the trace
// holds the dump open from when it first saw the process.
func TestTraceStackJitdump(t *testing.T) {
	src := testutil.RequireFile(t, filepath.Join("..", "..", "internal", "stacks", "symbolize", "testdata", "jitdump.c"))
	bin := filepath.Join(t.TempDir(), "jitdump")
	buildTool(t, "gcc", "-O1", "-o", bin, src)
	tr := testutil.StartTracee(t, bin)
	pid := strconv.Itoa(tr.PID())
	dump := "/tmp/jit-" + pid + ".dump"
	t.Cleanup(func() { os.Remove(dump) })
	tr.Do(t, "addrs") // the dump is written once it answers
	run := startTrace(t, "trace", "-p", pid, "-e", "uprobe:"+bin+":callback { @[ustack] = count(); printf(\"%s|\\n\", ustack(perf)); }")
	tr.Do(t, "addrs")
	tr.Do(t, "addrs")
	tr.Quit(t)
	code, out, errs := run.wait(t)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	checkChain(t, out, []string{"callback", "jit_hot", "main"}, 2)
	printed, _, ok := strings.Cut(out, "|\n")
	if !ok {
		t.Fatalf("no printf'd stack:\n%s", out)
	}
	// "\tADDR FUNC+OFF (OBJECT)" lines.
	var frames []string
	for l := range strings.Lines(printed) {
		if f := strings.Fields(l); len(f) == 3 {
			fn, _, _ := strings.Cut(f[1], "+")
			frames = append(frames, fn+" "+f[2])
		}
	}
	want := []string{"callback (" + bin + ")", "jit_hot (" + dump + ")", "main (" + bin + ")"}
	if len(frames) < len(want) || !slices.Equal(frames[:len(want)], want) {
		t.Errorf("printf'd stack %q: want it to begin %q; output:\n%s", frames, want, out)
	}
}

// jsOuter matches a frame of hot.js's outer as V8 names it in its
// jitdump, whatever tier compiled it and whichever Node wrote it:
// "JS:*outer /DIR/hot.js:12:15" (Node 20), "Function:^outer
// /DIR/hot.js:12" (Node 18).
var jsOuter = regexp.MustCompile(`^(JS|Function|LazyCompile):[~^*+]?outer \S*/hot\.js:[0-9]+(:[0-9]+)?$`)

// TestTraceStackNode: Node run with --perf-prof writes a jitdump of the
// code V8 compiles and maps it (in its working directory, not /tmp): the
// stacks at the C library's access(2), called from JavaScript through
// fs.existsSync, name outer's frame from it, with the dump as the
// frame's object. The stacks are printf'd, so unwound with CFI: a Node
// that uses the system's libuv (Debian's) reaches access through code
// built without frame pointers, where the kernel's walk for map keys
// ends.
func TestTraceStackNode(t *testing.T) {
	node := testutil.RequireTool(t, "node")
	dir := t.TempDir()
	src, err := os.ReadFile("testdata/stacks/hot.js")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "hot.js"), src, 0o644); err != nil {
		t.Fatal(err)
	}
	// A script, so that the tracee runs node in dir.
	script := filepath.Join(dir, "node.sh")
	if err := os.WriteFile(script, []byte("#!/bin/sh\ncd "+dir+" && exec "+node+" --perf-prof --interpreted-frames-native-stack hot.js\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	tr := testutil.StartTracee(t, script)
	pid := strconv.Itoa(tr.PID())
	tr.Do(t, "warm up") // V8 compiles outer and hotStat
	run := startTrace(t, "trace", "-p", pid, "-e", `uprobe:libc:access /@n < 3/ { @n = @n + 1; printf("%s\n", ustack(perf)); }`)
	tr.Do(t, "go")
	tr.Quit(t)
	code, out, errs := run.wait(t)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	dump := filepath.Join(dir, "jit-"+pid+".dump")
	found := false
	for l := range strings.Lines(out) {
		// "\tADDR FUNC+OFF (OBJECT)"; a JS name has spaces.
		l = strings.TrimSpace(l)
		obj := "(" + dump + ")"
		if !strings.HasSuffix(l, obj) {
			continue
		}
		_, fn, _ := strings.Cut(strings.TrimSpace(strings.TrimSuffix(l, obj)), " ")
		if i := strings.LastIndexByte(fn, '+'); i > 0 && jsOuter.MatchString(fn[:i]) {
			found = true
		}
	}
	if !found {
		t.Errorf("no stack names outer from %s:\n%s", dump, out)
	}
}

// pyGCScript says "ready", then collects garbage (gc.collect(), which
// fires python3.11's gc__start probe) and says "done" for each line on
// stdin.
const pyGCScript = `import gc, sys
print("ready", flush=True)
for line in sys.stdin:
    gc.collect()
    print("done", flush=True)
`

// TestTraceStackPython: Debian's python3.11, with the default flags: the
// stack at its USDT probe gc__start, fired by gc.collect() in a script,
// goes through the interpreter's C frames to main and on to the
// executable's entry. What main's frame is named and whether the
// executable names its static functions is read from the file (see
// mainFrame): a stripped executable has them as "[python3.11+0x…]".
func TestTraceStackPython(t *testing.T) {
	py := testutil.RequireFile(t, testutil.Python311)
	entry, main, symtab := mainFrame(t, py)
	t.Logf("%s: entry %s, main's frame %s, .symtab: %v", py, entry, main, symtab)
	tr := testutil.StartCmd(t, exec.Command(py, "-c", pyGCScript))
	tr.Expect(t, "ready")
	run := startTrace(t, "trace", "-p", strconv.Itoa(tr.PID()), "-e", "usdt:"+py+":python:gc__start { @[ustack] = count(); }")
	tr.Do(t, "gc")
	tr.Do(t, "gc")
	tr.Quit(t)
	code, out, errs := run.wait(t)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	// The script's two collections have one stack; the interpreter's
	// own at exit others.
	var names []string
	for _, block := range strings.Split(out, "@[")[1:] {
		if s, n := stackNames(t, "@["+block); n == 2 {
			names = s
		}
	}
	if names == nil {
		t.Fatalf("no stack counted 2:\n%s", out)
	}
	m := slices.Index(names, main)
	if m < 1 || names[len(names)-1] != entry {
		t.Fatalf("stack %q: want it to reach %s and end at %s (the entry)\n%s", names, main, entry, out)
	}
	// "[python3.11+0x…]" without its offset.
	unnamed := "[" + filepath.Base(py)
	for i, name := range names {
		if strings.HasPrefix(name, "[") && !(i < m && !symtab && name == unnamed) || strings.HasPrefix(name, "0x") {
			t.Errorf("frame %d %q is not named (the executable has .symtab: %v)", i, name, symtab)
		}
	}
	if t.Failed() {
		t.Logf("output:\n%s", out)
	}
}

// mainFrame reads from the x86-64 executable at path the names of its
// entry point (_start) and of the frame main has on its stacks: main's
// own, or, when main's first instruction jumps to another function (a
// tail call, as python3.11's main to Py_BytesMain), that function's, as
// main then leaves no frame. main is _start's argument to
// __libc_start_main (loaded into %rdi before the call). symtab reports
// whether the file has a .symtab (names for its static functions).
func mainFrame(t *testing.T, path string) (entry, main string, symtab bool) {
	t.Helper()
	f, err := elf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	syms, err := f.Symbols()
	symtab = err == nil
	dyn, _ := f.DynamicSymbols()
	name := func(addr uint64) string {
		for _, s := range append(syms, dyn...) {
			if s.Value == addr && elf.ST_TYPE(s.Info) == elf.STT_FUNC {
				return s.Name
			}
		}
		t.Fatalf("%s: no function at %#x", path, addr)
		return ""
	}
	code := func(addr uint64) []byte {
		for _, p := range f.Progs {
			if p.Type == elf.PT_LOAD && p.Flags&elf.PF_X != 0 && addr >= p.Vaddr && addr+64 <= p.Vaddr+p.Filesz {
				b := make([]byte, 64)
				if _, err := p.ReadAt(b, int64(addr-p.Vaddr)); err != nil {
					t.Fatal(err)
				}
				return b
			}
		}
		t.Fatalf("%s: no code at %#x", path, addr)
		return nil
	}
	// _start: the last value loaded into %rdi before the call.
	var mainAddr uint64
	pc, b := f.Entry, code(f.Entry)
	for len(b) > 0 {
		if bytes.HasPrefix(b, endbr64) {
			pc, b = pc+4, b[4:]
			continue
		}
		in, err := x86asm.Decode(b, 64)
		if err != nil || in.Op == x86asm.CALL {
			break
		}
		next := pc + uint64(in.Len)
		if in.Args[0] == x86asm.RDI || in.Args[0] == x86asm.EDI {
			switch a := in.Args[1].(type) {
			case x86asm.Imm:
				mainAddr = uint64(a)
			case x86asm.Mem:
				if in.Op == x86asm.LEA && a.Base == x86asm.RIP {
					mainAddr = next + uint64(a.Disp)
				}
			}
		}
		pc, b = next, b[in.Len:]
	}
	if mainAddr == 0 {
		t.Fatalf("%s: found no main in _start", path)
	}
	b = code(mainAddr)
	b = bytes.TrimPrefix(b, endbr64)
	at := mainAddr + uint64(64-len(b))
	if in, err := x86asm.Decode(b, 64); err == nil && in.Op == x86asm.JMP {
		if rel, ok := in.Args[0].(x86asm.Rel); ok {
			return name(f.Entry), name(at + uint64(in.Len) + uint64(int64(rel))), symtab
		}
	}
	return name(f.Entry), name(mainAddr), symtab
}

// endbr64 is the instruction a function built with -fcf-protection
// begins with; x86asm does not decode it.
var endbr64 = []byte{0xf3, 0x0f, 0x1e, 0xfa}
