package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"

	"github.com/usdtkit/usdtkit/internal/testutil"
)

// reCount is the line of a count() map without keys, or of --count's
// one probe.
var reCount = regexp.MustCompile(`(?m)^@(?:\[uprobe:[^\]]+\])?: (\d+)$`)

// TestTraceCommandLibrary traces functions of libraries a -c command maps
// only after it starts, which are not in the stopped process yet: a
// library built here that a program built here dlopens through its
// DT_RUNPATH, by short name and by path, and libjvm (found through the
// java executable's run path, in its lib/server) by short name. The hits
// counted are the calls made: dlo_work 3 times, JNI_CreateJavaVM at
// least once.
func TestTraceCommandLibrary(t *testing.T) {
	testutil.RequireBPF(t)
	gcc := testutil.RequireTool(t, "gcc")
	testutil.RequireFile(t, testutil.LibJVM)
	java := testutil.RequireTool(t, "java")
	dir := t.TempDir()
	lib := filepath.Join(dir, "lib", "libdlo.so")
	exe := filepath.Join(dir, "bin", "dlmain")
	for _, d := range []string{lib, exe} {
		if err := os.MkdirAll(filepath.Dir(d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, args := range [][]string{
		{"-O2", "-shared", "-fPIC", "-o", lib, "testdata/dlopen/dlo.c"},
		{"-O2", "-o", exe, "testdata/dlopen/main.c", "-Wl,--enable-new-dtags", "-Wl,-rpath,$ORIGIN/../lib", "-ldl"},
	} {
		if out, err := exec.Command(gcc, args...).CombinedOutput(); err != nil {
			t.Fatalf("gcc %v: %v\n%s", args, err, out)
		}
	}
	for _, tc := range []struct {
		name    string
		command string
		args    []string
		want    int
		atLeast bool
	}{
		{"dlopen short name", exe, []string{"-e", "uprobe:libdlo:dlo_work { @ = count(); }"}, 3, false},
		{"dlopen path", exe, []string{"-e", "uprobe:" + lib + ":dlo_work { @ = count(); }"}, 3, false},
		{"dlopen short name, --count", exe, []string{"--count", "uprobe:libdlo:dlo_work"}, 3, false},
		{"libjvm", java + " -version", []string{"-e", "uprobe:libjvm:JNI_CreateJavaVM { @ = count(); }"}, 1, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			run := startTrace(t, append([]string{"trace", "-c", tc.command}, tc.args...)...)
			code, out, errs := run.wait(t)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errs)
			}
			m := reCount.FindStringSubmatch(out)
			if m == nil {
				t.Fatalf("no count in %q (stderr %q)", out, errs)
			}
			n, err := strconv.Atoi(m[1])
			if err != nil || n < tc.want || !tc.atLeast && n != tc.want {
				t.Errorf("%q counted %s hits, want %d (at least: %v)", tc.args, m[1], tc.want, tc.atLeast)
			}
		})
	}
}
