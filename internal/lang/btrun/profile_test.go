package btrun_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/usdtkit/usdtkit/internal/lang/btgen"
	"github.com/usdtkit/usdtkit/internal/lang/btlang"
	"github.com/usdtkit/usdtkit/internal/lang/btrun"
	"github.com/usdtkit/usdtkit/internal/testutil"
)

// generateProfile checks and generates src, a program of profile blocks.
func generateProfile(t *testing.T, src string) (*btgen.Program, error) {
	t.Helper()
	prog, err := btlang.Compile("profile.bt", []byte(src), nil)
	if err != nil {
		t.Fatal(err)
	}
	return btgen.Generate(prog, &btgen.Options{Sites: make([][]btgen.Site, len(prog.Blocks))})
}

// TestProfileEveryProcess: without Options.PIDs a profile samples every
// process: a process spinning in hot, not traced otherwise, is counted
// with its stack, until exit() after 100 of its samples.
func TestProfileEveryProcess(t *testing.T) {
	testutil.RequireBPF(t)
	bin := testutil.BuildSpin(t)
	spin := testutil.StartSpin(t, bin, "100000000000")
	src := strings.ReplaceAll(`profile:hz:997 /pid == SPIN/ { @[ustack(3)] = count(); @n = @n + 1; if (@n == 100) { exit(); } }`,
		"SPIN", strconv.Itoa(spin.Process.Pid))
	gp, err := generateProfile(t, src)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	r, err := btrun.Start(gp, &btrun.Options{Out: &buf})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	if err := r.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, m := range regexp.MustCompile(`(?m)^@\[\n    hot\+\d+\n    outer\+\d+\n    main\+\d+\n\]: (\d+)$`).FindAllStringSubmatch(buf.String(), -1) {
		c, _ := strconv.Atoi(m[1])
		n += c
	}
	// exit() comes at the 100th sample; a few more may come before the
	// events are closed.
	if n < 90 {
		t.Errorf("%d samples in hot, outer, main; want at least 90 of the 100 before exit():\n%s", n, buf.String())
	}
}

// TestProfileRateTooHigh: a rate past kernel.perf_event_max_sample_rate is
// the kernel's EINVAL, and the error says the limit.
func TestProfileRateTooHigh(t *testing.T) {
	testutil.RequireBPF(t)
	b, err := os.ReadFile("/proc/sys/kernel/perf_event_max_sample_rate")
	if err != nil {
		t.Fatal(err)
	}
	max, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	gp, err := generateProfile(t, "profile:hz:"+strconv.Itoa(max+1)+" { @ = count(); }")
	if max+1 > 1_000_000 {
		// Past what Generate takes: refused there.
		var be *btlang.Error
		if !errors.As(err, &be) {
			t.Errorf("Generate at %d hz: %v, want a *btlang.Error", max+1, err)
		}
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	r, err := btrun.Start(gp, &btrun.Options{Out: new(bytes.Buffer)})
	if err == nil {
		r.Close()
		t.Fatalf("Start at %d hz succeeded, past the kernel's %d", max+1, max)
	}
	if !errors.Is(err, unix.EINVAL) || !strings.Contains(err.Error(), strconv.Itoa(max)) {
		t.Errorf("Start at %d hz: %v; want EINVAL naming the limit %d", max+1, err, max)
	}
}
