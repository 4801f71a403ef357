package main

import (
	"os/exec"
	"regexp"
	"strings"
	"testing"

	"github.com/usdtkit/usdtkit/internal/testutil"
)

// reUnnamedJIT is the warning for JIT frames no perf map named.
var reUnnamedJIT = regexp.MustCompile(`usdtkit: \d+ stack frames in JIT code are unnamed`)

// TestTraceCommandJavaPerfMap profiles a JVM started by -c, which maps
// libjvm and its code cache after the trace starts and writes its perf
// map only at exit (-XX:+DumpPerfMapAtExit): libjvm's frames are named
// from the mappings read while it ran, the compiled HotExit.work from the
// map once the command has exited. Without the map the
// JIT frames stay unnamed and one warning says how many and why.
func TestTraceCommandJavaPerfMap(t *testing.T) {
	testutil.RequireFile(t, testutil.LibJVM)
	javac := testutil.RequireTool(t, "javac")
	java := testutil.RequireTool(t, "java")
	dir := t.TempDir()
	if out, err := exec.Command(javac, "-d", dir, "testdata/stacks/HotExit.java").CombinedOutput(); err != nil {
		t.Fatalf("javac: %v\n%s", err, out)
	}
	base := java + " -Xbatch -XX:+PreserveFramePointer -XX:+UnlockDiagnosticVMOptions"
	for _, tc := range []struct {
		name  string
		flags string
		named bool // HotExit.work named, no warning
	}{
		{"map at exit", " -XX:+DumpPerfMapAtExit", true},
		{"no map", "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			run := startTrace(t, "trace", "-c", base+tc.flags+" -cp "+dir+" HotExit",
				"-e", "profile:hz:499 /pid == cpid/ { @[ustack] = count(); }")
			code, out, errs := run.wait(t)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errs)
			}
			// libjvm, mapped after the trace started, is named in
			// both: Java's main method is called through its
			// JavaCalls::call_helper.
			if !strings.Contains(out, "JavaCalls::call_helper(") {
				t.Errorf("no libjvm frame JavaCalls::call_helper in the stacks:\n%s", out)
			}
			named := strings.Contains(out, "HotExit.work")
			warned := reUnnamedJIT.MatchString(out + errs)
			if named != tc.named || warned == tc.named {
				t.Errorf("HotExit.work named: %v, unnamed JIT warning: %v; want named %v\n%s", named, warned, tc.named, out)
			}
		})
	}
}
