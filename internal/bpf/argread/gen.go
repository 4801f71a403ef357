package argread

import (
	"fmt"
	"math"

	"github.com/cilium/ebpf/asm"
)

// Registers the emitted code keeps across helper calls (R6..R9 survive
// calls; R0..R5 do not).
const (
	rCtx    = asm.R6 // the context: struct pt_regs
	rRec    = asm.R7 // the argument slots
	rFaults = asm.R9 // fault bits while fetching
)

// gen emits code.
type gen struct {
	s       *settings
	insns   asm.Instructions
	pending string            // label for the next instruction
	alias   map[string]string // label -> label of the same instruction
}

func (g *gen) emit(ins ...asm.Instruction) {
	for _, in := range ins {
		if g.pending != "" {
			if sym := in.Symbol(); sym != "" {
				g.alias[g.pending] = sym
			} else {
				in = in.WithSymbol(g.pending)
			}
			g.pending = ""
		}
		g.insns = append(g.insns, in)
	}
}

// label names the next instruction emitted.
func (g *gen) label(name string) {
	if g.pending != "" {
		g.alias[name] = g.pending
		return
	}
	g.pending = name
}

// resolve rewrites references to aliased labels.
func (g *gen) resolve(insns asm.Instructions) (asm.Instructions, error) {
	if g.pending != "" {
		return nil, fmt.Errorf("internal error: label %s at the end of the code", g.pending)
	}
	for i := range insns {
		ref := insns[i].Reference()
		if ref == "" {
			continue
		}
		for {
			a, ok := g.alias[ref]
			if !ok {
				break
			}
			ref = a
		}
		insns[i] = insns[i].WithReference(ref)
	}
	return insns, nil
}

// fault sets bit i of rFaults when the helper result in R0 is negative,
// without a branch: R0 >> 63 is 1 exactly for negative results.
func (g *gen) fault(i int) {
	g.emit(
		asm.RSh.Imm(asm.R0, 63),
		asm.LSh.Imm(asm.R0, int32(i)),
		asm.Or.Reg(rFaults, asm.R0),
	)
}

// loadReg loads register r's alias into dst, zero-extended.
func (g *gen) loadReg(dst asm.Register, r Reg) {
	g.emit(asm.LoadMem(dst, rCtx, r.Off, asm.DWord))
	if r.Shift != 0 {
		g.emit(asm.RSh.Imm(dst, int32(r.Shift)))
	}
	g.extend(dst, int(r.Width), false)
}

// extend sign- or zero-extends the low n bytes of dst to 64 bits.
func (g *gen) extend(dst asm.Register, n int, signed bool) {
	switch {
	case n >= 8:
	case signed:
		g.emit(asm.LSh.Imm(dst, int32(64-8*n)), asm.ArSh.Imm(dst, int32(64-8*n)))
	case n == 4:
		g.emit(asm.Mov.Reg32(dst, dst))
	default:
		g.emit(asm.And.Imm(dst, int32(1)<<(8*n)-1))
	}
}

// fetchAt emits the code that stores argument f, extended to 64 bits, at
// rRec+slot, setting bit i of rFaults on a failed read; prefix makes its
// labels unique.
func (g *gen) fetchAt(prefix string, slot int16, i int, f *Fetch) {
	size := f.size()
	switch f.Kind {
	case FetchConst:
		if f.Value >= math.MinInt32 && f.Value <= math.MaxInt32 {
			// BPF_ST with BPF_DW sign-extends the 32-bit immediate.
			g.emit(storeImm64(rRec, slot, int32(f.Value)))
		} else {
			g.emit(asm.LoadImm(asm.R0, f.Value, asm.DWord), asm.StoreMem(rRec, slot, asm.R0, asm.DWord))
		}
	case FetchReg:
		g.emit(asm.LoadMem(asm.R0, rCtx, f.Reg.Off, asm.DWord))
		if f.Reg.Shift != 0 {
			g.emit(asm.RSh.Imm(asm.R0, int32(f.Reg.Shift)))
		}
		g.extend(asm.R0, min(size, int(f.Reg.Width)), f.Signed)
		g.emit(asm.StoreMem(rRec, slot, asm.R0, asm.DWord))
	case FetchMem:
		g.address(f)
		fault := prefix + "_fault"
		done := prefix + "_done"
		for k := range int(f.Derefs) {
			// Each pointer is read into the argument's own slot, which
			// the value overwrites at the end.
			g.emit(
				asm.Mov.Reg(asm.R1, rRec),
				asm.Add.Imm(asm.R1, int32(slot)),
				asm.Mov.Imm(asm.R2, 8),
				asm.FnProbeReadUser.Call(),
				asm.JNE.Imm(asm.R0, 0, fault),
				asm.LoadMem(asm.R3, rRec, slot, asm.DWord),
				asm.JEq.Imm(asm.R3, 0, fault),
			)
			if f.Path[k] != 0 {
				g.emit(asm.Add.Imm(asm.R3, f.Path[k]))
			}
		}
		g.emit(
			asm.Mov.Reg(asm.R1, rRec),
			asm.Add.Imm(asm.R1, int32(slot)),
			asm.Mov.Imm(asm.R2, int32(size)),
			asm.FnProbeReadUser.Call(),
		)
		g.fault(i)
		if size < 8 {
			// The helper wrote size bytes (zeros on a fault); the rest of
			// the slot holds an older record.
			g.emit(asm.LoadMem(asm.R0, rRec, slot, sizeOf(size)))
			g.extend(asm.R0, size, f.Signed)
			g.emit(asm.StoreMem(rRec, slot, asm.R0, asm.DWord))
		}
		if f.Derefs > 0 {
			// The two paths meet at done with only rFaults and the slot
			// differing, so the verifier prunes the second: chains do
			// not multiply the paths of a block.
			g.emit(asm.Ja.Label(done))
			g.label(fault)
			g.emit(
				asm.Or.Imm(rFaults, int32(1)<<i),
				storeImm64(rRec, slot, 0),
			)
			g.label(done)
		}
	}
}

// storeImm64 emits *(u64 *)(dst + off) = v sign-extended: BPF_ST|BPF_MEM|
// BPF_DW, which the kernel accepts but asm.StoreImm refuses to build.
func storeImm64(dst asm.Register, off int16, v int32) asm.Instruction {
	return asm.Instruction{OpCode: asm.StoreImmOp(asm.DWord), Dst: dst, Offset: off, Constant: int64(v)}
}

func sizeOf(n int) asm.Size {
	switch n {
	case 1:
		return asm.Byte
	case 2:
		return asm.Half
	case 4:
		return asm.Word
	}
	return asm.DWord
}

// address leaves the address of a FetchMem in R3.
func (g *gen) address(f *Fetch) {
	haveBase := true
	switch {
	case f.HasBase:
		g.loadReg(asm.R3, f.Reg)
	case f.IPRel:
		g.emit(asm.LoadMem(asm.R3, rCtx, g.s.ipOff, asm.DWord))
	default:
		haveBase = false
	}
	if f.HasIndex {
		dst := asm.R1
		if !haveBase {
			dst = asm.R3
		}
		g.loadReg(dst, f.Index)
		if sh := scaleShift(f.Scale); sh > 0 {
			g.emit(asm.LSh.Imm(dst, sh))
		}
		if haveBase {
			g.emit(asm.Add.Reg(asm.R3, asm.R1))
		}
		haveBase = true
	}
	switch {
	case !haveBase:
		g.emit(asm.LoadImm(asm.R3, f.Offset, asm.DWord))
	case f.Offset == 0:
	case f.Offset >= math.MinInt32 && f.Offset <= math.MaxInt32:
		g.emit(asm.Add.Imm(asm.R3, int32(f.Offset)))
	default:
		g.emit(asm.LoadImm(asm.R1, f.Offset, asm.DWord), asm.Add.Reg(asm.R3, asm.R1))
	}
}

func scaleShift(scale uint8) int32 {
	switch scale {
	case 2:
		return 1
	case 4:
		return 2
	case 8:
		return 3
	}
	return 0
}
