package bpfgen

import (
	"debug/elf"
	"math/bits"
	"os"
	"slices"
	"testing"

	"github.com/cilium/ebpf/asm"
)

// runDispatch interprets the dispatch tree of a generated program for one
// cookie: it returns the probe id the leaf stores, the label the leaf jumps
// to and the number of conditional jumps evaluated.
func runDispatch(t *testing.T, insns asm.Instructions, cookie uint64) (probe uint32, target string, jumps int) {
	t.Helper()
	at := map[string]int{}
	start := -1
	for i, ins := range insns {
		if sym := ins.Symbol(); sym != "" {
			at[sym] = i
		}
		if start < 0 && ins.OpCode.JumpOp() == asm.JGE && ins.Dst == rCookie && ins.Reference() == lExitHead {
			start = i + 1
		}
	}
	if start < 0 {
		t.Fatal("no cookie bound check")
	}
	// Then the record is set up: the tree starts after rRec is set.
	setsRec := func(ins asm.Instruction) bool { return ins.OpCode.Class().IsALU() && ins.Dst == rRec }
	for start < len(insns) && !setsRec(insns[start]) {
		start++
	}
	for start < len(insns) && setsRec(insns[start]) {
		start++
	}
	stored := false
	for pc := start; pc < len(insns); {
		ins := insns[pc]
		switch {
		case ins.OpCode.Class().IsJump() && ins.OpCode.JumpOp() == asm.JGE:
			if ins.Dst != rCookie || ins.OpCode.Source() != asm.ImmSource {
				t.Fatalf("unexpected %v", ins)
			}
			jumps++
			if cookie >= uint64(ins.Constant) {
				pc = at[ins.Reference()]
				continue
			}
		case ins.OpCode.Class().IsJump() && ins.OpCode.JumpOp() == asm.Ja:
			if !stored {
				t.Fatalf("leaf jumps to %s without storing the probe", ins.Reference())
			}
			return probe, ins.Reference(), jumps
		case ins.OpCode.Class() == asm.StClass && ins.Dst == rRec && ins.Offset == offProbe:
			probe, stored = uint32(ins.Constant), true
		default:
			t.Fatalf("unexpected %v in the dispatch tree", ins)
		}
		pc++
	}
	t.Fatal("ran off the program")
	return
}

func TestDispatchTree(t *testing.T) {
	args := sampleArgs(t)
	for _, n := range []int{1, 2, 3, 7, 64, 531, 1000} {
		sites := make([]Site, n)
		for i := range sites {
			// Runs of equal sites merge into one leaf; every fifth site
			// repeats its predecessor.
			j := i - i%5/4
			sites[i] = Site{Probe: uint32(j / 3), Args: args[j%len(args) : j%len(args)+1]}
		}
		for _, mode := range []Mode{ModeEvents, ModeCount} {
			s, err := (&Config{Machine: elf.EM_X86_64, Sites: sites, Mode: mode}).check(os.Getpagesize())
			if err != nil {
				t.Fatal(err)
			}
			for _, long := range []bool{false, true} {
				g := newGen(s, long)
				insns, err := g.resolve(g.program())
				if err != nil {
					t.Fatal(err)
				}
				leaves := len(g.intervals())
				maxJumps := bits.Len(uint(leaves - 1)) // ceil(log2(leaves))
				for c := range n {
					probe, target, jumps := runDispatch(t, insns, uint64(c))
					if probe != sites[c].Probe || target != blockLabel(g.siteBlk[c]) {
						t.Errorf("%v n=%d cookie %d: probe %d block %s, want %d %s", mode, n, c, probe, target, sites[c].Probe, blockLabel(g.siteBlk[c]))
					}
					if jumps > maxJumps {
						t.Errorf("%v n=%d cookie %d: %d jumps for %d leaves, want at most %d", mode, n, c, jumps, leaves, maxJumps)
					}
				}
			}
		}
	}
}

func TestBlocksShared(t *testing.T) {
	args := sampleArgs(t)
	sites := []Site{
		{Probe: 1, Args: args[:2]},
		{Probe: 2, Args: args[:2]},
		{Probe: 1, Args: args[:2], Strings: 1},
		{Probe: 3, Args: args[1:3]},
		{Probe: 1, Args: args[:2]},
	}
	s, err := (&Config{Machine: elf.EM_X86_64, Sites: sites}).check(os.Getpagesize())
	if err != nil {
		t.Fatal(err)
	}
	g := newGen(s, false)
	if have, want := g.siteBlk, []int{0, 0, 1, 2, 0}; !slices.Equal(have, want) {
		t.Errorf("blocks %v, want %v", have, want)
	}
	// Outside ModeEvents only the arguments the tail reads are fetched.
	s, err = (&Config{Machine: elf.EM_X86_64, Sites: sites, Mode: ModeCount}).check(os.Getpagesize())
	if err != nil {
		t.Fatal(err)
	}
	if g := newGen(s, false); len(g.blocks) != 1 {
		t.Errorf("ModeCount without filters: %d blocks, want 1", len(g.blocks))
	}
}
