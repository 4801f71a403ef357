package symbolize

import (
	"debug/elf"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/usdtkit/usdtkit/dynsdt"
	"github.com/usdtkit/usdtkit/internal/testutil"
)

// TestDynsdtMemfd loads a dynsdt provider into a memfd in this process
// and symbolizes its probe's stub: the frame names the probe and the
// memfd. The stub's address is computed independently, with debug/elf
// on the mapped file (through map_files) and the maps line.
func TestDynsdtMemfd(t *testing.T) {
	testutil.RequireRoot(t)
	p, err := dynsdt.Load(&dynsdt.ProviderSpec{Name: "symtest", Probes: []dynsdt.ProbeSpec{
		{Name: "request__start"}, {Name: "request__done"},
	}}, &dynsdt.Options{Memfd: true})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	obj := strings.TrimSuffix(p.Path(), " (deleted)")

	maps, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		t.Fatal(err)
	}
	want := make(map[string]uint64)
	for _, line := range strings.Split(string(maps), "\n") {
		f := strings.Fields(line)
		if len(f) < 6 || f[5] != obj || !strings.Contains(f[1], "x") {
			continue
		}
		ef, err := elf.Open("/proc/self/map_files/" + f[0])
		if err != nil {
			t.Fatal(err)
		}
		syms, err := ef.DynamicSymbols()
		ef.Close()
		if err != nil {
			t.Fatal(err)
		}
		lo, _, _ := strings.Cut(f[0], "-")
		start, _ := strconv.ParseUint(lo, 16, 64)
		off, _ := strconv.ParseUint(f[2], 16, 64)
		for _, prog := range ef.Progs {
			if prog.Type != elf.PT_LOAD || prog.Flags&elf.PF_X == 0 {
				continue
			}
			for _, s := range syms {
				if (s.Name == "symtest_request__start_fire" || s.Name == "symtest_request__done_fire") && s.Value >= prog.Vaddr && s.Value < prog.Vaddr+prog.Filesz {
					want[s.Name] = start + (s.Value - prog.Vaddr + prog.Off) - off
				}
			}
		}
	}
	if len(want) != 2 {
		t.Fatalf("stubs found in the maps: %v, want 2", want)
	}
	s := newSymbolizer(t, os.Getpid(), nil)
	checkFuncs(t, s, want, obj)
}
