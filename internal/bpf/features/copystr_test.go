package features

import (
	"strings"
	"testing"

	"github.com/usdtkit/usdtkit/internal/testutil"
)

// TestSleepableCopyStr asserts what our CI machines (Linux 6.18) have: a
// sleepable uprobe_multi program calling bpf_copy_from_user_str loads and
// attaches (Linux 6.12+).
func TestSleepableCopyStr(t *testing.T) {
	testutil.RequireBPF(t)
	if !kernelAtLeast(t, 6, 12) {
		t.Skip("bpf_copy_from_user_str is in Linux 6.12+")
	}
	id, err := SleepableCopyStr()
	if err != nil || id == 0 {
		t.Fatalf("have %d, %v; want a BTF type id, nil", id, err)
	}
}

// TestCopyStrNeedsSleepable checks that the probe's program tests what it
// claims: without BPF_F_SLEEPABLE the verifier refuses the kfunc call.
func TestCopyStrNeedsSleepable(t *testing.T) {
	testutil.RequireBPF(t)
	id, err := SleepableCopyStr()
	if err != nil {
		t.Skipf("no bpf_copy_from_user_str: %v", err)
	}
	prog, err := copyStrProgram(id, 0)
	if err == nil {
		prog.Close()
		t.Fatal("a program that is not sleepable called bpf_copy_from_user_str")
	}
	if !strings.Contains(err.Error(), "sleepable") {
		t.Errorf("have %v, want the verifier's complaint about sleepable kfuncs", err)
	}
}
