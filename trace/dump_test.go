package trace_test

import (
	"strings"
	"testing"

	"github.com/usdtkit/usdtkit/trace"
)

// TestDump: each stage prints what that stage produced for a program on
// libc's functions: the canonical source, the checked types, the BPF.
func TestDump(t *testing.T) {
	prog, err := trace.Compile("t.bt", `uprobe:libc:malloc /pid==1/ { @s[comm, pid] = sum(arg0*2+1); $x = str(arg1); } END { @n = count(); }`, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := map[trace.Stage][]string{
		trace.StageAST:   {"uprobe:libc:malloc /pid == 1/ {\n", "@s[comm, pid] = sum((arg0 * 2) + 1);\n", "END {\n"},
		trace.StageTypes: {"@n: count()\n", "@s[string[16], uint64]: sum(uint64)\n", "block 0 $x: string[64]\n"},
		trace.StageBPF:   {"program block0 Kprobe TraceUprobeMulti\n", "program block1 ", "Call FnGetCurrentComm\n", "imm: <token of block 1>\n"},
	}
	for _, s := range trace.Stages {
		var b strings.Builder
		if err := prog.Dump(&b, s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
		for _, w := range want[s] {
			if !strings.Contains(b.String(), w) {
				t.Errorf("%s: no %q in\n%s", s, w, b.String())
			}
		}
	}
	if err := prog.Dump(&strings.Builder{}, "tokens"); err == nil || !strings.Contains(err.Error(), "tokens") {
		t.Errorf("Dump of an unknown stage: %v, want an error naming it", err)
	}
}
