package main

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"

	"github.com/cilium/ebpf"

	"github.com/usdtkit/usdtkit/internal/testutil"
)

// TestGenerated regenerates the committed object and Go file with bpf2go
// and clang, as go generate does, and checks that they are unchanged. clang
// output is byte-stable for one clang version, source and directory (the
// BTF line info records the source path as given, so the test runs bpf2go
// here); another clang version may reorder or renumber instructions, so
// when the bytes differ the test compares what the object means instead:
// every program's instructions and every map's definition, as cilium/ebpf
// reads them.
func TestGenerated(t *testing.T) {
	testutil.RequireTool(t, "clang")
	testutil.RequireFile(t, "/usr/include/bpf/usdt.bpf.h")
	dir := t.TempDir()
	goTool := filepath.Join(runtime.GOROOT(), "bin", "go")
	cmd := exec.Command(goTool, "run", "github.com/cilium/ebpf/cmd/bpf2go", "-output-dir", dir,
		"-target", "amd64", "-type", "event", "byo", "byo.bpf.c", "--", "-I/usr/include/x86_64-linux-gnu")
	cmd.Env = append(os.Environ(), "GOPACKAGE=main")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("bpf2go: %v\n%s", err, out)
	}
	for _, name := range []string{"byo_x86_bpfel.go", "byo_x86_bpfel.o"} {
		have, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		want, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Equal(have, want) {
			continue
		}
		if !strings.HasSuffix(name, ".o") {
			t.Errorf("%s differs from bpf2go's output: run go generate in examples/byo-c", name)
			continue
		}
		t.Logf("%s differs in bytes from this clang's; comparing programs and maps", name)
		a, b := specOf(t, have), specOf(t, want)
		for n, p := range b.Programs {
			q := a.Programs[n]
			if q == nil || q.Instructions.String() != p.Instructions.String() || q.SectionName != p.SectionName {
				t.Errorf("program %s differs: run go generate in examples/byo-c", n)
			}
		}
		for n, m := range b.Maps {
			o := a.Maps[n]
			if o == nil || o.Type != m.Type || o.KeySize != m.KeySize || o.ValueSize != m.ValueSize || o.MaxEntries != m.MaxEntries {
				t.Errorf("map %s differs: run go generate in examples/byo-c", n)
			}
		}
		if len(a.Programs) != len(b.Programs) || len(a.Maps) != len(b.Maps) {
			t.Errorf("%d programs and %d maps, bpf2go gives %d and %d", len(a.Programs), len(a.Maps), len(b.Programs), len(b.Maps))
		}
	}
}

func specOf(t *testing.T, b []byte) *ebpf.CollectionSpec {
	t.Helper()
	s, err := ebpf.LoadCollectionSpecFromReader(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestExample runs the example, built without clang from the committed
// object, on a %rip+symbol probe of usdtlink's operands program.
func TestExample(t *testing.T) {
	testutil.RequireBPF(t)
	gcc := testutil.RequireTool(t, "gcc")
	testutil.RequireFile(t, "/usr/include/x86_64-linux-gnu/sys/sdt.h")
	exe := filepath.Join(t.TempDir(), "operands")
	if out, err := exec.Command(gcc, "-O2", "-o", exe, "../../usdtlink/testdata/operands.c").CombinedOutput(); err != nil {
		t.Fatalf("gcc: %v\n%s", err, out)
	}
	tr := testutil.StartTracee(t, exe)
	cmd := exec.Command(testutil.BuildGo(t, "../byo-c"), "-p", "0", exe, "t:rip")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	out := bufio.NewScanner(stdout)
	if !out.Scan() || out.Text() != "attached 1 sites" {
		t.Fatalf("byo-c printed %q, %v", out.Text(), out.Err())
	}
	tr.Do(t, "fire")
	// gvals[1], gvals[0], gint, gbytes[3] and (signed) gbytes[3].
	want := "cookie 0 args 5: -42 72623859790382856 -123456 254 -2"
	if !out.Scan() || out.Text() != want {
		t.Errorf("byo-c printed %q, want %q", out.Text(), want)
	}
	cmd.Process.Signal(syscall.SIGINT)
	if err := cmd.Wait(); err != nil {
		t.Errorf("byo-c after SIGINT: %v", err)
	}
}
