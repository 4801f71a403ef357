package trace_test

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"

	"github.com/usdtkit/usdtkit/internal/testutil"
	"github.com/usdtkit/usdtkit/trace"
	"github.com/usdtkit/usdtkit/uprobe"
)

// TestCompileErrors checks where each error of a program is reported and
// that errors.As and errors.Is find what callers branch on.
func TestCompileErrors(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name      string
		src       string
		line, col int   // of the first CompileError; 0: none
		is        error // errors.Is, when not nil
	}{
		{"syntax", "BEGIN {\n  @x = count(;\n}", 2, 14, nil},
		{"no such probe", "BEGIN { }\nusdt:" + exe + ":nosuch:probe { @ = count(); }", 2, 1, nil},
		{"no such function", "uprobe:" + exe + ":no_such_function_xyz { @ = count(); }", 1, 1, nil},
		{"arg of a uretprobe", "uretprobe:libc:malloc { @ = sum(arg0); }", 1, 33, nil},
		{"arg6 of a uprobe", "uprobe:libc:malloc { @ = sum(arg6); }", 1, 30, nil},
		{"missing file", "uprobe:/no/such/file:f { @ = count(); }", 0, 0, os.ErrNotExist},
		{"empty path", "usdt::a:b { @ = count(); }", 1, 1, nil},
		{"empty uprobe path", "BEGIN { }\nuprobe::malloc { @ = count(); }", 2, 1, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			prog, err := trace.Compile("t.bt", tt.src, nil)
			if err == nil || prog != nil {
				t.Fatalf("Compile = %v, %v; want an error", prog, err)
			}
			var ce *trace.CompileError
			switch {
			case tt.line != 0 && !errors.As(err, &ce):
				t.Fatalf("error %v: want a *CompileError", err)
			case tt.line != 0 && (ce.File != "t.bt" || ce.Line != tt.line || ce.Col != tt.col):
				t.Errorf("error at %s:%d:%d, want t.bt:%d:%d (%v)", ce.File, ce.Line, ce.Col, tt.line, tt.col, err)
			case tt.is != nil && !errors.Is(err, tt.is):
				t.Errorf("error %v: want errors.Is %v", err, tt.is)
			}
		})
	}
}

// TestCompileRefusesMidInstruction: a uprobe inside a function must start
// an instruction; offset 1 of a 10-byte movabs does not, offset 10 does.
func TestCompileRefusesMidInstruction(t *testing.T) {
	testutil.RequireTool(t, "gcc")
	dir := t.TempDir()
	src := filepath.Join(dir, "f.c")
	code := `__asm__(".globl longfirst\n.type longfirst, @function\nlongfirst:\n movabs $0x1122334455667788, %rax\n ret\n.size longfirst, .-longfirst\n");
int main(void) { return 0; }
`
	if err := os.WriteFile(src, []byte(code), 0o644); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "f")
	if out, err := exec.Command("gcc", "-o", bin, src).CombinedOutput(); err != nil {
		t.Fatalf("gcc: %v\n%s", err, out)
	}
	_, err := trace.Compile("t.bt", "uprobe:"+bin+":longfirst+1 { @ = count(); }", nil)
	if !errors.Is(err, uprobe.ErrNotBoundary) {
		t.Errorf("longfirst+1: have %v, want ErrNotBoundary", err)
	}
	if _, err := trace.Compile("t.bt", "uprobe:"+bin+":longfirst+10 { @ = count(); }", nil); err != nil {
		t.Errorf("longfirst+10: %v", err)
	}
}

// TestCompileFunctions compiles a program of native functions and
// BEGIN/END against libc, without attaching.
func TestCompileFunctions(t *testing.T) {
	prog, err := trace.Compile("t.bt", `BEGIN { @b = 1; }
uprobe:libc:malloc, uprobe:libc:free { @[probe] = count(); @h = hist(arg0); }
uretprobe:libc:malloc { @r = max(retval); }
END { clear(@h); }`, nil)
	if err != nil {
		t.Fatal(err)
	}
	if prog.Probes() != 3 || prog.Sites() != 3 {
		t.Errorf("%d probes at %d sites, want 3 at 3", prog.Probes(), prog.Sites())
	}
}

// TestCompileDuplicateSites: a block whose probes name one function
// twice attaches to it once.
func TestCompileDuplicateSites(t *testing.T) {
	prog, err := trace.Compile("t.bt", `uprobe:libc:malloc, uprobe:libc:mallo? { @ = count(); }`, nil)
	if err != nil {
		t.Fatal(err)
	}
	if prog.Sites() != 1 {
		t.Errorf("%d sites, want 1", prog.Sites())
	}
}

// TestCompileEmptyPath: uprobe::FUNC and uretprobe::FUNC look in the
// executable of -c (CompileOptions.Executable) or every object of the
// process (PID), as usdt::P:N does.
func TestCompileEmptyPath(t *testing.T) {
	bin := testutil.BuildTracee(t, "-O2")
	const src = `uprobe::fbench, uretprobe::fbench { @[probe] = count(); }`
	prog, err := trace.Compile("t.bt", src, &trace.CompileOptions{Executable: bin})
	if err != nil {
		t.Fatal(err)
	}
	if prog.Sites() != 2 {
		t.Errorf("Executable: %d sites, want fbench's entry and return", prog.Sites())
	}
	tr := testutil.StartTracee(t, bin)
	tr.WaitReady(t)
	prog, err = trace.Compile("t.bt", src+"\nuprobe::malloc { @m = count(); }", &trace.CompileOptions{PID: tr.PID()})
	if err != nil {
		t.Fatal(err)
	}
	if prog.Sites() < 3 {
		t.Errorf("PID: %d sites, want fbench's two and malloc's in libc", prog.Sites())
	}
	tr.Quit(t)
}

// TestCompileFiles compiles the fuzz seeds: the good ones compile, bad.bt
// fails at its first line.
func TestCompileFiles(t *testing.T) {
	for _, tt := range []struct {
		file string
		line int // of the error; 0: none
	}{{"begin.bt", 0}, {"libc.bt", 0}, {"bad.bt", 1}} {
		b, err := os.ReadFile("testdata/" + tt.file)
		if err != nil {
			t.Fatal(err)
		}
		_, err = trace.Compile(tt.file, string(b), nil)
		var ce *trace.CompileError
		switch {
		case tt.line == 0 && err != nil:
			t.Errorf("%s: %v", tt.file, err)
		case tt.line != 0 && (!errors.As(err, &ce) || ce.Line != tt.line):
			t.Errorf("%s: error %v, want a CompileError at line %d", tt.file, err, tt.line)
		}
	}
}

// TestCompileSkipsUnmatched: attach points that match nothing are skipped
// with a warning each when others match (Debian's sslsnoop.bt names
// libcrypto functions stripped builds lack), a block left with none is
// dropped, and a program none of whose attach points match still fails.
func TestCompileSkipsUnmatched(t *testing.T) {
	tests := []struct {
		name     string
		src      string
		sites    int      // want; -1: an error
		warnings []string // want, in order
	}{
		{
			name:  "one of a block",
			src:   "uprobe:libc:getpid,\nuprobe:libc:no_such_function_xyz { @ = count(); }",
			sites: 1, warnings: []string{"t.bt:2:1: uprobe:libc:no_such_function_xyz: matches nothing; skipped"},
		},
		{
			name:  "a whole block",
			src:   "uprobe:libc:getpid { @ = count(); }\nuretprobe:libc:no_such_function_xyz { @r = sum(retval); }\nEND { print(@r); }",
			sites: 1, warnings: []string{"t.bt:2:1: uretprobe:libc:no_such_function_xyz: matches nothing; skipped"},
		},
		{name: "none matches", src: "BEGIN { }\nuprobe:libc:no_such_function_xyz,\nuprobe:libc:no_such_function_abc { @ = count(); }", sites: -1},
		{name: "another error", src: "uprobe:libc:getpid { @ = count(); @ = 1; }\nuprobe:libc:no_such_function_xyz { }", sites: -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var warnings []string
			prog, err := trace.Compile("t.bt", tt.src, &trace.CompileOptions{Warn: func(err error) { warnings = append(warnings, err.Error()) }})
			if tt.sites < 0 {
				var ce *trace.CompileError
				if !errors.As(err, &ce) {
					t.Fatalf("Compile: %v; want a *CompileError", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Compile: %v", err)
			}
			if prog.Sites() != tt.sites || !slices.Equal(warnings, tt.warnings) {
				t.Errorf("have %d sites, warnings %q; want %d, %q", prog.Sites(), warnings, tt.sites, tt.warnings)
			}
		})
	}
}
