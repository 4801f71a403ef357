package trace_test

import (
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
	mapper, _, _ := testutil.StartGoodAndTruncated(t, "#include <sys/sdt.h>\nvoid good(void) { DTRACE_PROBE(good, lib); }\n")
	pid := mapper.Process.Pid

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
