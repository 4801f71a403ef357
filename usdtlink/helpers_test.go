package usdtlink_test

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/ringbuf"

	"github.com/usdtkit/usdtkit/internal/testutil"
	"github.com/usdtkit/usdtkit/usdtlink"
)

// TestMain fails the package when the tests leak file descriptors.
func TestMain(m *testing.M) { testutil.MainCheckingFDs(m) }

const nargs = 12

// event is struct event of examples/byo-c/byo.bpf.c.
type event struct {
	Cookie uint64
	Cnt    int64
	Args   [nargs]int64
	RC     [nargs]int32
	Str    [32]byte
}

// String formats e as testdata/libbpf_loader.c prints events.
func (e *event) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d %d", e.Cookie, e.Cnt)
	for _, a := range e.Args {
		fmt.Fprintf(&b, " %d", a)
	}
	for _, rc := range e.RC {
		fmt.Fprintf(&b, " %d", rc)
	}
	s := e.Str[:]
	if i := bytes.IndexByte(s, 0); i >= 0 {
		s = s[:i]
	}
	fmt.Fprintf(&b, " %s", s)
	return b.String()
}

// clangFlags compile examples/byo-c/byo.bpf.c for x86-64 pt_regs.
var clangFlags = []string{"-target", "bpf", "-D__TARGET_ARCH_x86", "-O2", "-g", "-I/usr/include/x86_64-linux-gnu"}

// buildBPF compiles examples/byo-c/byo.bpf.c with clang, against the installed
// <bpf/usdt.bpf.h> or, with sib, testdata/usdt_sib.bpf.h.
func buildBPF(t *testing.T, sib bool) string {
	t.Helper()
	requireAMD64(t)
	clang := testutil.RequireTool(t, "clang")
	testutil.RequireFile(t, "/usr/include/bpf/usdt.bpf.h")
	out := filepath.Join(t.TempDir(), "byo.o")
	args := append(append([]string{}, clangFlags...), "-DKEEP_WEAK", "-c", "../examples/byo-c/byo.bpf.c", "-o", out)
	if sib {
		args = append(args, "-DUSDT_SIB", "-Itestdata")
	}
	if b, err := exec.Command(clang, args...).CombinedOutput(); err != nil {
		t.Fatalf("clang %v: %v\n%s", args, err, b)
	}
	return out
}

// buildC compiles a C file of testdata with gcc and extra flags.
func buildC(t *testing.T, src string, flags ...string) string {
	t.Helper()
	requireAMD64(t)
	gcc := testutil.RequireTool(t, "gcc")
	testutil.RequireFile(t, "/usr/include/x86_64-linux-gnu/sys/sdt.h")
	out := filepath.Join(t.TempDir(), strings.TrimSuffix(filepath.Base(src), ".c"))
	args := append([]string{"-O2", "-g", "-o", out, src}, flags...)
	if b, err := exec.Command(gcc, args...).CombinedOutput(); err != nil {
		t.Fatalf("gcc %v: %v\n%s", args, err, b)
	}
	return out
}

// loaded is an object loaded with cilium/ebpf, PrepareSpec'd.
type loaded struct {
	spec  *ebpf.CollectionSpec
	coll  *ebpf.Collection
	prog  *ebpf.Program
	specs *ebpf.Map
	rd    *ringbuf.Reader
}

func load(t *testing.T, obj string, classic bool) *loaded {
	t.Helper()
	spec, err := usdtlink.LoadCollectionSpec(obj)
	if err != nil {
		t.Fatal(err)
	}
	if !classic {
		// LoadCollectionSpec keeps the generic attach type; uprobe_multi
		// links need the program loaded for them.
		if err := usdtlink.PrepareSpec(spec, nil); err != nil {
			t.Fatal(err)
		}
	}
	coll, err := ebpf.NewCollection(spec)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { coll.Close() })
	rd, err := ringbuf.NewReader(coll.Maps["events"])
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rd.Close() })
	return &loaded{spec: spec, coll: coll, prog: coll.Programs["handle"], specs: coll.Maps[usdtlink.SpecsMap], rd: rd}
}

// read returns the next n events. The deadline only keeps a broken test
// from hanging: events are read as they come.
func (l *loaded) read(t *testing.T, n int) []event {
	t.Helper()
	evs := make([]event, n)
	for i := range evs {
		l.rd.SetDeadline(time.Now().Add(20 * time.Second))
		rec, err := l.rd.Read()
		if err != nil {
			t.Fatalf("event %d of %d: %v", i+1, n, err)
		}
		if err := binary.Read(bytes.NewReader(rec.RawSample), binary.NativeEndian, &evs[i]); err != nil {
			t.Fatal(err)
		}
	}
	return evs
}

// attach attaches l's program and closes the link when the test ends.
func (l *loaded) attach(t *testing.T, target, provider, name string, opts *usdtlink.Options) *usdtlink.Link {
	t.Helper()
	k, err := usdtlink.Attach(l.prog, l.specs, target, provider, name, opts)
	if err != nil {
		t.Fatalf("attach %s:%s: %v", provider, name, err)
	}
	t.Cleanup(func() { k.Close() })
	return k
}

// loader is testdata/libbpf_loader.c running on one probe.
type loader struct {
	p       *testutil.Tracee
	refused string
}

func buildLoader(t *testing.T) string {
	t.Helper()
	testutil.RequireFile(t, "/usr/include/bpf/libbpf.h")
	return buildC(t, "testdata/libbpf_loader.c", "-lbpf")
}

// startLoader runs the libbpf loader and waits until it has attached (or
// refused: then refused holds its line).
func startLoader(t *testing.T, exe, obj, target, provider, name string, pid int, cookie uint64) *loader {
	t.Helper()
	if pid == 0 {
		pid = -1
	}
	cmd := exec.Command(exe, obj, target, provider, name, fmt.Sprint(pid), fmt.Sprint(cookie))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	ld := &loader{p: testutil.StartCmd(t, cmd)}
	// stderr is complete, and safe to read, once the loader has exited.
	stderrText := func() string {
		cmd.Process.Kill()
		cmd.Wait()
		return strings.TrimSpace(stderr.String())
	}
	line, ok := ld.p.Next()
	if !ok {
		t.Fatalf("libbpf loader ended\n%s", stderrText())
	}
	switch {
	case line == "ready":
	case strings.HasPrefix(line, "refused"):
		ld.refused = line + ": " + stderrText()
	default:
		t.Fatalf("libbpf loader: %q\n%s", line, stderrText())
	}
	return ld
}

// lines returns the next n event lines the loader prints.
func (ld *loader) lines(t *testing.T, n int) []string {
	t.Helper()
	var out []string
	for len(out) < n {
		l, ok := ld.p.Next()
		if !ok {
			t.Fatalf("libbpf loader: %d of %d events", len(out), n)
		}
		out = append(out, l)
	}
	return out
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// committedObject is the object examples/byo-c commits (bpf2go's output).
const committedObject = "../examples/byo-c/byo_x86_bpfel.o"

// startProc runs name with args, spoken to in lines.
func startProc(t *testing.T, name string, args ...string) *testutil.Tracee {
	t.Helper()
	return testutil.StartCmd(t, exec.Command(name, args...))
}

// requireAMD64 skips tests whose C programs and pt_regs are x86-64's.
func requireAMD64(t *testing.T) {
	t.Helper()
	if runtime.GOARCH != "amd64" {
		t.Skipf("x86-64 test programs on %s", runtime.GOARCH)
	}
}
