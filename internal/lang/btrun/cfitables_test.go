package btrun_test

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/usdtkit/usdtkit/internal/bpf/stackcap/stacktest"
	"github.com/usdtkit/usdtkit/internal/lang/btgen"
	"github.com/usdtkit/usdtkit/internal/lang/btlang"
	"github.com/usdtkit/usdtkit/internal/lang/btrun"
	"github.com/usdtkit/usdtkit/internal/testutil"
)

// TestStackKeysCFI: the stack keys of a traced process walk with its
// objects' call frame information by default (btgen.StackKeysCFI, the
// tables the Runner fills before loading): at leaf's entry in chain.c
// built -O2 -fomit-frame-pointer, called by qsort in the C library,
// every stack has cmp, sort_them and main; with StackKeysFP none does
// (the walk stops where frame pointers are missing). No warning: every
// object has a table and the tables have room.
func TestStackKeysCFI(t *testing.T) {
	testutil.RequireBPF(t)
	bin := stacktest.BuildChain(t, "-O2", "-fomit-frame-pointer")
	for _, tc := range []struct {
		name string
		keys btgen.StackKeys
		full bool
	}{{"cfi", btgen.StackKeysCFI, true}, {"fp", btgen.StackKeysFP, false}} {
		t.Run(tc.name, func(t *testing.T) {
			prog, err := btlang.Compile("cfi.bt", []byte("uprobe:"+bin+":leaf { @[ustack] = count(); }"), nil)
			if err != nil {
				t.Fatal(err)
			}
			o := btgen.Options{StackKeys: tc.keys, Sites: sites(t, prog, bin)}
			o.Sites[0][0].Entry = true
			gp, err := btgen.Generate(prog, &o)
			if err != nil {
				t.Fatal(err)
			}
			tr := testutil.StartTracee(t, bin)
			// Its libraries mapped: the tables filled at Start have
			// them.
			tr.WaitReady(t)
			var buf bytes.Buffer
			var warnings []error
			r, err := btrun.Start(gp, &btrun.Options{PIDs: []int{tr.PID()}, Out: &buf, Warn: func(err error) { warnings = append(warnings, err) }})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { r.Close() })
			tr.Do(t, "sort")
			tr.Quit(t)
			if err := r.Run(context.Background()); err != nil {
				t.Fatal(err)
			}
			counts, err := r.StackCounts()
			if err != nil {
				t.Fatal(err)
			}
			if len(counts) == 0 {
				t.Fatalf("no stacks:\n%s", buf.String())
			}
			for _, c := range counts {
				var names []string
				for _, f := range c.Frames {
					names = append(names, f.Symbol)
				}
				full := slices.Contains(names, "cmp") && slices.Contains(names, "sort_them") && slices.Contains(names, "main")
				if full != tc.full {
					t.Errorf("stack %q (%d hits): through cmp, sort_them and main: %v, want %v", names, c.Value, full, tc.full)
				}
			}
			if len(warnings) > 0 {
				t.Errorf("warnings: %v", warnings)
			}
			if tc.full && !strings.Contains(buf.String(), "qsort") {
				t.Errorf("no stack through qsort:\n%s", buf.String())
			}
		})
	}
}
