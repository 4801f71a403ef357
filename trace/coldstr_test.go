package trace_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/usdtkit/usdtkit/internal/features"
	"github.com/usdtkit/usdtkit/internal/testutil"
	"github.com/usdtkit/usdtkit/trace"
)

// TestStringInColdPage reads, at a USDT probe, a string in a page of a
// private file mapping the process never touched. bpftrace's str() reads
// it as "" (bpf_probe_read_user_str cannot fault the page in); so does
// ours with FaultingStrings; by default ours reads the string, with
// bpf_copy_from_user_str in a sleepable program (Linux 6.12+). Each case
// uses a page of its own, as a read that faults a page in leaves it
// mapped.
func TestStringInColdPage(t *testing.T) {
	testutil.RequireBPF(t)
	if _, err := features.SleepableCopyStr(); err != nil {
		// Our CI kernels (6.18) have it; features tests assert that.
		t.Skipf("no sleepable string reads: %v", err)
	}
	bpftrace := testutil.RequireTool(t, "bpftrace")
	gcc := testutil.RequireTool(t, "gcc")
	testutil.RequireFile(t, "/usr/include/x86_64-linux-gnu/sys/sdt.h")
	dir := t.TempDir()
	data := filepath.Join(dir, "cold.dat")
	f, err := os.Create(data)
	if err != nil {
		t.Fatal(err)
	}
	for k := 1; k <= 3; k++ {
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
	testutil.DefaultSIGINTForChildren()
	cmd := exec.Command(bpftrace, "-p", fmt.Sprint(pid), "-e", `BEGIN { printf("ready\n"); } `+probe+" "+action)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	sc := bufio.NewScanner(stdout)
	for sc.Scan() && sc.Text() != "ready" {
	}
	if sc.Text() != "ready" {
		t.Fatalf("bpftrace did not start: %s", stderr.String())
	}
	tracee.Do(t, "1")
	var ref strings.Builder
	for sc.Scan() {
		ref.WriteString(sc.Text() + "\n")
	}
	cmd.Wait()
	reference := ref.String()
	if !strings.HasPrefix(reference, "<>\n") {
		t.Fatalf("bpftrace printed %q (stderr %s); want <> first: this test's premise is a string bpftrace cannot read", reference, stderr.String())
	}

	tests := []struct {
		name   string
		faulty bool
		page   string
		want   string
	}{
		{"faulting", true, "2", reference},
		{"sleepable", false, "3", strings.Replace(reference, "<>", "<cold string 3>", 1)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			prog, err := trace.Compile("cold.bt", probe+" "+action, &trace.CompileOptions{PID: pid, FaultingStrings: tt.faulty})
			if err != nil {
				t.Fatal(err)
			}
			var out bytes.Buffer
			tr, err := trace.Start(prog, &trace.Options{Stdout: &out})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { tr.Close() })
			done := make(chan error, 1)
			go func() { done <- tr.Run(context.Background()) }()
			tracee.Do(t, tt.page)
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
}
