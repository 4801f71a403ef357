package dynsdt_test

import (
	"debug/elf"
	"fmt"
	"github.com/usdtkit/usdtkit/trace"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/usdtkit/usdtkit/dynsdt"
	"github.com/usdtkit/usdtkit/internal/testutil"
	"github.com/usdtkit/usdtkit/internal/tracetest"
	"github.com/usdtkit/usdtkit/sdt"
)

func hostIs(m elf.Machine) bool {
	switch runtime.GOARCH {
	case "amd64":
		return m == elf.EM_X86_64
	case "arm64":
		return m == elf.EM_AARCH64
	}
	return false
}

// traceScript loads the object named by argv[1] with ctypes and, per line
// on stdin, prints the semaphore of probe all ("sem") or fires both probes
// with the arguments of TestBuildTrace ("fire").
const traceScript = `
import ctypes, sys
from ctypes import *
l = CDLL(sys.argv[1])
all_ = l.dyntest_all_fire
pair = l.dyntest_pair_fire
all_.argtypes = [c_int8, c_int16, c_int32, c_int64, c_uint8, c_uint16,
                  c_uint32, c_uint64, c_bool, c_void_p, c_char_p, c_int32]
all_.restype = None
pair.argtypes = [c_char_p, c_int64]
pair.restype = None
sem = c_uint16.in_dll(l, "dyntest_all_semaphore")
print("ready", flush=True)
for line in sys.stdin:
    if line == "sem\n":
        print(sem.value, flush=True)
    elif line == "fire\n":
        all_(-5, -300, -70000, -(1 << 40), 200, 60000, 4000000000, (1 << 64) - 1,
              True, 0x1234, b"hello", -7)
        pair(b"in a register", -2)
        print("fired", flush=True)
`

// TestBuildTrace traces an object that Python loads with ctypes: integers
// of every size (with negative values), a bool, a pointer and strings, in
// registers and on the stack, arrive as fired; the semaphore is 0 before
// the tracer attaches, non-zero while it is attached, 0 after.
func TestBuildTrace(t *testing.T) {
	testutil.RequireBPF(t)
	if !hostIs(elf.EM_X86_64) {
		t.Skip("the test fires from x86-64 Python")
	}
	python := testutil.RequireFile(t, "/usr/bin/python3.11")
	spec := &dynsdt.ProviderSpec{Name: "dyntest", Probes: []dynsdt.ProbeSpec{
		{Name: "all", Args: []dynsdt.ArgType{dynsdt.Int8, dynsdt.Int16, dynsdt.Int32, dynsdt.Int64, dynsdt.Uint8, dynsdt.Uint16,
			dynsdt.Uint32, dynsdt.Uint64, dynsdt.Bool, dynsdt.Pointer, dynsdt.String, dynsdt.Int32}},
		{Name: "pair", Args: []dynsdt.ArgType{dynsdt.String, dynsdt.Int64}},
	}}
	path, _ := writeObject(t, spec, elf.EM_X86_64)
	py := startPython(t, python, traceScript, path)
	if have := py.do(t, "sem"); have != "0" {
		t.Fatalf("semaphore before attaching: have %s, want 0", have)
	}

	probes, err := sdt.List(&sdt.ListOptions{Paths: []string{path}})
	if err != nil {
		t.Fatal(err)
	}
	if len(probes) != 2 {
		t.Fatalf("listed %d probes, want dyntest:all and dyntest:pair", len(probes))
	}
	tr := tracetest.Start(t, []trace.EventProbe{
		{Probe: "usdt:" + path + ":dyntest:all", Strings: []int{10}},
		{Probe: "usdt:" + path + ":dyntest:pair", Strings: []int{0}},
	}, py.PID(), nil)
	if have := py.do(t, "sem"); have == "0" {
		t.Error("semaphore while attached: have 0, want non-zero")
	}
	if have := py.do(t, "fire"); have != "fired" {
		t.Fatalf("fire: have %q", have)
	}

	neg := func(v int64) uint64 { return uint64(v) }
	want := []string{
		fmt.Sprint("dyntest:all", []uint64{neg(-5), neg(-300), neg(-70000), neg(-1 << 40), 200, 60000, 4000000000, 1<<64 - 1, 1, 0x1234}, " hello ", neg(-7)),
		fmt.Sprint("dyntest:pair in a register ", neg(-2)),
	}
	var have []string
	for range want {
		ev := tr.Next(t)
		var raw []uint64
		for _, v := range ev.Args {
			if v.Fault {
				t.Errorf("%s: a fault in %+v", ev.Name, ev.Args)
			}
			raw = append(raw, v.Raw)
		}
		switch ev.Name {
		case "dyntest:all":
			have = append(have, fmt.Sprint(ev.Name, raw[:10], " ", ev.Args[10].Str, " ", raw[11]))
		default:
			have = append(have, fmt.Sprint(ev.Name, " ", ev.Args[0].Str, " ", raw[1]))
		}
	}
	if !slices.Equal(have, want) {
		t.Errorf("events:\nhave %q\nwant %q", have, want)
	}

	if err := tr.Stop(); err != nil {
		t.Fatal(err)
	}
	if err := tr.T.Close(); err != nil {
		t.Fatal(err)
	}
	if have := py.do(t, "sem"); have != "0" {
		t.Errorf("semaphore after detaching: have %s, want 0", have)
	}
}

type pythonProc struct{ *testutil.Tracee }

// startPython runs script with args and waits for its "ready" line; the
// process is killed when the test ends.
func startPython(t *testing.T, python, script string, args ...string) *pythonProc {
	t.Helper()
	p := &pythonProc{testutil.StartCmd(t, exec.Command(python, append([]string{"-c", script}, args...)...))}
	p.Expect(t, "ready")
	return p
}

// do sends one command and returns the line it printed.
func (p *pythonProc) do(t *testing.T, command string) string {
	t.Helper()
	p.Send(t, command)
	return strings.TrimSpace(p.Line(t))
}
