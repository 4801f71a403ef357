package usdtlink_test

import (
	"bufio"
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/usdtkit/usdtkit/sdt"
	"github.com/usdtkit/usdtkit/usdtlink"
)

// symbols of the encoding tests: a site at 0x1000 and two data symbols.
const site = 0x1000

func symbol(name string) (uint64, error) {
	switch name {
	case "gs":
		return 0x4000, nil
	case "garr":
		return 0x5000, nil
	}
	return 0, fmt.Errorf("no symbol %s", name)
}

type encodeCase struct {
	spec string
	want usdtlink.ArgSpec
	// base is what LayoutBase gives when it differs: refused when true.
	refusedInBase bool
	refused       bool
}

// pt_regs offsets on x86-64 (arch/x86/include/asm/ptrace.h).
const (
	rbp = 32
	rbx = 40
	r8  = 72
	rax = 80
	rcx = 88
	rdx = 96
	rsi = 104
	rdi = 112
	rip = 128
	rsp = 152
)

var x86Cases = []encodeCase{
	{spec: "8@%rax", want: usdtlink.ArgSpec{Type: usdtlink.ArgReg, RegOff: rax}},
	{spec: "-4@%ecx", want: usdtlink.ArgSpec{Type: usdtlink.ArgReg, RegOff: rcx, Signed: true, BitShift: 32}},
	{spec: "2@%dx", want: usdtlink.ArgSpec{Type: usdtlink.ArgReg, RegOff: rdx, BitShift: 48}},
	{spec: "-1@%sil", want: usdtlink.ArgSpec{Type: usdtlink.ArgReg, RegOff: rsi, Signed: true, BitShift: 56}},
	{spec: "8@%r8", want: usdtlink.ArgSpec{Type: usdtlink.ArgReg, RegOff: r8}},
	// High bytes read from one byte into the register's slot.
	{spec: "-1@%ah", want: usdtlink.ArgSpec{Type: usdtlink.ArgReg, RegOff: rax + 1, Signed: true, BitShift: 56}},
	{spec: "1@%bh", want: usdtlink.ArgSpec{Type: usdtlink.ArgReg, RegOff: rbx + 1, BitShift: 56}},
	{spec: "-4@-20(%rbp)", want: usdtlink.ArgSpec{Type: usdtlink.ArgRegDeref, RegOff: rbp, ValOff: ^uint64(19), Signed: true, BitShift: 32}},
	{spec: "8@(%rsp)", want: usdtlink.ArgSpec{Type: usdtlink.ArgRegDeref, RegOff: rsp}},
	{spec: "-8@8(%rdx,%rax,8)", want: usdtlink.ArgSpec{Type: usdtlink.ArgSIB, RegOff: rdx, IdxRegOff: rax, ScaleShift: 3, ValOff: 8, Signed: true}, refusedInBase: true},
	{spec: "4@(%rbp,%rax)", want: usdtlink.ArgSpec{Type: usdtlink.ArgSIB, RegOff: rbp, IdxRegOff: rax, BitShift: 32}, refusedInBase: true},
	// Symbols: relative to the instruction pointer, which is the site.
	{spec: "-8@24+gs(%rip)", want: usdtlink.ArgSpec{Type: usdtlink.ArgRegDeref, RegOff: rip, ValOff: 0x4000 + 24 - site, Signed: true}},
	{spec: "1@gs-8(%rip)", want: usdtlink.ArgSpec{Type: usdtlink.ArgRegDeref, RegOff: rip, ValOff: 0x4000 - 8 - site, BitShift: 56}},
	{spec: "-4@garr(,%rdi,4)", want: usdtlink.ArgSpec{Type: usdtlink.ArgSIB, RegOff: rip, IdxRegOff: rdi, ScaleShift: 2, ValOff: 0x5000 - site, Signed: true, BitShift: 32}, refusedInBase: true},
	{spec: "4@$42", want: usdtlink.ArgSpec{Type: usdtlink.ArgConst, ValOff: 42, BitShift: 32}},
	{spec: "1@$-56", want: usdtlink.ArgSpec{Type: usdtlink.ArgConst, ValOff: 200, BitShift: 56}},
	{spec: "-8@$-1", want: usdtlink.ArgSpec{Type: usdtlink.ArgConst, ValOff: ^uint64(0), Signed: true}},
	// The old size-less format reads a machine word.
	{spec: "%rdi", want: usdtlink.ArgSpec{Type: usdtlink.ArgReg, RegOff: rdi}},
	{spec: "16f@-24(%rsp)", refused: true},
	{spec: "8f@%xmm0", refused: true},
	{spec: "-8@-8", refused: true},
	{spec: "-4@nosuch(%rip)", refused: true},
	{spec: "8@16(%eax)", refused: true},
	{spec: "-4@%fs:tv@tpoff", refused: true},
}

// arm64 user_pt_regs: regs[31], sp, pc.
const (
	x0   = 0
	x1   = 8
	x2   = 16
	x4   = 32
	x29  = 232
	sp64 = 248
	pc64 = 256
)

var arm64Cases = []encodeCase{
	{spec: "8@x0", want: usdtlink.ArgSpec{Type: usdtlink.ArgReg, RegOff: x0}},
	{spec: "-4@w1", want: usdtlink.ArgSpec{Type: usdtlink.ArgReg, RegOff: x1, Signed: true, BitShift: 32}},
	{spec: "8@sp", want: usdtlink.ArgSpec{Type: usdtlink.ArgReg, RegOff: sp64}},
	{spec: "-4@[sp, 96]", want: usdtlink.ArgSpec{Type: usdtlink.ArgRegDeref, RegOff: sp64, ValOff: 96, Signed: true, BitShift: 32}},
	{spec: "-4@[x0, -8]", want: usdtlink.ArgSpec{Type: usdtlink.ArgRegDeref, RegOff: x0, ValOff: ^uint64(7), Signed: true, BitShift: 32}},
	{spec: "8@[x29, 16]", want: usdtlink.ArgSpec{Type: usdtlink.ArgRegDeref, RegOff: x29, ValOff: 16}},
	{spec: "-4@[x1, x2]", want: usdtlink.ArgSpec{Type: usdtlink.ArgSIB, RegOff: x1, IdxRegOff: x2, Signed: true, BitShift: 32}, refusedInBase: true},
	{spec: "8@[x3, x4, lsl 3]", want: usdtlink.ArgSpec{Type: usdtlink.ArgSIB, RegOff: 24, IdxRegOff: x4, ScaleShift: 3}, refusedInBase: true},
	{spec: "4@5", want: usdtlink.ArgSpec{Type: usdtlink.ArgConst, ValOff: 5, BitShift: 32}},
	{spec: "-4@-1", want: usdtlink.ArgSpec{Type: usdtlink.ArgConst, ValOff: ^uint64(0), Signed: true, BitShift: 32}},
	{spec: "8@xzr", want: usdtlink.ArgSpec{Type: usdtlink.ArgConst}},
	{spec: "-8@v0", refused: true},
	{spec: "16f@[sp, 32]", refused: true},
}

func testEncode(t *testing.T, m elf.Machine, cases []encodeCase) {
	for _, layout := range []usdtlink.Layout{usdtlink.LayoutBase, usdtlink.LayoutSIB} {
		for _, c := range cases {
			a, _ := sdt.ParseArg(m, c.spec)
			got, err := usdtlink.EncodeArg(a, site, symbol, layout)
			if c.refused || (c.refusedInBase && layout == usdtlink.LayoutBase) {
				var ae *sdt.ArgError
				if err == nil || !errors.As(err, &ae) || ae.Spec != c.spec {
					t.Errorf("%v %q: %+v, %v; want an *sdt.ArgError naming the spec", layout, c.spec, got, err)
				}
				if c.refusedInBase && !errors.Is(err, usdtlink.ErrUnsupported) {
					t.Errorf("%v %q: %v does not wrap ErrUnsupported", layout, c.spec, err)
				}
				continue
			}
			if err != nil || got != c.want {
				t.Errorf("%v %q:\n got %+v, %v\nwant %+v", layout, c.spec, got, err, c.want)
			}
		}
	}
}

func TestEncodeArgX86(t *testing.T) { testEncode(t, elf.EM_X86_64, x86Cases) }

// TestEncodeArgAArch64 encodes arm64 specs: the offsets are those of arm64's
// user_pt_regs, whatever the host.
func TestEncodeArgAArch64(t *testing.T) { testEncode(t, elf.EM_AARCH64, arm64Cases) }

// TestMarshalLayout checks the byte layout of both versions of struct
// __bpf_usdt_spec (usdt.bpf.h of libbpf 1.1 and 1.7; the SIB one as clang
// and gcc lay out its bit-fields).
func TestMarshalLayout(t *testing.T) {
	s := usdtlink.Spec{Cookie: 0x1122334455667788, Args: []usdtlink.ArgSpec{
		{Type: usdtlink.ArgRegDeref, ValOff: 0xfffffffffffffff8, RegOff: 0x98, Signed: true, BitShift: 32},
		{Type: usdtlink.ArgSIB, ValOff: 8, RegOff: 0x60, IdxRegOff: 0x50, ScaleShift: 3, BitShift: 56},
	}}
	le := binary.LittleEndian
	b, err := s.MarshalLayout(usdtlink.LayoutSIB)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) != 304 || le.Uint64(b) != s.Args[0].ValOff || b[8] != 2 || le.Uint16(b[14:]) != 0x98 || b[16] != 1 || b[17] != 32 ||
		b[24+8] != 3 || le.Uint16(b[24+10:]) != 0x50|3<<12 || le.Uint16(b[24+14:]) != 0x60 || b[24+17] != 56 ||
		le.Uint64(b[288:]) != s.Cookie || le.Uint16(b[296:]) != 2 {
		t.Errorf("LayoutSIB: % x", b)
	}
	if _, err := s.MarshalLayout(usdtlink.LayoutBase); !errors.Is(err, usdtlink.ErrUnsupported) {
		t.Errorf("LayoutBase with a SIB argument: %v", err)
	}
	s.Args = s.Args[:1]
	b, err = s.MarshalLayout(usdtlink.LayoutBase)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) != 208 || le.Uint64(b) != s.Args[0].ValOff || le.Uint32(b[8:]) != 2 || le.Uint16(b[12:]) != 0x98 || b[14] != 1 || b[15] != 32 ||
		le.Uint64(b[192:]) != s.Cookie || le.Uint16(b[200:]) != 1 {
		t.Errorf("LayoutBase: % x", b)
	}
	for _, c := range []struct {
		size uint32
		want usdtlink.Layout
	}{{208, usdtlink.LayoutBase}, {304, usdtlink.LayoutSIB}, {200, 0}} {
		if got, err := usdtlink.LayoutOf(c.size); got != c.want || (err != nil) != (c.want == 0) {
			t.Errorf("LayoutOf(%d) = %v, %v", c.size, got, err)
		}
	}
}

// TestEncodeSpecArm64Object encodes arm64 argument strings for the layout
// of the committed example object (the one bpf2go built from usdt.bpf.h),
// without attaching: every spec of the arm64 corpus either encodes into a
// spec that fits the object's map or is refused with an *sdt.ArgError.
func TestEncodeSpecArm64Object(t *testing.T) {
	spec, err := usdtlink.LoadCollectionSpec(committedObject)
	if err != nil {
		t.Fatal(err)
	}
	m := spec.Maps[usdtlink.SpecsMap]
	if m == nil {
		t.Fatalf("%s has no %s", committedObject, usdtlink.SpecsMap)
	}
	layout, err := usdtlink.LayoutOf(m.ValueSize)
	if err != nil {
		t.Fatal(err)
	}
	var encoded, refused int
	for _, line := range corpus(t, "../sdt/testdata/argspec-aarch64.txt") {
		args, _ := sdt.ParseArgs(elf.EM_AARCH64, line)
		s, err := usdtlink.EncodeSpec(args, site, nil, 7, layout)
		if err != nil {
			var ae *sdt.ArgError
			if len(args) > usdtlink.MaxArgs {
				if !errors.Is(err, usdtlink.ErrUnsupported) {
					t.Errorf("%q: %d arguments: %v", line, len(args), err)
				}
			} else if !errors.As(err, &ae) || ae.Index < 0 || ae.Index >= len(args) {
				t.Errorf("%q: %v is not an *sdt.ArgError with its index", line, err)
			}
			refused++
			continue
		}
		b, err := s.MarshalLayout(layout)
		if err != nil || len(b) != int(m.ValueSize) {
			t.Errorf("%q: %d bytes, %v; the map holds %d", line, len(b), err, m.ValueSize)
		}
		encoded++
	}
	if encoded == 0 || refused == 0 {
		t.Errorf("%d lines encoded, %d refused: the corpus has both kinds", encoded, refused)
	}
}

// corpus returns the argument strings of an sdt corpus file.
func corpus(tb testing.TB, path string) []string {
	f, err := os.Open(path)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if l := sc.Text(); l != "" && !strings.HasPrefix(l, "#") {
			lines = append(lines, l)
		}
	}
	return lines
}

// FuzzEncodeSpec encodes arbitrary argument strings: no panic; a spec that
// encodes marshals in its layout, has no SIB argument in LayoutBase and one
// ArgSpec per argument; one that does not gives an error.
func FuzzEncodeSpec(f *testing.F) {
	for _, p := range []string{"../sdt/testdata/argspec-x86_64.txt", "../sdt/testdata/argspec-aarch64.txt"} {
		for _, l := range corpus(f, p) {
			f.Add(l, strings.Contains(p, "aarch64"), false, uint64(site))
			f.Add(l, strings.Contains(p, "aarch64"), true, uint64(site))
		}
	}
	f.Fuzz(func(t *testing.T, s string, arm, sib bool, at uint64) {
		m, layout := elf.EM_X86_64, usdtlink.LayoutBase
		if arm {
			m = elf.EM_AARCH64
		}
		if sib {
			layout = usdtlink.LayoutSIB
		}
		args, _ := sdt.ParseArgs(m, s)
		spec, err := usdtlink.EncodeSpec(args, at, symbol, 3, layout)
		if err != nil {
			if len(spec.Args) != 0 {
				t.Fatalf("error %v with a spec", err)
			}
			return
		}
		if len(spec.Args) != len(args) || len(args) > usdtlink.MaxArgs {
			t.Fatalf("%d args, %d specs", len(args), len(spec.Args))
		}
		for i, a := range spec.Args {
			if a.Type > usdtlink.ArgSIB || (layout == usdtlink.LayoutBase && a.Type == usdtlink.ArgSIB) {
				t.Fatalf("arg %d: %+v in %v", i, a, layout)
			}
			if args[i].Err != nil {
				t.Fatalf("arg %d encoded despite %v", i, args[i].Err)
			}
		}
		if _, err := spec.MarshalLayout(layout); err != nil {
			t.Fatal(err)
		}
	})
}
