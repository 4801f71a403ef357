package usdtlink_test

import (
	"encoding/binary"
	"strings"
	"testing"

	"github.com/cilium/ebpf"

	"github.com/usdtkit/usdtkit/internal/testutil"
	"github.com/usdtkit/usdtkit/usdtlink"
)

// TestSpecIDs checks the spec ids Attach allocates: written to the map with
// the user's cookie, shared between Attach calls on one map, freed by Close,
// and a full map is an error that leaves nothing allocated.
func TestSpecIDs(t *testing.T) {
	testutil.RequireBPF(t)
	exe := buildC(t, "testdata/operands.c")
	spec, err := usdtlink.LoadCollectionSpec(committedObject)
	if err != nil {
		t.Fatal(err)
	}
	spec.Maps[usdtlink.SpecsMap].MaxEntries = 2
	coll, err := ebpf.NewCollection(spec)
	if err != nil {
		t.Fatal(err)
	}
	defer coll.Close()
	prog, specs := coll.Programs["handle"], coll.Maps[usdtlink.SpecsMap]
	layout, err := usdtlink.LayoutOf(specs.ValueSize())
	if err != nil {
		t.Fatal(err)
	}
	cookieAt := func(id uint32) uint64 {
		b, err := specs.LookupBytes(id)
		if err != nil {
			t.Fatal(err)
		}
		return binary.LittleEndian.Uint64(b[layout.Size()-16:])
	}
	a, err := usdtlink.Attach(prog, specs, exe, "t", "regs", &usdtlink.Options{Cookie: 7})
	if err != nil {
		t.Fatal(err)
	}
	b, err := usdtlink.Attach(prog, specs, exe, "t", "mem", &usdtlink.Options{Cookie: 8})
	if err != nil {
		t.Fatal(err)
	}
	if cookieAt(0) != 7 || cookieAt(1) != 8 {
		t.Errorf("cookies %d %d, want 7 8", cookieAt(0), cookieAt(1))
	}
	if _, err := usdtlink.Attach(prog, specs, exe, "t", "consts", nil); err == nil || !strings.Contains(err.Error(), "full") {
		t.Errorf("third spec in a 2-entry map: %v", err)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	c, err := usdtlink.Attach(prog, specs, exe, "t", "consts", &usdtlink.Options{Cookie: 9})
	if err != nil {
		t.Fatalf("after Close: %v", err)
	}
	if cookieAt(0) != 9 {
		t.Errorf("id 0 has cookie %d after reuse, want 9", cookieAt(0))
	}
	for _, l := range []*usdtlink.Link{b, c} {
		if err := l.Close(); err != nil {
			t.Error(err)
		}
	}
}
