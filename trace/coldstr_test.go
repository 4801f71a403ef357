package trace_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/usdtkit/usdtkit/internal/bpf/features"
	"github.com/usdtkit/usdtkit/internal/testutil"
	"github.com/usdtkit/usdtkit/trace"
)

// TestStringInColdPage reads, at a USDT probe, a string in a page of a
// private file mapping the process never touched. bpftrace's str() reads
// it as "" (bpf_probe_read_user_str cannot fault the page in); so does
// ours with FaultingStrings; by default ours reads the string with
// bpf_copy_from_user_str in a sleepable program (Linux 6.12+), through
// uprobe_multi and classic links, in str() and in events' string
// arguments. Each case uses a page of its own (page K holds "cold string
// K"), as a read that faults a page in leaves it mapped.
func TestStringInColdPage(t *testing.T) {
	testutil.RequireBPF(t)
	if _, err := features.SleepableCopyStr(); err != nil {
		// Our CI kernels (6.18) have it; features tests assert that.
		t.Skipf("no sleepable string reads: %v", err)
	}
	gcc := testutil.RequireTool(t, "gcc")
	testutil.RequireFile(t, "/usr/include/x86_64-linux-gnu/sys/sdt.h")
	dir := t.TempDir()
	data := filepath.Join(dir, "cold.dat")
	f, err := os.Create(data)
	if err != nil {
		t.Fatal(err)
	}
	const pages = 6 // one per case and bpftrace's
	for k := 1; k <= pages; k++ {
		if _, err := f.WriteAt(fmt.Appendf(nil, "cold string %d\x00", k), int64(k)<<20); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.Truncate(16 << 20); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	_, file, _, _ := runtime.Caller(0)
	bin := filepath.Join(dir, "coldstr")
	args := []string{"-O1", "-o", bin, fmt.Sprintf("-DCOLDSTR_FILE=%q", data), filepath.Join(filepath.Dir(file), "testdata", "coldstr.c")}
	if out, err := exec.Command(gcc, args...).CombinedOutput(); err != nil {
		t.Fatalf("gcc %v: %v\n%s", args, err, out)
	}
	tracee := testutil.StartTracee(t, bin)
	pid := tracee.PID()
	probe := "usdt:" + bin + ":coldstr:cold"
	action := `{ printf("<%s>\n", str(arg0)); exit(); }`

	// bpftrace, the reference: BEGIN runs once every probe is attached.
	bt := testutil.StartBpftrace(t, "-p", fmt.Sprint(pid), "-e", `BEGIN { printf("ready\n"); } `+probe+" "+action)
	sc, cmd := bt.Out, bt.Cmd
	tracee.Do(t, "1")
	var ref strings.Builder
	for sc.Scan() {
		ref.WriteString(sc.Text() + "\n")
	}
	cmd.Wait()
	reference := ref.String()
	if !strings.HasPrefix(reference, "<>\n") {
		t.Fatalf("bpftrace printed %q (stderr %s); want <> first: this test's premise is a string bpftrace cannot read", reference, bt.Stderr())
	}

	tests := []struct {
		name    string
		faulty  bool
		classic bool
		page    int
		want    string
	}{
		{"faulting", true, false, 2, reference},
		{"sleepable", false, false, 3, strings.Replace(reference, "<>", "<cold string 3>", 1)},
		{"sleepable-classic", false, true, 4, strings.Replace(reference, "<>", "<cold string 4>", 1)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			prog, err := trace.Compile("cold.bt", probe+" "+action, &trace.CompileOptions{PID: pid, FaultingStrings: tt.faulty})
			if err != nil {
				t.Fatal(err)
			}
			var out bytes.Buffer
			tr, err := trace.Start(prog, &trace.Options{Stdout: &out, Classic: tt.classic})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { tr.Close() })
			done := make(chan error, 1)
			go func() { done <- tr.Run(context.Background()) }()
			tracee.Do(t, fmt.Sprint(tt.page))
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			if err := tr.Close(); err != nil {
				t.Error(err)
			}
			if out.String() != tt.want {
				t.Errorf("have %q, want %q", out.String(), tt.want)
			}
		})
	}

	// Events (usdtkit trace --str 0): the string argument and its fault.
	events := []struct {
		name   string
		faulty bool
		page   int
		want   trace.Value
	}{
		{"events-faulting", true, 5, trace.Value{IsString: true, Fault: true}},
		{"events-sleepable", false, 6, trace.Value{IsString: true, Str: "cold string 6"}},
	}
	for _, tt := range events {
		t.Run(tt.name, func(t *testing.T) {
			prog, err := trace.CompileFlags(&trace.Flags{Probes: []string{"coldstr:cold"}, Strings: []string{"0"}},
				&trace.CompileOptions{PID: pid, FaultingStrings: tt.faulty})
			if err != nil {
				t.Fatal(err)
			}
			got := make(chan trace.Value, 1)
			tr, err := trace.Start(prog, &trace.Options{OnEvent: func(e *trace.Event) error {
				if len(e.Args) > 0 {
					select {
					case got <- e.Args[0]:
					default:
					}
				}
				return nil
			}})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { tr.Close() })
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- tr.Run(ctx) }()
			tracee.Do(t, fmt.Sprint(tt.page))
			have := <-got
			cancel()
			if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
				t.Error(err)
			}
			have.Raw = 0 // the mapping's address
			if have != tt.want {
				t.Errorf("have %+v, want %+v", have, tt.want)
			}
		})
	}
}

// TestGoStringInColdPage reads, at a Go function's entry, a Go string
// (args.s) whose bytes are in a page of a private file mapping the
// process never touched: "" with FaultingStrings (bpf_probe_read_user
// cannot fault the page in), the string by default (bpf_copy_from_user in
// a sleepable program).
func TestGoStringInColdPage(t *testing.T) {
	testutil.RequireBPF(t)
	if _, err := features.SleepableCopyStr(); err != nil {
		t.Skipf("no sleepable string reads: %v", err)
	}
	dir := t.TempDir()
	data := filepath.Join(dir, "cold.dat")
	f, err := os.Create(data)
	if err != nil {
		t.Fatal(err)
	}
	for k := 1; k <= 2; k++ {
		if _, err := f.WriteAt(fmt.Appendf(nil, "cold string %d", k), int64(k)<<20); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.Truncate(16 << 20); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	exe := testutil.BuildGo(t, "testdata/gocold")
	target := testutil.StartCmd(t, exec.Command(exe, data))
	pid := target.PID()
	tests := []struct {
		name   string
		faulty bool
		page   int
		want   string
	}{
		{"faulting", true, 1, "<>\n"},
		{"sleepable", false, 2, "<cold string 2>\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := "uprobe:" + exe + `:main.cold { printf("<%s>\n", args.s); exit(); }`
			prog, err := trace.Compile("gocold.bt", src, &trace.CompileOptions{PID: pid, FaultingStrings: tt.faulty})
			if err != nil {
				t.Fatal(err)
			}
			var out bytes.Buffer
			tr, err := trace.Start(prog, &trace.Options{PIDs: []int{pid}, Stdout: &out})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { tr.Close() })
			done := make(chan error, 1)
			go func() { done <- tr.Run(context.Background()) }()
			if l := target.Do(t, fmt.Sprint(tt.page)); len(l) != 0 {
				t.Fatalf("target: %q before done", l)
			}
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			if err := tr.Close(); err != nil {
				t.Error(err)
			}
			if have, _, _ := strings.Cut(out.String(), "\n\n"); have+"\n" != tt.want {
				t.Errorf("have %q, want %q first", out.String(), tt.want)
			}
		})
	}
}
