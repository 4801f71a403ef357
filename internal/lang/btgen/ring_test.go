package btgen_test

import (
	"os"
	"testing"

	"github.com/usdtkit/usdtkit/internal/lang/btgen"
	"github.com/usdtkit/usdtkit/internal/testutil"
)

// TestRingSize: a program that sends no record (it only counts in maps)
// gets a one-page ring buffer, not 1 MiB of locked memory per tracer;
// one that prints, exits or sends a time record gets the default; a
// given size stays; and the small ring loads.
func TestRingSize(t *testing.T) {
	page := uint32(os.Getpagesize())
	for _, tc := range []struct {
		src  string
		size int
		want uint32
	}{
		{`uprobe:/x:f { @[comm] = count(); @s = sum(arg0); @h = hist(arg1); }`, 0, page},
		{`uprobe:/x:f { printf("%d\n", arg0); }`, 0, 1 << 20},
		{`uprobe:/x:f { @ = count(); exit(); }`, 0, 1 << 20},
		{`uprobe:/x:f { @ = count(); } interval:s:1 { time(); }`, 0, 1 << 20},
		{`uprobe:/x:f { @ = count(); }`, 1 << 16, 1 << 16},
	} {
		prog, opts := compile(t, tc.src)
		opts.RingSize = tc.size
		out, err := btgen.Generate(prog, opts)
		if err != nil {
			t.Fatalf("%s: %v", tc.src, err)
		}
		if n := out.Spec.Maps[btgen.MapEvents].MaxEntries; n != tc.want {
			t.Errorf("%s (RingSize %d): ring of %d bytes, want %d", tc.src, tc.size, n, tc.want)
		}
	}
	testutil.RequireBPF(t)
	prog, opts := compile(t, `uprobe:/x:f { @ = count(); }`)
	out, err := btgen.Generate(prog, opts)
	if err != nil {
		t.Fatal(err)
	}
	mustLoad(t, out.Spec)
}
