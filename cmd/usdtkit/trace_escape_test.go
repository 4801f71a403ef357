package main

import (
	"strings"
	"testing"

	"github.com/usdtkit/usdtkit/internal/testutil"
)

// TestTraceEscapesControls: a traced process that names itself with a
// terminal escape sequence (its comm) cannot make usdtkit send that
// sequence to the user's terminal, in printf and in map keys; the bytes
// print as \xNN.
func TestTraceEscapesControls(t *testing.T) {
	testutil.RequireBPF(t)
	py := testutil.RequireFile(t, testutil.Python311)
	// PR_SET_NAME (15), then one getpid for the probe.
	command := py + ` -c "import ctypes, os
libc = ctypes.CDLL(None)
libc.prctl(15, b'\x1b[2Jevil', 0, 0, 0)
os.getpid()"`
	src := `uprobe:libc:getpid /pid == cpid/ { printf("comm %s\n", comm); @[comm] = count(); }`
	out := runProgramCLI(t, "trace", "-c", command, "-e", src)
	if strings.Contains(out, "\x1b") {
		t.Errorf("output holds an ESC byte: %q", out)
	}
	for _, want := range []string{"comm \\x1b[2Jevil\n", "@[\\x1b[2Jevil]: 1\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("output has no %q:\n%q", want, out)
		}
	}
}
