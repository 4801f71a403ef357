package usdtlink_test

import (
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/usdtkit/usdtkit/internal/testutil"
	"github.com/usdtkit/usdtkit/sdt"
	"github.com/usdtkit/usdtkit/usdtlink"
)

// operandProbes are the probes of testdata/operands.c with the values their
// asm statements load, as the 64-bit patterns bpf_usdt_arg returns.
// "natural" is checked against the line the program prints.
var operandProbes = []struct {
	name string
	sib  bool // has an index register
	want []int64
}{
	{"regs", false, []int64{0x1122334455667788, -5, 0x2345, -128, 0x0123456789abcdef, -7, 0xfffffff9}},
	{"high", false, []int64{-9, 0x22, 0x43, 0xa5, -91, 0x88}},
	{"mem", false, []int64{-42, 0x05060708, 1, 0xff, -1}},
	{"sib", true, []int64{0x7fff0000ffff0001, -42, 0xffffffff, 0x0405, -1}},
	{"rip", false, []int64{-42, 0x0102030405060708, -123456, 0xfe, -2}},
	{"consts", false, []int64{42, -1, 200, -300, 0x1234567890}},
	{"natural", true, nil},
}

// TestOperands attaches a clang-built object using <bpf/usdt.bpf.h> to
// every probe of a gcc-built sys/sdt.h program and checks each argument
// bpf_usdt_arg reads: registers with high bytes, memory, SIB, %rip+symbol,
// constants, and gcc -O2's own choice. The installed header's layout has
// no SIB: those probes are refused with an *sdt.ArgError naming the spec.
func TestOperands(t *testing.T) {
	testutil.RequireBPF(t)
	exe := buildC(t, "testdata/operands.c")
	objs := map[string]string{
		"installed usdt.bpf.h": buildBPF(t, false),
		"libbpf 1.7 layout":    buildBPF(t, true),
	}
	if exists(committedObject) {
		objs["examples/byo-c object"] = committedObject
	}
	for _, classic := range []bool{false, true} {
		for desc, obj := range objs {
			t.Run(desc+map[bool]string{false: " multi", true: " classic"}[classic], func(t *testing.T) {
				testOperands(t, exe, obj, classic)
			})
		}
	}
}

func testOperands(t *testing.T, exe, obj string, classic bool) {
	l := load(t, obj, classic)
	layout, err := usdtlink.LayoutOf(l.specs.ValueSize())
	if err != nil {
		t.Fatal(err)
	}
	tr := testutil.StartTracee(t, exe)
	attached := map[uint64]int{}
	for k, p := range operandProbes {
		cookie := uint64(100 + k)
		link, err := usdtlink.Attach(l.prog, l.specs, exe, "t", p.name, &usdtlink.Options{Cookie: cookie, Classic: classic})
		if p.sib && layout == usdtlink.LayoutBase {
			var ae *sdt.ArgError
			if !errors.As(err, &ae) || !errors.Is(err, usdtlink.ErrUnsupported) || !strings.Contains(ae.Spec, "(%r") || !strings.Contains(err.Error(), "t:"+p.name) {
				t.Errorf("t:%s in %v: err %v, want an *sdt.ArgError wrapping ErrUnsupported naming an index spec", p.name, layout, err)
			}
			if err == nil {
				link.Close()
			}
			continue
		}
		if err != nil {
			t.Fatalf("t:%s: %v", p.name, err)
		}
		t.Cleanup(func() { link.Close() })
		if link.Multi() == classic {
			t.Errorf("t:%s: Multi() = %v with Options.Classic %v", p.name, link.Multi(), classic)
		}
		attached[cookie] = k
	}
	lines := tr.Do(t, "fire")
	if len(lines) != 1 || !strings.HasPrefix(lines[0], "natural ") {
		t.Fatalf("tracee printed %q", lines)
	}
	var natural []int64
	for _, f := range strings.Fields(lines[0])[1:] {
		v, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			u, err2 := strconv.ParseUint(f, 10, 64)
			if err2 != nil {
				t.Fatal(err)
			}
			v = int64(u)
		}
		natural = append(natural, v)
	}
	seen := map[uint64]bool{}
	for _, e := range l.read(t, len(attached)) {
		k, ok := attached[e.Cookie]
		if !ok || seen[e.Cookie] {
			t.Errorf("event with cookie %d (attached %v, seen %v)", e.Cookie, attached, seen)
			continue
		}
		seen[e.Cookie] = true
		p := operandProbes[k]
		want := p.want
		if want == nil {
			want = natural
		}
		if e.Cnt != int64(len(want)) {
			t.Errorf("t:%s: bpf_usdt_arg_cnt %d, want %d", p.name, e.Cnt, len(want))
		}
		for i := range nargs {
			w, rc := int64(0), int32(0)
			if i < len(want) {
				w = want[i]
			} else {
				rc = -2 // -ENOENT
			}
			if e.Args[i] != w || e.RC[i] != rc {
				t.Errorf("t:%s arg%d = %#x (rc %d), want %#x (rc %d)", p.name, i, e.Args[i], e.RC[i], w, rc)
			}
		}
	}
}
