package goabi

import (
	"debug/dwarf"
	"debug/elf"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/go-delve/delve/pkg/dwarf/op"
	"github.com/go-delve/delve/pkg/proc"
)

// dwarfRegs maps ABI registers to DWARF register numbers: x86-64 psABI
// ("DWARF Register Number Mapping": 0 rax, 1 rdx, 2 rcx, 3 rbx, 4 rsi, 5 rdi,
// 8-15 r8-r15, 17-32 xmm0-15) and AArch64 DWARF (0-30 x0-x30, 64-95 v0-v31).
func dwarfReg(m elf.Machine, r Reg) uint64 {
	if m == elf.EM_X86_64 {
		if r.Float {
			return 17 + uint64(r.N)
		}
		return [...]uint64{0, 3, 2, 5, 4, 8, 9, 10, 11}[r.N]
	}
	if r.Float {
		return 64 + uint64(r.N)
	}
	return uint64(r.N)
}

// cfaToArgs is the offset of the stack argument area from the DWARF CFA Go
// emits: on x86-64 the CFA is SP before the CALL, where the arguments begin;
// on arm64 it is SP at entry, 8 below them.
var cfaToArgs = map[elf.Machine]int64{elf.EM_X86_64: 0, elf.EM_AARCH64: 8}

// TestDWARFAgreement builds testdata/funcs.go for amd64 and arm64, optimized
// and with -N -l, and checks that Assign, given the parameter types
// converted by FromDWARF, puts every parameter of every main.F* function
// where the compiler's DWARF says it is at the function's entry: the same
// registers in the same order with the same sizes (and offsets, where the
// DWARF pieces include padding), or the same stack offset. Results have no
// location at entry; TestAssign covers them.
func TestDWARFAgreement(t *testing.T) {
	for _, arch := range []struct {
		goarch string
		m      elf.Machine
	}{{"amd64", elf.EM_X86_64}, {"arm64", elf.EM_AARCH64}} {
		for _, opt := range []struct{ name, gcflags string }{{"optimized", ""}, {"noopt", "-N -l"}} {
			t.Run(arch.goarch+"/"+opt.name, func(t *testing.T) {
				testDWARFAgreement(t, arch.goarch, arch.m, opt.gcflags)
			})
		}
	}
}

func testDWARFAgreement(t *testing.T, goarch string, m elf.Machine, gcflags string) {
	bin := filepath.Join(t.TempDir(), "funcs")
	cmd := exec.Command("go", "build", "-gcflags="+gcflags, "-o", bin, "funcs.go")
	cmd.Dir = "testdata"
	cmd.Env = append(os.Environ(), "GO111MODULE=off", "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+goarch, "GOFLAGS=")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	bi := proc.NewBinaryInfo("linux", goarch, false)
	if err := bi.LoadBinaryInfo(bin, 0, nil); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { bi.Close() })
	var names []string
	for _, fn := range bi.Functions {
		if fn.PackageName() == "main" && strings.HasPrefix(fn.BaseName(), "F") {
			names = append(names, fn.Name)
		}
	}
	slices.Sort(names)
	if len(names) != 11 {
		t.Fatalf("found functions %q, want the 11 of testdata/funcs.go", names)
	}
	checked, offsets := 0, 0
	for _, name := range names {
		c, o := checkFunc(t, bi, m, name)
		checked += c
		offsets += o
	}
	// Some stack-assigned parameters have no DWARF location; the others
	// must all have been compared.
	t.Logf("compared %d parameters of %d functions, %d with piece offsets", checked, len(names), offsets)
	if checked < 50 {
		t.Errorf("compared %d parameters, want at least 50", checked)
	}
}

type dwarfParam struct {
	name   string
	typ    *Type
	addr   int64      // offset from the CFA when on the stack
	pieces []op.Piece // register pieces
	err    error      // no location
}

// checkFunc compares one function and returns how many parameters it
// compared, and for how many of them the DWARF pieces gave offsets.
func checkFunc(t *testing.T, bi *proc.BinaryInfo, m elf.Machine, name string) (int, int) {
	t.Helper()
	fns, err := bi.FindFunction(name)
	if err != nil || len(fns) != 1 {
		t.Fatalf("%s: %v, %d functions", name, err, len(fns))
	}
	fn := fns[0]
	img := bi.Images[0]
	rdr := img.DwarfReader()
	if _, err := rdr.SeekPC(fn.Entry); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	const cfa = 1 << 20
	var params []dwarfParam
	found := false
	for {
		e, err := rdr.Next()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if e == nil || (found && e.Tag == 0) {
			break
		}
		if !found {
			lowpc, _ := e.Val(dwarf.AttrLowpc).(uint64)
			found = e.Tag == dwarf.TagSubprogram && lowpc == fn.Entry
			continue
		}
		if e.Children {
			rdr.SkipChildren()
		}
		if isResult, _ := e.Val(dwarf.AttrVarParam).(bool); e.Tag != dwarf.TagFormalParameter || isResult {
			continue
		}
		off, ok := e.Val(dwarf.AttrType).(dwarf.Offset)
		if !ok {
			t.Fatalf("%s: parameter %v without type", name, e.Val(dwarf.AttrName))
		}
		dt, err := img.Type(off)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		typ, err := FromDWARF(dt)
		if err != nil {
			t.Fatalf("%s: FromDWARF(%v): %v", name, dt, err)
		}
		p := dwarfParam{name: fmt.Sprint(e.Val(dwarf.AttrName)), typ: typ}
		p.addr, p.pieces, _, p.err = bi.Location(e, dwarf.AttrLocation, fn.Entry, op.DwarfRegisters{CFA: cfa, FrameBase: cfa}, nil)
		params = append(params, p)
	}
	if !found || len(params) == 0 {
		t.Fatalf("%s: no subprogram with parameters at %#x", name, fn.Entry)
	}
	types := make([]*Type, len(params))
	for i, p := range params {
		types[i] = p.typ
	}
	f, err := Assign(m, types, nil)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	checked, offsetsChecked := 0, 0
	for i, p := range params {
		a := f.Params[i]
		what := fmt.Sprintf("%s %s %s", name, p.name, p.typ)
		switch {
		case p.err != nil:
			// Only stack-assigned parameters may lack a location: a
			// register parameter lives nowhere else at entry.
			if !a.Stack {
				t.Errorf("%s: no DWARF location (%v), want %s", what, p.err, format(m, a))
			}
			t.Logf("%s: no DWARF location, %s", what, format(m, a))
			continue
		case len(p.pieces) == 0 || p.pieces[0].Kind == op.AddrPiece:
			// A stack parameter: one address, or pieces at consecutive
			// addresses when the compiler describes its parts.
			addr := p.addr
			if len(p.pieces) > 0 {
				addr = int64(p.pieces[0].Val)
				next := addr
				for _, dp := range p.pieces {
					if dp.Kind != op.AddrPiece || int64(dp.Val) != next {
						t.Errorf("%s: DWARF pieces %+v are not one stack slot", what, p.pieces)
					}
					next += int64(dp.Size)
				}
			}
			if have, want := addr-cfa-cfaToArgs[m], a.StackOffset; !a.Stack || have != want {
				t.Errorf("%s: DWARF says stack+%d, have %s", what, have, format(m, a))
			}
		default:
			// Register pieces in order, by DWARF number and size. Empty
			// pieces (padding) are skipped, but when the pieces cover the
			// whole value (the -N -l build writes the padding, optimized
			// builds do not) each register piece's offset is compared too.
			var have, want []string
			var offs []int64
			total := int64(0)
			for _, dp := range p.pieces {
				size := int64(dp.Size)
				if size == 0 && len(p.pieces) == 1 {
					size = p.typ.Size
				}
				if dp.Kind != op.ImmPiece || dp.Val != 0 || len(dp.Bytes) != 0 {
					have = append(have, fmt.Sprintf("kind%d:%d/%d", dp.Kind, dp.Val, size))
					offs = append(offs, total)
				}
				total += size
			}
			for _, ap := range a.Pieces {
				want = append(want, fmt.Sprintf("kind%d:%d/%d", op.RegPiece, dwarfReg(m, ap.Reg), ap.Size))
			}
			if !slices.Equal(have, want) {
				t.Errorf("%s: DWARF pieces %q, Assign %q (%s)", what, have, want, format(m, a))
			} else if total == p.typ.Size {
				for i, ap := range a.Pieces {
					if ap.Offset != offs[i] {
						t.Errorf("%s: piece %s at offset %d, DWARF says %d", what, ap.Path, ap.Offset, offs[i])
					}
				}
				offsetsChecked++
			}
		}
		checked++
	}
	return checked, offsetsChecked
}
