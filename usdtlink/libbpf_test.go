package usdtlink_test

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/usdtkit/usdtkit/internal/testutil"
	"github.com/usdtkit/usdtkit/usdtlink"
)

// TestLibbpfAgrees attaches the same clang-built object (the installed
// usdt.bpf.h) with usdtlink and with libbpf's bpf_program__attach_usdt (a
// C loader built against -lbpf) to the same probes, fires them, and checks
// that both read the same: bpf_usdt_arg_cnt, every bpf_usdt_arg value and
// return code, bpf_usdt_cookie and a string read through an argument. On
// the operands that libbpf 1.1 cannot parse (high-byte registers, SIB,
// %rip+symbol) libbpf refuses the probe, and the values are those
// TestOperands checks.
func TestLibbpfAgrees(t *testing.T) {
	testutil.RequireBPF(t)
	obj, sibObj := buildBPF(t, false), buildBPF(t, true)
	ldr := buildLoader(t)

	t.Run("operands", func(t *testing.T) {
		exe := buildC(t, "testdata/operands.c")
		tr := startProc(t, exe)
		for k, p := range operandProbes {
			t.Run(p.name, func(t *testing.T) {
				cookie := uint64(100 + k)
				ld := startLoader(t, ldr, obj, exe, "t", p.name, tr.PID(), cookie)
				o := obj
				if p.sib {
					o = sibObj // the installed usdt.bpf.h has no SIB
				}
				l := load(t, o, false)
				l.attach(t, exe, "t", p.name, &usdtlink.Options{Cookie: cookie, PID: tr.PID()})
				tr.Do(t, "fire")
				got := l.read(t, 1)[0]
				if ld.refused != "" {
					switch p.name {
					case "high", "sib", "rip", "natural":
						t.Logf("libbpf refuses t:%s (%s); usdtlink read %s", p.name, ld.refused, got.String())
					default:
						t.Errorf("libbpf refused t:%s: %s", p.name, ld.refused)
					}
					return
				}
				if want := ld.lines(t, 1)[0]; got.String() != want {
					t.Errorf("t:%s:\nusdtlink %s\nlibbpf   %s", p.name, got.String(), want)
				}
			})
		}
	})

	t.Run("python", func(t *testing.T) {
		python := testutil.RequireFile(t, "/usr/bin/python3.11")
		py := startProc(t, python, "testdata/python_target.py")
		first := py.Line(t)
		// arg1 (funcname) is read as a string: cookie 2.
		const cookie = 2
		ld := startLoader(t, ldr, obj, python, "python", "function__entry", py.PID(), cookie)
		if ld.refused != "" {
			t.Fatalf("libbpf: %s", ld.refused)
		}
		l := load(t, obj, false)
		// CPython 3.11 fires function__entry only on its tracing path,
		// which it takes while the line probe's semaphore is raised (see
		// sdt.Companions): attach line too, with a cookie of its own.
		l.attach(t, "", "python", "line", &usdtlink.Options{Cookie: 50, PID: py.PID()})
		k := l.attach(t, "", "python", "function__entry", &usdtlink.Options{Cookie: cookie, PID: py.PID()})
		if k.Sites() == 0 {
			t.Fatal("no sites")
		}
		py.Do(t, "go")
		// Lines, and calls of other Python functions, may come first.
		var got *event
		for got == nil {
			e := l.read(t, 1)[0]
			if e.Cookie == cookie && strings.HasSuffix(e.String(), " byo_target") {
				got = &e
			}
		}
		if got.Cnt != 3 || strconv.FormatInt(got.Args[2], 10) != first || got.Args[0] == 0 || got.RC[0] != 0 {
			t.Errorf("usdtlink read %s, want 3 args, line %s", got.String(), first)
		}
		var want string
		for want == "" {
			if s := ld.lines(t, 1)[0]; strings.HasSuffix(s, " byo_target") {
				want = s
			}
		}
		if got.String() != want {
			t.Errorf("python:function__entry:\nusdtlink %s\nlibbpf   %s", got.String(), want)
		}
	})

	t.Run("dynsdt", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "dyn")
		if err := os.Mkdir(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		fire := startProc(t, testutil.BuildGo(t, "testdata/dynfire"), dir)
		path := fire.Line(t)
		// arg10 is the string: cookie 11.
		const cookie = 11
		ld := startLoader(t, ldr, obj, path, "byo", "twelve", fire.PID(), cookie)
		if ld.refused != "" {
			t.Fatalf("libbpf: %s", ld.refused)
		}
		l := load(t, obj, false)
		l.attach(t, "", "byo", "twelve", &usdtlink.Options{Cookie: cookie, PID: fire.PID()})
		fire.Do(t, "fire")
		got := l.read(t, 1)[0]
		want := []int64{-3, 250, -1000, 65000, -100000, 4000000000, -1 << 40, -1<<63 + 5, 1, 0x1234, 0, -128}
		for i, w := range want {
			if i != 10 && got.Args[i] != w {
				t.Errorf("arg%d = %d, want %d", i, got.Args[i], w)
			}
		}
		if got.Cnt != 12 || !strings.HasSuffix(got.String(), " hello") {
			t.Errorf("usdtlink read %s", got.String())
		}
		if w := ld.lines(t, 1)[0]; got.String() != w {
			t.Errorf("byo:twelve:\nusdtlink %s\nlibbpf   %s", got.String(), w)
		}
	})
}
