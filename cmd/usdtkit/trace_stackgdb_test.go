package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/usdtkit/usdtkit/internal/bpf/stackcap/stacktest"
	"github.com/usdtkit/usdtkit/internal/testutil"
)

// gdbFrames is a gdb Python script that, at each stop, prints the stack
// gdb's bt shows as one line "stack: KIND NAME|KIND NAME|…", innermost
// first, KIND being "inlined" for a function inlined into the next frame,
// "tailcall" for a caller gdb infers from DWARF call-site entries (it
// left through a tail jump, so no return address of it is on the stack)
// and "frame" otherwise; then continues, until the process exits.
const gdbFrames = `
import gdb
kinds = {gdb.INLINE_FRAME: "inlined", gdb.TAILCALL_FRAME: "tailcall"}
while True:
    try:
        f = gdb.newest_frame()
    except gdb.error:
        break
    names = []
    while f is not None:
        names.append("%s %s" % (kinds.get(f.type(), "frame"), f.name()))
        f = f.older()
    print("stack: " + "|".join(names))
    gdb.execute("continue")
`

// gdbName is a function name with the spellings gdb and a symbol table
// may give the same function made alike: the C library's internal alias
// prefix ("__GI_"), the leading underscores of its aliases ("__qsort_r"
// for qsort_r), and GCC's clone suffixes (".part.0", ".isra.0",
// ".constprop.0", ".cold"), which DWARF names leave out.
func gdbName(name string) string {
	name = strings.TrimLeft(strings.TrimPrefix(name, "__GI_"), "_")
	name, _, _ = strings.Cut(name, ".")
	return name
}

// untilMain returns names up to and including the first "main" (gdb's bt
// stops there).
func untilMain(names []string) []string {
	if i := slices.Index(names, "main"); i >= 0 {
		return names[:i+1]
	}
	return names
}

// TestStackAgainstGdb: chain.c built -O2 -fomit-frame-pointer -g, sorting
// through the C library's qsort, whose callback cmp is traced: the stacks
// of `@[ustack] = count()` with the default flags (walked in the BPF
// program with each object's CFI) are, frame by frame from cmp to main,
// the stacks gdb's bt shows at a breakpoint on cmp in another run of the
// same input, with the C library's inlined calls (its DWARF from
// libc6-dbg) as "[inlined]" frames where gdb has inline frames. gdb also
// shows callers that tail-jumped away (qsort jumps to qsort_r), which no
// stack walk can see; they are left out of its stacks. Names are compared
// as gdbName makes them alike.
func TestStackAgainstGdb(t *testing.T) {
	gdb := testutil.RequireTool(t, "gdb")
	bin := stacktest.BuildChain(t, "-O2", "-fomit-frame-pointer", "-g")

	// gdb: one stack per call of cmp.
	dir := t.TempDir()
	script := filepath.Join(dir, "frames.py")
	input := filepath.Join(dir, "input")
	if err := os.WriteFile(script, []byte(gdbFrames), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(input, []byte("sort\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(gdb, "-nx", "-batch", "-ex", "set pagination off", "-ex", "break cmp", "-ex", "run < "+input, "-x", script, bin)
	cmd.Env = append(os.Environ(), "DEBUGINFOD_URLS=")
	b, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("gdb: %v\n%s", err, b)
	}
	theirs := map[string]int{}
	hits, tailcalls := 0, 0
	for l := range strings.Lines(string(b)) {
		l, ok := strings.CutPrefix(strings.TrimSuffix(l, "\n"), "stack: ")
		if !ok {
			continue
		}
		var names []string
		for _, f := range strings.Split(l, "|") {
			kind, name, _ := strings.Cut(f, " ")
			switch kind {
			case "tailcall":
				tailcalls++
			case "inlined":
				names = append(names, "[inlined] "+gdbName(name))
			default:
				names = append(names, gdbName(name))
			}
		}
		theirs[strings.Join(untilMain(names), " ← ")]++
		hits++
	}
	if hits == 0 {
		t.Fatalf("gdb stopped nowhere in cmp:\n%s", b)
	}
	t.Logf("gdb: %d stops, %d tail-call frames left out; stacks %v", hits, tailcalls, theirs)

	// usdtkit: the map, with the default flags.
	tr := testutil.StartTracee(t, bin)
	tr.Do(t, "loop 0")
	run := startTrace(t, "trace", "-p", strconv.Itoa(tr.PID()), "-e", "uprobe:"+bin+":cmp { @[ustack] = count(); }")
	tr.Do(t, "sort")
	tr.Quit(t)
	code, out, errs := run.wait(t)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	ours := map[string]int{}
	n := 0
	for _, block := range strings.Split(out, "@[")[1:] {
		names, count := stackNames(t, "@["+block)
		for i, name := range names {
			if s, ok := strings.CutPrefix(name, "[inlined] "); ok {
				names[i] = "[inlined] " + gdbName(s)
			} else {
				names[i] = gdbName(name)
			}
		}
		ours[strings.Join(untilMain(names), " ← ")] += count
		n += count
	}
	if n != hits {
		t.Errorf("usdtkit counted %d calls of cmp, gdb stopped %d times", n, hits)
	}
	for s, c := range theirs {
		if ours[s] != c {
			t.Errorf("gdb's stack\n\t%s\nseen %d times, usdtkit's map has it %d times", s, c, ours[s])
		}
	}
	for s, c := range ours {
		if _, ok := theirs[s]; !ok {
			t.Errorf("usdtkit's stack\n\t%s\ncounted %d is not one of gdb's", s, c)
		}
	}
	if t.Failed() {
		t.Logf("gdb:\n%s\nusdtkit:\n%s", b, out)
	}
}
