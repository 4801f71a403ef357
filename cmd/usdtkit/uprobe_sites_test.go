package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/usdtkit/usdtkit/internal/testutil"
	"github.com/usdtkit/usdtkit/uprobe"
)

// function finds the one function sel selects.
func function(t *testing.T, pid int, sel string) uprobe.Function {
	t.Helper()
	s, err := uprobe.ParseSelector(sel)
	if err != nil {
		t.Fatal(err)
	}
	fns, err := uprobe.Functions(&uprobe.ListOptions{PID: pid, Selectors: []uprobe.Selector{s}})
	if err != nil || len(fns) != 1 {
		t.Fatalf("%s: %d functions, %v; want one", sel, len(fns), err)
	}
	return fns[0]
}

// countProbes traces args (with -o json) over one round of m and returns
// the number of events per probe name from m's process.
func countProbes(t *testing.T, m *mallocsTarget, args ...string) map[string]int {
	t.Helper()
	tr := startTrace(t, append([]string{"trace", "-p", m.pid(), "-o", "json"}, args...)...)
	m.round(t)
	tr.stop()
	code, out, errs := tr.wait(t)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	n := make(map[string]int)
	for _, ev := range parseEvents(t, out) {
		if strconv.Itoa(ev.PID) == m.pid() {
			n[ev.Probe]++
		}
	}
	return n
}

// TestTraceUprobeAliasOneSite checks that an address with two symbol names
// (add3 and its alias add3_alias) is one site: one event per call, named
// add3, whether selected by address or by a glob matching both names.
func TestTraceUprobeAliasOneSite(t *testing.T) {
	m := startMallocs(t)
	pid := m.Cmd.Process.Pid
	bin := m.Cmd.Path
	add3 := function(t, pid, "uprobe:"+bin+":add3")
	if alias := function(t, pid, "uprobe:"+bin+":add3_alias"); alias.Symbol.Value != add3.Symbol.Value {
		t.Fatalf("add3 at %#x, add3_alias at %#x: want one address", add3.Symbol.Value, alias.Symbol.Value)
	}
	for _, sel := range []string{
		fmt.Sprintf("uprobe:%s:%#x", bin, add3.Symbol.Value),
		"uprobe:" + bin + ":add3*",
	} {
		t.Run(sel, func(t *testing.T) {
			n := countProbes(t, m, sel)
			if len(n) != 1 || n["uprobe:add3"] != 1 {
				t.Errorf("events per probe %v, want uprobe:add3 once (one call)", n)
			}
		})
	}
}

// x86Boundaries returns the offsets of the first instructions of the
// function at addr in path, as objdump decodes them.
func x86Boundaries(t *testing.T, path string, addr uint64) []uint64 {
	t.Helper()
	objdump := testutil.RequireTool(t, "objdump")
	out, err := exec.Command(objdump, "-d", "--start-address="+strconv.FormatUint(addr, 10),
		"--stop-address="+strconv.FormatUint(addr+48, 10), path).Output()
	if err != nil {
		t.Fatalf("objdump: %v", err)
	}
	var offs []uint64
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		// "   98930:\t41 54    \tpush   %r12"
		a, _, ok := strings.Cut(strings.TrimSpace(sc.Text()), ":\t")
		if v, err := strconv.ParseUint(a, 16, 64); ok && err == nil {
			offs = append(offs, v-addr)
		}
	}
	if len(offs) < 4 {
		t.Fatalf("objdump gave %d instructions: %s", len(offs), out)
	}
	return offs
}

// TestTraceUprobeInstructionBoundary checks that malloc+OFFSET inside an
// instruction is refused, naming the boundaries around it (as objdump
// decodes them), while malloc+0 and malloc at a real boundary are traced
// and malloc still returns what it should.
func TestTraceUprobeInstructionBoundary(t *testing.T) {
	m := startMallocs(t)
	pid := m.Cmd.Process.Pid
	malloc := function(t, pid, "uprobe:libc:malloc")
	if malloc.Machine.String() != "EM_X86_64" {
		t.Skipf("objdump cross-check is for x86-64, not %v", malloc.Machine)
	}
	offs := x86Boundaries(t, malloc.Path, malloc.Symbol.Value)
	inside := -1
	for i := 0; i+1 < len(offs); i++ {
		if offs[i+1]-offs[i] > 1 {
			inside = i
			break
		}
	}
	if inside < 0 {
		t.Fatalf("no instruction longer than a byte among %v", offs)
	}
	prev, next := offs[inside], offs[inside+1]
	var out, errb bytes.Buffer
	code := run(context.Background(), []string{"trace", "-p", m.pid(), fmt.Sprintf("uprobe:libc:malloc+%d", prev+1)}, &out, &errb)
	want := fmt.Sprintf("usdtkit: uprobe:libc:malloc+%d: uprobe:malloc+%d in %s: not an instruction boundary (the nearest are malloc+%d and malloc+%d)\n",
		prev+1, prev+1, malloc.Path, prev, next)
	if code != 1 || errb.String() != want {
		t.Errorf("malloc+%d: exit %d, stderr %q; want 1, %q", prev+1, code, errb.String(), want)
	}
	for _, off := range []uint64{0, next} {
		name := "uprobe:malloc"
		if off != 0 {
			name += "+" + strconv.FormatUint(off, 10)
		}
		t.Run(name, func(t *testing.T) {
			n := countProbes(t, m, fmt.Sprintf("uprobe:libc:malloc+%d", off))
			if n[name] < 3 {
				t.Errorf("events per probe %v, want %s at least 3 times (one round mallocs 3 blocks)", n, name)
			}
		})
	}
	// The probes changed nothing: malloc still returns distinct blocks.
	_, ptrs := sizesAndPtrs(t, m.round(t))
	if ptrs[0] == 0 || ptrs[0] == ptrs[1] || ptrs[1] == ptrs[2] {
		t.Errorf("malloc returned %v after the traces", ptrs)
	}
}
