package stackcap_test

import (
	"slices"
	"testing"

	"github.com/usdtkit/usdtkit/internal/bpf/stackcap/stacktest"
	"github.com/usdtkit/usdtkit/internal/testutil"
)

// TestWalkMatchesKernel: on code with frame pointers, the walk in the
// program finds the frames of the kernel's walk (bpf_get_stack with the
// caller word merged), hit for hit, at a function's entry: through the
// levels, and through deep's frames of over 1 KiB each, which span
// several pages (so the walk reads several chunks). Equal stacks get
// equal ids, other stacks other ids.
func TestWalkMatchesKernel(t *testing.T) {
	exe, tr, kernel, walk := kernelAndWalk(t, "-O0", "-fno-omit-frame-pointer")
	ids := map[string]int64{}
	for _, cmd := range []string{"levels", "deep 12", "levels", "deep 3"} {
		tr.Do(t, cmd)
		k, w := kernel.Next(t), walk.Next(t)
		have := names(t, tr.PID(), exe, w.Frames)
		t.Logf("%s: %v", cmd, have)
		if !slices.Equal(w.Frames, k.Frames) {
			t.Fatalf("%s: walk %x\nkernel %x", cmd, w.Frames, k.Frames)
		}
		var want []string
		switch cmd {
		case "levels":
			want = []string{"leaf", "level3", "level2", "level1", "main"}
		case "deep 12":
			want = append([]string{"leaf"}, slices.Repeat([]string{"deep"}, 13)...)
			want = append(want, "main")
		case "deep 3":
			want = []string{"leaf", "deep", "deep", "deep", "deep", "main"}
		}
		if len(have) < len(want) || !slices.Equal(have[:len(want)], want) {
			t.Fatalf("%s: have %v, want prefix %v", cmd, have, want)
		}
		if id, ok := ids[cmd]; ok && id != w.ID {
			t.Errorf("%s: id %x, before %x", cmd, w.ID, id)
		}
		ids[cmd] = w.ID
	}
	if ids["levels"] == ids["deep 12"] || ids["deep 12"] == ids["deep 3"] || ids["levels"] <= 0 {
		t.Errorf("ids %x", ids)
	}
}

// TestWalkMaxFrames: the walk keeps MaxFrames frames, the innermost,
// and no more: 5 of deep 12's 15; 127 by default of deep 200's 203.
func TestWalkMaxFrames(t *testing.T) {
	testutil.RequireBPF(t)
	exe := stacktest.BuildChain(t, "-O0", "-fno-omit-frame-pointer")
	tr := testutil.StartTracee(t, exe)
	five := stacktest.Attach(t, exe, "leaf", &stacktest.Options{Mode: stacktest.Walk, Entry: true, PID: tr.PID(), MaxFrames: 5})
	all := stacktest.Attach(t, exe, "leaf", &stacktest.Options{Mode: stacktest.Walk, Entry: true, PID: tr.PID()})
	tr.Do(t, "deep 12")
	have := names(t, tr.PID(), exe, five.Next(t).Frames)
	if want := []string{"leaf", "deep", "deep", "deep", "deep"}; !slices.Equal(have, want) {
		t.Errorf("5 frames: have %v, want %v", have, want)
	}
	all.Next(t)
	tr.Do(t, "deep 200")
	five.Next(t)
	have = names(t, tr.PID(), exe, all.Next(t).Frames)
	if len(have) != 127 || have[0] != "leaf" || slices.ContainsFunc(have[1:], func(s string) bool { return s != "deep" }) {
		t.Errorf("deep 200: %d frames %v, want leaf and 126 deep", len(have), have)
	}
}

// TestWalkWithoutFramePointers: in code built without frame pointers
// the walk keeps the function and its caller (the word at the stack
// pointer); the frame pointer register then holds anything, which the
// walk follows as the kernel's does: the frames are the kernel's (with
// the caller word merged), hit for hit.
func TestWalkWithoutFramePointers(t *testing.T) {
	exe, tr, kernel, walk := kernelAndWalk(t, "-O2", "-fomit-frame-pointer")
	// sort last: its first hit is compared, the others left unread.
	for _, cmd := range []string{"levels", "deep 3", "sort"} {
		tr.Do(t, cmd)
		k, w := kernel.Next(t), walk.Next(t)
		// A return address of 0 ends a stack for whoever reads the
		// frames map (LookupStack); the walk stops there.
		if i := slices.Index(k.Frames, 0); i >= 0 {
			k.Frames = k.Frames[:i]
		}
		have := names(t, tr.PID(), exe, w.Frames)
		t.Logf("%s: %v", cmd, have)
		if !slices.Equal(w.Frames, k.Frames) {
			t.Fatalf("%s: walk %x\nkernel %x", cmd, w.Frames, k.Frames)
		}
		want := map[string]string{"levels": "level3", "sort": "cmp", "deep 3": "deep"}[cmd]
		if len(have) < 2 || have[0] != "leaf" || have[1] != want || len(have) > 127 {
			t.Fatalf("%s: have %v, want leaf, %s first", cmd, have, want)
		}
	}
}

// kernelAndWalk builds chain.c with flags, starts it and attaches the
// kernel's walk (with the caller word) and the walk in the program to
// leaf's entry.
func kernelAndWalk(t *testing.T, flags ...string) (exe string, tr *testutil.Tracee, kernel, walk *stacktest.Probe) {
	testutil.RequireBPF(t)
	exe = stacktest.BuildChain(t, flags...)
	tr = testutil.StartTracee(t, exe)
	kernel = stacktest.Attach(t, exe, "leaf", &stacktest.Options{Mode: stacktest.Frames, Entry: true, PID: tr.PID()})
	walk = stacktest.Attach(t, exe, "leaf", &stacktest.Options{Mode: stacktest.Walk, Entry: true, PID: tr.PID()})
	return exe, tr, kernel, walk
}
