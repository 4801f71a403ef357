package trace_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/usdtkit/usdtkit/internal/testutil"
	"github.com/usdtkit/usdtkit/trace"
)

// TestCompileListsOnce compiles programs of three usdt probes, then three
// function probes, of a process that maps a truncated library: the
// process's objects are listed once for each whole program, so the
// library is warned about once, not once per probe, and every probe
// resolves.
func TestCompileListsOnce(t *testing.T) {
	gcc := testutil.RequireTool(t, "gcc")
	dir := t.TempDir()
	exe := filepath.Join(dir, "swapper")
	testutil.BuildSwapper(t, exe, false)
	src := filepath.Join(dir, "good.c")
	if err := os.WriteFile(src, []byte("#include <sys/sdt.h>\nvoid good(void) { DTRACE_PROBE(good, lib); }\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	good := filepath.Join(dir, "libgood.so")
	if b, err := exec.Command(gcc, "-shared", "-fPIC", "-o", good, src).CombinedOutput(); err != nil {
		t.Fatalf("gcc: %v\n%s", err, b)
	}
	img, err := os.ReadFile(good)
	if err != nil {
		t.Fatal(err)
	}
	truncated := filepath.Join(dir, "libtruncated.so")
	if err := os.WriteFile(truncated, img[:256], 0o644); err != nil {
		t.Fatal(err)
	}
	pid := testutil.StartMapper(t, exe, good, truncated).Process.Pid

	var warnings []error
	prog, err := trace.Compile("t.bt", `usdt::good:lib { @a = count(); } usdt::good:lib { @b = count(); } usdt::own:only { @c = count(); }`,
		&trace.CompileOptions{PID: pid, Warn: func(err error) { warnings = append(warnings, err) }})
	if err != nil {
		t.Fatal(err)
	}
	if len(warnings) != 1 {
		t.Errorf("have %d warnings, want 1 (the truncated library): %v", len(warnings), warnings)
	}
	if prog.Probes() != 2 || prog.Sites() != 3 {
		t.Errorf("have %d probes at %d sites, want good:lib and own:only at 3 (good:lib in two blocks)", prog.Probes(), prog.Sites())
	}

	// The same for functions: the symbol tables are read once.
	warnings = nil
	prog, err = trace.Compile("t.bt", `uprobe::good { @a = count(); } uretprobe::good { @b = count(); } uprobe::main { @c = count(); }`,
		&trace.CompileOptions{PID: pid, Warn: func(err error) { warnings = append(warnings, err) }})
	if err != nil {
		t.Fatal(err)
	}
	if len(warnings) != 1 {
		t.Errorf("functions: have %d warnings, want 1 (the truncated library): %v", len(warnings), warnings)
	}
	if prog.Probes() != 3 || prog.Sites() != 3 {
		t.Errorf("functions: have %d probes at %d sites, want good's entry and return and main's entry", prog.Probes(), prog.Sites())
	}
}
