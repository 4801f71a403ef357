package trace_test

import (
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/usdtkit/usdtkit/internal/testutil"
	"github.com/usdtkit/usdtkit/trace"
)

// profileFuncs returns a stack's function names from main inwards (what
// comes before main, the C library's start, is left out).
func profileFuncs(s trace.StackCount) []string {
	var names []string
	for i := len(s.Frames) - 1; i >= 0; i-- {
		names = append(names, s.Frames[i].Symbol)
	}
	if i := slices.Index(names, "main"); i >= 0 {
		return names[i:]
	}
	return names
}

// TestCompileProfileCommand compiles a profile from Go and runs it for a
// command: Stacks has the command's CPU time as main → outer → hot and
// main → outer → half, hot with the larger share (twice the work), and
// nothing of another process that spins meanwhile.
func TestCompileProfileCommand(t *testing.T) {
	testutil.RequireBPF(t)
	bin := testutil.BuildSpin(t)
	other := testutil.StartSpin(t, bin, "100000000000")
	c := exec.Command(bin, "spin", "300000000")
	prog, err := trace.Compile("-e", `profile:hz:997 { @[ustack] = count(); }`, &trace.CompileOptions{Executable: c.Path})
	if err != nil {
		t.Fatal(err)
	}
	if !prog.CountsStacks() || prog.Probes() != 1 || prog.Sites() != 0 {
		t.Errorf("CountsStacks %v, Probes %d, Sites %d; want true, 1 (the profile probe), 0", prog.CountsStacks(), prog.Probes(), prog.Sites())
	}
	var out strings.Builder
	tr := runToEnd(t, prog, &trace.Options{Command: c, Stdout: &out})
	stacks, err := tr.Stacks()
	if err != nil {
		t.Fatal(err)
	}
	counts := map[string]uint64{}
	for _, s := range stacks {
		if s.PID != c.Process.Pid {
			t.Errorf("a stack of process %d (the command is %d, the other spinner %d): %+v", s.PID, c.Process.Pid, other.Process.Pid, s)
		}
		counts[strings.Join(profileFuncs(s), ";")] += s.Value
	}
	hot, half := counts["main;outer;hot"], counts["main;outer;half"]
	t.Logf("hot %d, half %d samples", hot, half)
	if hot == 0 || half == 0 || hot < half {
		t.Errorf("main;outer;hot %d, main;outer;half %d samples: want both, hot the larger\n%v", hot, half, counts)
	}
}

// TestCompileProfilePIDs profiles a running process (Options.PIDs, -p)
// while another runs the same code: every sample counted is the traced
// process's, until exit() after 200 of them.
func TestCompileProfilePIDs(t *testing.T) {
	testutil.RequireBPF(t)
	bin := testutil.BuildSpin(t)
	var spinners []*exec.Cmd
	for range 2 {
		spinners = append(spinners, testutil.StartSpin(t, bin, "100000000000"))
	}
	pid := spinners[0].Process.Pid
	src := `profile:hz:997 { @[ustack] = count(); @n = @n + 1; if (@n == 200) { exit(); } }`
	prog, err := trace.Compile("-e", src, &trace.CompileOptions{PID: pid})
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	tr := runToEnd(t, prog, &trace.Options{PID: pid, Stdout: &out})
	stacks, err := tr.Stacks()
	if err != nil {
		t.Fatal(err)
	}
	var total, hot uint64
	for _, s := range stacks {
		if s.PID != pid {
			t.Errorf("a stack of process %d, not the traced %d: %+v", s.PID, pid, s)
		}
		total += s.Value
		if strings.Join(profileFuncs(s), ";") == "main;outer;hot" {
			hot += s.Value
		}
	}
	// exit() comes at the 200th sample; samples on other CPUs meanwhile
	// may add a few.
	if total < 200 || hot*10 < total*9 {
		t.Errorf("%d samples, %d in main;outer;hot: want at least 200, 90%% of them there\n%s", total, hot, out.String())
	}
}
