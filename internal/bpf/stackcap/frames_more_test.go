package stackcap_test

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/usdtkit/usdtkit/internal/bpf/stackcap/stacktest"
	"github.com/usdtkit/usdtkit/internal/testutil"
)

// names names the frames of a record: functions of exe, "[object]"
// elsewhere.
func names(t *testing.T, pid int, exe string, pcs []uint64) []string {
	t.Helper()
	n := stacktest.NewNamer(t, pid)
	var out []string
	for _, pc := range pcs {
		out = append(out, n.Name(t, pc, exe))
	}
	return out
}

// TestStackIDAtEntry keys the same stack by a stack map id: the map's
// frames with the caller word merged are leaf, level3, level2, level1,
// main.
func TestStackIDAtEntry(t *testing.T) {
	testutil.RequireBPF(t)
	exe := stacktest.BuildChain(t, "-O0", "-fno-omit-frame-pointer")
	tr := testutil.StartTracee(t, exe)
	p := stacktest.Attach(t, exe, "leaf", &stacktest.Options{Mode: stacktest.StackID, Entry: true, PID: tr.PID()})
	tr.Do(t, "levels")
	have := names(t, tr.PID(), exe, p.Next(t).Frames)
	want := []string{"leaf", "level3", "level2", "level1", "main"}
	if len(have) < len(want) || !slices.Equal(have[:len(want)], want) {
		t.Fatalf("have %v, want prefix %v", have, want)
	}
}

// TestFramesGo captures the frame-pointer stack of a Go program at the
// entry of a frameless leaf function, by the kernel's walk with the
// caller word and by the walk in the program: the whole chain to
// runtime.goexit.
func TestFramesGo(t *testing.T) {
	testutil.RequireBPF(t)
	exe := testutil.BuildGo(t, "testdata/gochain")
	tr := testutil.StartTracee(t, exe)
	for _, mode := range []stacktest.Mode{stacktest.Frames, stacktest.Walk} {
		p := stacktest.Attach(t, exe, "main.leaf", &stacktest.Options{Mode: mode, Entry: true, PID: tr.PID()})
		tr.Do(t, "levels")
		have := names(t, tr.PID(), exe, p.Next(t).Frames)
		want := []string{"main.leaf", "main.level3", "main.level2", "main.level1", "main.main", "runtime.main", "runtime.goexit.abi0"}
		if !slices.Equal(have, want) {
			t.Fatalf("mode %d: have %v, want %v", mode, have, want)
		}
	}
}

// TestFramesAgainstBpftrace compares the frame-pointer capture with
// bpftrace's `@[ustack] = count()` on the same hit of leaf: the frames
// through main are the same, but for level3, which bpftrace 0.17 misses at
// a function's entry (unless its kernel adds it).
func TestFramesAgainstBpftrace(t *testing.T) {
	testutil.RequireBPF(t)
	exe := stacktest.BuildChain(t, "-O0", "-fno-omit-frame-pointer")
	tr := testutil.StartTracee(t, exe)
	p := stacktest.Attach(t, exe, "leaf", &stacktest.Options{Mode: stacktest.Frames, Entry: true, PID: tr.PID()})

	script := fmt.Sprintf(`BEGIN { printf("ready\n"); } uprobe:%s:leaf { @[ustack] = count(); exit(); }`, exe)
	btr := testutil.StartBpftrace(t, "-p", strconv.Itoa(tr.PID()), "-e", script)
	sc := btr.Out
	done := make(chan []string, 1)
	go func() {
		var frames []string
		in := false
		for sc.Scan() {
			l := strings.TrimSpace(sc.Text())
			switch {
			case l == "@[":
				in = true
			case strings.HasPrefix(l, "]:"):
				in = false
			case in && l != "":
				name, _, _ := strings.Cut(l, "+")
				frames = append(frames, name)
			}
		}
		done <- frames
	}()
	tr.Do(t, "levels")
	ours := names(t, tr.PID(), exe, p.Next(t).Frames)
	var theirs []string
	select {
	case theirs = <-done:
	case <-time.After(20 * time.Second):
		t.Fatalf("bpftrace did not exit: %s", btr.Stderr())
	}
	cut := func(s []string) []string {
		if i := slices.Index(s, "main"); i >= 0 {
			return s[:i+1]
		}
		return s
	}
	ours, theirs = cut(ours), cut(theirs)
	t.Logf("ours %v, bpftrace %v", ours, theirs)
	without := slices.DeleteFunc(slices.Clone(ours), func(s string) bool { return s == "level3" })
	if !slices.Equal(theirs, ours) && !slices.Equal(theirs, without) {
		t.Fatalf("bpftrace %v, ours %v (or without level3)", theirs, ours)
	}
	if !slices.Contains(ours, "level3") {
		t.Fatalf("ours %v misses level3", ours)
	}
}
