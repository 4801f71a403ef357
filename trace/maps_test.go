package trace_test

import (
	"context"
	"io"
	"slices"
	"testing"

	"github.com/usdtkit/usdtkit/internal/testutil"
	"github.com/usdtkit/usdtkit/trace"
)

// TestMaps reads a program's maps with Tracer.Maps: kinds, key fields and
// values as the program wrote them; after Close, an error.
func TestMaps(t *testing.T) {
	testutil.RequireBPF(t)
	src := `BEGIN { @c[1, "a"] = count(); @c[1, "a"] = count(); @c[2, "b"] = count();
		@h = hist(5); @h = hist(0); @l = lhist(15, 0, 100, 10); @a = avg(4); @a = avg(6);
		@m = min(-3); @s = "str"; exit(); }`
	prog, err := trace.Compile("m.bt", src, nil)
	if err != nil {
		t.Fatal(err)
	}
	tr, err := trace.Start(prog, &trace.Options{Stdout: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tr.Close() })
	if err := tr.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	maps, err := tr.Maps()
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]trace.Map{}
	for _, m := range maps {
		byName[m.Name] = m
	}
	c := byName["@c"]
	if c.Kind != trace.MapCount || !slices.Equal(c.KeyStrings, []bool{false, true}) || len(c.Entries) != 2 {
		t.Fatalf("@c: %+v", c)
	}
	for _, e := range c.Entries {
		want := map[int64]uint64{1: 2, 2: 1}[e.Key[0].Int]
		if e.Value != want || e.Key[1].Str != map[int64]string{1: "a", 2: "b"}[e.Key[0].Int] {
			t.Errorf("@c entry %+v, want value %d", e, want)
		}
	}
	h := byName["@h"]
	if h.Kind != trace.MapHist || len(h.Entries) != 1 || h.Entries[0].Buckets[trace.HistBucket(5)] != 1 || h.Entries[0].Buckets[trace.HistBucket(0)] != 1 {
		t.Errorf("@h: %+v", h)
	}
	l := byName["@l"]
	if l.Kind != trace.MapLhist || l.Lhist != (trace.LinearRange{Min: 0, Max: 100, Step: 10}) || len(l.Entries) != 1 || l.Entries[0].Buckets[2] != 1 {
		t.Errorf("@l: %+v", l)
	}
	if a := byName["@a"]; a.Kind != trace.MapAvg || len(a.Entries) != 1 || a.Entries[0].Count != 2 || a.Entries[0].Total != 10 {
		t.Errorf("@a: %+v", a)
	}
	if m := byName["@m"]; m.Kind != trace.MapMin || len(m.Entries) != 1 || int64(m.Entries[0].Value) != -3 {
		t.Errorf("@m: %+v", m)
	}
	if s := byName["@s"]; s.Kind != trace.MapString || len(s.Entries) != 1 || s.Entries[0].Str != "str" {
		t.Errorf("@s: %+v", s)
	}
	if err := tr.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := tr.Maps(); err == nil {
		t.Error("Maps after Close: no error")
	}
}
