package gen

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/usdtkit/usdtkit/dynsdt"
	"github.com/usdtkit/usdtkit/internal/testutil"
	"github.com/usdtkit/usdtkit/internal/tracetest"
	"github.com/usdtkit/usdtkit/sdt"
	"github.com/usdtkit/usdtkit/trace"
)

// hostileProviders name probes and providers after C and C++ keywords,
// names of the standard headers and the C runtime, names the header's
// own macros take and the macros' parameters: each used to give a header
// that did not compile, or a macro that called something else.
var hostileProviders = []*dynsdt.ProviderSpec{
	{Name: "hn", Probes: []dynsdt.ProbeSpec{
		{Name: "int", Args: []dynsdt.ArgType{dynsdt.Int32}}, {Name: "stdin", Args: []dynsdt.ArgType{dynsdt.Int32}},
		{Name: "main", Args: []dynsdt.ArgType{dynsdt.Int32}}, {Name: "arg0", Args: []dynsdt.ArgType{dynsdt.Int32, dynsdt.Int32}},
		{Name: "arg1", Args: []dynsdt.ArgType{dynsdt.String}}, {Name: "bool", Args: []dynsdt.ArgType{dynsdt.Bool}},
		{Name: "true"}, {Name: "int32_t"}, {Name: "linux"}, {Name: "unix"}, {Name: "class"},
		{Name: "and"}, {Name: "NULL"}, {Name: "EOF"}, {Name: "errno"}, {Name: "size_t"},
		{Name: "__x"}, {Name: "_X"}, {Name: "HN_INT"}, {Name: "x__enabled"}, {Name: "x"},
		{Name: "USDTKIT_UNLIKELY"}, {Name: "ok", Args: []dynsdt.ArgType{dynsdt.Int64}},
	}},
	{Name: "int8", Probes: []dynsdt.ProbeSpec{{Name: "max"}, {Name: "c", Args: []dynsdt.ArgType{dynsdt.Int32}}, {Name: "min"}, {Name: "fine"}}},
	{Name: "usdtkit", Probes: []dynsdt.ProbeSpec{{Name: "semaphore"}, {Name: "unlikely", Args: []dynsdt.ArgType{dynsdt.Int32}}, {Name: "usdtkit_h"}}},
}

// useHostile returns C code that includes the standard headers a program
// would, then p's header twice, fires every probe the header offers a way
// to fire, and uses the standard names afterwards.
func useHostile(p *dynsdt.ProviderSpec) string {
	var b strings.Builder
	b.WriteString("#include <assert.h>\n#include <errno.h>\n#include <stddef.h>\n#include <stdio.h>\n#include <stdlib.h>\n")
	b.WriteString("#include \"" + p.Name + ".h\"\n#include \"" + p.Name + ".h\"\nint main(void) {\n")
	for i, h := range headerProbes(p) {
		pr := p.Probes[i]
		var args []string
		for range pr.Args {
			args = append(args, "0")
		}
		call := "(" + strings.Join(args, ", ") + ");\n"
		b.WriteString("\t" + dynsdt.FireSymbol(p.Name, pr.Name) + call)
		if h.macro != "" {
			b.WriteString("\tif (" + h.macro + "_ENABLED()) " + h.macro + call)
		}
	}
	b.WriteString("\terrno = 0;\n\tassert(stdin != NULL);\n\tif (fputs(\"\", stdout) == EOF) return 1;\n")
	b.WriteString("\treturn (int)INT8_MAX + INT8_C(1) - 128 + (true ? 0 : 1);\n}\n")
	return b.String()
}

// TestGenerateHeaderHostileNames compiles a program using the headers of
// hostileProviders as C99, C11, GNU C11 (where linux and unix are macros)
// and C++17, with warnings as errors.
func TestGenerateHeaderHostileNames(t *testing.T) {
	compilers := []struct{ tool, lang, std string }{
		{"gcc", "c", "-std=c99"}, {"gcc", "c", "-std=c11"}, {"gcc", "c", "-std=gnu11"}, {"g++", "c++", "-std=c++17"},
	}
	for _, c := range compilers {
		tool := testutil.RequireTool(t, c.tool)
		for _, p := range hostileProviders {
			t.Run(c.std+"/"+p.Name, func(t *testing.T) {
				if _, err := dynsdt.Build(p, dynsdt.HostMachine, nil); err != nil {
					t.Fatal(err)
				}
				dir := t.TempDir()
				if err := os.WriteFile(filepath.Join(dir, p.Name+".h"), Header(p), 0o644); err != nil {
					t.Fatal(err)
				}
				src := useHostile(p)
				if err := os.WriteFile(filepath.Join(dir, "use.c"), []byte(src), 0o644); err != nil {
					t.Fatal(err)
				}
				cmd := exec.Command(tool, "-x", c.lang, c.std, "-fsyntax-only", "-Wall", "-Wextra", "-pedantic", "-Werror", "use.c")
				cmd.Dir = dir
				if out, err := cmd.CombinedOutput(); err != nil {
					t.Fatalf("%s %s: %v\n%s\n%s\n%s", tool, c.std, err, out, src, Header(p))
				}
			})
		}
	}
	// The names the issue reported keep their macros.
	hs := headerProbes(hostileProviders[0])
	for i, pr := range hostileProviders[0].Probes[:4] {
		if hs[i].macro == "" {
			t.Errorf("probe %s: no macros (%s)", pr.Name, hs[i].noMacro)
		}
	}
}

// hostileCaller fires hn's probes int, stdin, main and arg0 through the
// header's macros for each line it reads, without stdio: the shared object
// exports a function named stdin, which a program linking it and reading
// libc's stdin would find instead.
const hostileCaller = `#include <unistd.h>
#include "hn.h"
int main(void) {
	char c;
	if (write(1, "ready\n", 6) != 6) return 1;
	while (read(0, &c, 1) == 1) {
		if (c != '\n') continue;
		if (HN_INT_ENABLED()) HN_INT(1);
		if (HN_STDIN_ENABLED()) HN_STDIN(2);
		if (HN_MAIN_ENABLED()) HN_MAIN(3);
		if (HN_ARG0_ENABLED()) HN_ARG0(4, 5);
		if (write(1, "fired\n", 6) != 6) return 1;
	}
	return 0;
}
`

// TestHeaderHostileNamesFire links a C program against the .so of probes
// named int, stdin, main and arg0, fires them through the header's macros
// while traced, and checks each event's probe and arguments. Calling the
// stub by the symbol main would call the program's own main.
func TestHeaderHostileNamesFire(t *testing.T) {
	testutil.RequireBPF(t)
	gcc := testutil.RequireTool(t, "gcc")
	spec := &dynsdt.ProviderSpec{Name: "hn", Probes: []dynsdt.ProbeSpec{
		{Name: "int", Args: []dynsdt.ArgType{dynsdt.Int32}}, {Name: "stdin", Args: []dynsdt.ArgType{dynsdt.Int32}},
		{Name: "main", Args: []dynsdt.ArgType{dynsdt.Int32}}, {Name: "arg0", Args: []dynsdt.ArgType{dynsdt.Int32, dynsdt.Int32}},
	}}
	dir := t.TempDir()
	files, err := Files(spec, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := WriteFiles(dir, files); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "caller.c"), []byte(hostileCaller), 0o644); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "caller")
	build := exec.Command(gcc, "-O2", "-Wall", "-Werror", "-o", bin, "caller.c", dynsdt.SOName("hn"), "-Wl,-rpath,"+dir)
	build.Dir = dir
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("gcc: %v\n%s", err, out)
	}
	c := testutil.StartCmd(t, exec.Command(bin))
	c.Expect(t, "ready")
	probes, err := sdt.List(&sdt.ListOptions{PID: c.PID(), Selectors: []sdt.Selector{{Provider: "hn"}}})
	if err != nil || len(probes) != len(spec.Probes) {
		t.Fatalf("list: %v, %d probes, want %d", err, len(probes), len(spec.Probes))
	}
	tr := tracetest.Start(t, []trace.EventProbe{{Probe: "usdt::hn:*"}}, c.PID(), nil)
	c.Send(t, "")
	c.Expect(t, "fired")
	var have []string
	for range spec.Probes {
		ev := tr.Next(t)
		n := 1
		if ev.Name == "hn:arg0" {
			n = 2
		}
		have = append(have, fmt.Sprint(ev.Name, tracetest.Raw(ev)[:n]))
	}
	want := []string{"hn:int[1]", "hn:stdin[2]", "hn:main[3]", "hn:arg0[4 5]"}
	if !slices.Equal(have, want) {
		t.Errorf("events: have %q, want %q", have, want)
	}
}
