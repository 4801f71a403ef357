package main

import (
	"bytes"
	"context"
	"debug/elf"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/usdtkit/usdtkit/dynsdt"
	"github.com/usdtkit/usdtkit/dynsdt/gen"
	"github.com/usdtkit/usdtkit/elfnotes"
	"github.com/usdtkit/usdtkit/internal/testutil"
)

const genD = `/* myapp's probes */
provider myapp {
	probe request__start(const char *path, int n);
	probe request__done(long long, bool ok);
	probe tick();
};
#pragma D attributes Evolving/Evolving/Common provider myapp provider
`

var genFlags = []string{"--provider", "myapp", "--probe", "request__start:string,int32", "--probe", "request__done:int64,bool", "--probe", "tick"}

var genSpec = dynsdt.ProviderSpec{Name: "myapp", Probes: []dynsdt.ProbeSpec{
	{Name: "request__start", Args: []dynsdt.ArgType{dynsdt.String, dynsdt.Int32}},
	{Name: "request__done", Args: []dynsdt.ArgType{dynsdt.Int64, dynsdt.Bool}},
	{Name: "tick"},
}}

// genDir runs usdtkit gen with args into a new directory and returns it.
func genDir(t *testing.T, args ...string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "out")
	out := usdtkit(t, append([]string{"gen", "-o", dir}, args...)...)
	want := strings.Join([]string{filepath.Join(dir, "myapp.so"), filepath.Join(dir, "myapp.h"), filepath.Join(dir, "myapp.go")}, "\n") + "\n"
	if out != want {
		t.Fatalf("stdout: have %q, want %q", out, want)
	}
	return dir
}

func writeGenD(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "myapp.d")
	if err := os.WriteFile(path, []byte(genD), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestGen checks that a .d file and the same probes given by flags give
// the same files: the library's header and Go code, and a shared object
// whose notes readelf reads as declared.
func TestGen(t *testing.T) {
	fromD := genDir(t, writeGenD(t))
	fromFlags := genDir(t, genFlags...)
	for _, name := range []string{"myapp.so", "myapp.h", "myapp.go"} {
		if !bytes.Equal(readFile(t, filepath.Join(fromD, name)), readFile(t, filepath.Join(fromFlags, name))) {
			t.Errorf("%s differs between the .d file and --probe", name)
		}
	}
	if have, want := readFile(t, filepath.Join(fromD, "myapp.h")), gen.Header(&genSpec); !bytes.Equal(have, want) {
		t.Errorf("myapp.h: have\n%s\nwant\n%s", have, want)
	}
	wantGo, err := gen.Go(&genSpec, "myapp")
	if err != nil {
		t.Fatal(err)
	}
	if have := readFile(t, filepath.Join(fromD, "myapp.go")); !bytes.Equal(have, wantGo) {
		t.Errorf("myapp.go: have\n%s\nwant\n%s", have, wantGo)
	}
	notes := readelfNotes(t, filepath.Join(fromD, "myapp.so"))
	if len(notes) != len(genSpec.Probes) {
		t.Fatalf("readelf -n: have %d notes, want %d", len(notes), len(genSpec.Probes))
	}
	for i, n := range notes {
		pr := genSpec.Probes[i]
		if n.provider != "myapp" || n.name != pr.Name || len(strings.Fields(n.args)) != len(pr.Args) || n.semaphore == 0 {
			t.Errorf("note %d: have %+v; want myapp:%s with %d arguments and a semaphore", i, n, pr.Name, len(pr.Args))
		}
	}
}

func TestGenPackage(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "out")
	usdtkit(t, append([]string{"gen", "-o", dir, "--package", "probes"}, genFlags...)...)
	if src := readFile(t, filepath.Join(dir, "myapp.go")); !bytes.Contains(src, []byte("\npackage probes\n")) {
		t.Errorf("myapp.go does not declare package probes:\n%s", src)
	}
}

func TestGenArm64(t *testing.T) {
	dir := genDir(t, append([]string{"--arch", "arm64"}, genFlags...)...)
	so := filepath.Join(dir, "myapp.so")
	out, err := exec.Command(testutil.RequireTool(t, "readelf"), "-h", so).Output()
	if err != nil || !bytes.Contains(out, []byte("AArch64")) {
		t.Fatalf("readelf -h %s: %v\n%s", so, err, out)
	}
	notes := readelfNotes(t, so)
	if len(notes) != 3 || notes[0].args != "8@x0 -4@x1" {
		t.Errorf("readelf -n: have %+v, want request__start with arguments 8@x0 -4@x1 first", notes)
	}
}

// genUseC calls every probe through the header, by function and by macro,
// checks that no semaphore is set, and prints "ok".
const genUseC = `#include <stdio.h>
#include "myapp.h"

int main(void) {
	myapp_request__start_fire("/index.html", 200);
	MYAPP_REQUEST_START("/", 1);
	myapp_request__done_fire(-1, true);
	MYAPP_REQUEST_DONE(2, false);
	MYAPP_TICK();
	if (MYAPP_REQUEST_START_ENABLED() || MYAPP_REQUEST_DONE_ENABLED() || MYAPP_TICK_ENABLED() ||
	    myapp_request__start_semaphore != 0) {
		puts("semaphore set without a tracer");
		return 1;
	}
	puts("ok");
	return 0;
}
`

// TestGenC compiles a C program with the generated header, links it with
// the generated shared object and runs it: the header's declarations and
// the object's dynamic symbols must agree, and the stubs (of each site
// kind a kernel can probe) must return.
func TestGenC(t *testing.T) {
	gcc := testutil.RequireTool(t, "gcc")
	for _, site := range []string{"auto", "nop5"} {
		t.Run(site, func(t *testing.T) {
			dir := genDir(t, "--site="+site, writeGenD(t))
			if err := os.WriteFile(filepath.Join(dir, "use.c"), []byte(genUseC), 0o644); err != nil {
				t.Fatal(err)
			}
			build := exec.Command(gcc, "-std=c11", "-Wall", "-Wextra", "-Werror", "-o", "use", "use.c", "myapp.so", "-Wl,-rpath,"+dir)
			build.Dir = dir
			if out, err := build.CombinedOutput(); err != nil {
				t.Fatalf("gcc: %v\n%s", err, out)
			}
			out, err := exec.Command(filepath.Join(dir, "use")).CombinedOutput()
			if err != nil || string(out) != "ok\n" {
				t.Fatalf("use: %v\n%s", err, out)
			}
		})
	}
}

// genPython calls the stubs of the shared object in argv[1] through ctypes,
// as examples/python does, and reads a semaphore.
const genPython = `import ctypes, sys
lib = ctypes.CDLL(sys.argv[1])
lib.myapp_request__start_fire.argtypes = [ctypes.c_char_p, ctypes.c_int32]
lib.myapp_request__start_fire.restype = None
lib.myapp_request__start_fire(b"/index.html", 200)
lib.myapp_request__done_fire(ctypes.c_int64(-1), ctypes.c_bool(True))
lib.myapp_tick_fire()
sem = ctypes.c_ushort.in_dll(lib, "myapp_request__start_semaphore")
print("ok" if sem.value == 0 else "semaphore %d" % sem.value)
`

func TestGenPythonCtypes(t *testing.T) {
	python := testutil.RequireTool(t, "python3")
	dir := genDir(t, genFlags...)
	out, err := exec.Command(python, "-c", genPython, filepath.Join(dir, "myapp.so")).CombinedOutput()
	if err != nil || string(out) != "ok\n" {
		t.Fatalf("python: %v\n%s", err, out)
	}
}

func TestGenErrors(t *testing.T) {
	d := writeGenD(t)
	bad := filepath.Join(t.TempDir(), "bad.d")
	if err := os.WriteFile(bad, []byte("provider p {\n\tprobe x(float);\n};\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	two := filepath.Join(t.TempDir(), "two.d")
	if err := os.WriteFile(two, []byte("provider a { probe x(); };\nprovider b { probe y(); };\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	tests := []struct {
		name string
		args []string
		want string // in the one line on stderr
	}{
		{"nothing", []string{"gen", "-o", out}, "give a .d file, or --provider"},
		{"provider without probe", []string{"gen", "-o", out, "--provider", "p"}, "at least one --probe"},
		{"both", append([]string{"gen", "-o", out, d}, genFlags...), "not both"},
		{"missing file", []string{"gen", "-o", out, "/no/such.d"}, "no such file"},
		{"bad .d", []string{"gen", "-o", out, bad}, bad + ":2:10: argument 0 of probe x: floating-point"},
		{"bad probe", []string{"gen", "-o", out, "--provider", "p", "--probe", "x:int"}, `unknown type "int"`},
		{"bad provider", []string{"gen", "-o", out, "--provider", "my-app", "--probe", "x"}, "not a C identifier"},
		{"duplicate probe", []string{"gen", "-o", out, "--provider", "p", "--probe", "x", "--probe", "x:int8"}, "declared twice"},
		{"bad arch", []string{"gen", "-o", out, "--arch", "ppc64", d}, `--arch "ppc64"`},
		{"bad site", []string{"gen", "-o", out, "--site", "nop7", d}, `--site: site "nop7": not a site kind (auto, nop, nop5, nop10)`},
		{"package for two", []string{"gen", "-o", out, "--package", "x", two}, "declares 2 providers"},
		{"bad package", []string{"gen", "-o", out, "--package", "my-pkg", d}, `package name "my-pkg"`},
		{"Go name clash", []string{"gen", "-o", out, "--provider", "p", "--probe", "a__b", "--probe", "a_b"}, "Go function AB"},
		{"two files", []string{"gen", "-o", out, d, d}, "accepts at most 1 arg"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(context.Background(), tt.args, &stdout, &stderr)
			lines := strings.Split(strings.TrimSuffix(stderr.String(), "\n"), "\n")
			if code != 1 || stdout.Len() != 0 || len(lines) != 1 || !strings.Contains(lines[0], tt.want) {
				t.Errorf("exit %d, stdout %q, stderr %q; want exit 1, no stdout, one line with %q", code, stdout.String(), stderr.String(), tt.want)
			}
		})
	}
	if entries, err := os.ReadDir(out); err != nil || len(entries) != 0 {
		t.Errorf("failed runs wrote %v (%v)", entries, err)
	}
}

// TestGenParseErrorKept checks that the CLI keeps ParseD's error as data.
func TestGenParseErrorKept(t *testing.T) {
	_, err := genProviders(&genOptions{}, []string{writeBad(t)})
	var perr *gen.ParseError
	if !errors.As(err, &perr) || perr.Line != 1 {
		t.Errorf("have %v, want a *gen.ParseError at line 1", err)
	}
}

func writeBad(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "x.d")
	if err := os.WriteFile(path, []byte("typedef int x_t;"), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestGenSymlink plants a symbolic link to another file under an output
// name: gen must refuse it and leave that file as it was.
func TestGenSymlink(t *testing.T) {
	victim := filepath.Join(t.TempDir(), "victim")
	if err := os.WriteFile(victim, []byte("victim\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.Symlink(victim, filepath.Join(dir, "myapp.h")); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), append([]string{"gen", "-o", dir}, genFlags...), &stdout, &stderr)
	if code != 1 || stdout.Len() != 0 {
		t.Errorf("exit %d, stdout %q, stderr %q; want exit 1 and no stdout", code, stdout.String(), stderr.String())
	}
	if b := readFile(t, victim); string(b) != "victim\n" {
		t.Errorf("victim overwritten through the symbolic link: %q", b)
	}
	if fi, err := os.Lstat(filepath.Join(dir, "myapp.h")); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("myapp.h: %v, %v; want the symbolic link left alone", fi, err)
	}
}

// genSites returns, per probe of the shared object in dir, the first 5
// bytes at the address its note gives (elfnotes), found in the file
// through its PT_LOAD segments (debug/elf).
func genSites(t *testing.T, dir string) [][]byte {
	t.Helper()
	so := filepath.Join(dir, "myapp.so")
	nf, err := elfnotes.Open(so)
	if err != nil {
		t.Fatal(err)
	}
	defer nf.Close()
	probes, err := nf.SDTProbes()
	if err != nil || len(probes) != len(genSpec.Probes) {
		t.Fatalf("%s: %d notes (%v), want %d", so, len(probes), err, len(genSpec.Probes))
	}
	ef, err := elf.Open(so)
	if err != nil {
		t.Fatal(err)
	}
	defer ef.Close()
	var sites [][]byte
	for _, p := range probes {
		var site []byte
		for _, prog := range ef.Progs {
			if prog.Type == elf.PT_LOAD && prog.Flags&elf.PF_X != 0 && p.Addr >= prog.Vaddr && p.Addr+5 <= prog.Vaddr+prog.Filesz {
				site = make([]byte, 5)
				if _, err := prog.ReadAt(site, int64(p.Addr-prog.Vaddr)); err != nil {
					t.Fatal(err)
				}
			}
		}
		if site == nil {
			t.Fatalf("%s:%s at %#x: in no executable PT_LOAD", p.Provider, p.Name, p.Addr)
		}
		sites = append(sites, site)
	}
	return sites
}

// TestGenSite: --site picks the kind of the x86-64 probe sites at the
// notes' addresses: the default and auto write the 1-byte nop (whatever
// USDTKIT_SITE says: the file runs elsewhere), --site=nop5 the 5-byte
// nop; --site changes nothing for --arch arm64 or --static.
func TestGenSite(t *testing.T) {
	t.Setenv(dynsdt.SiteEnv, "nop10")
	amd := []string{"--arch", "amd64"}
	def := genDir(t, append(amd, genFlags...)...)
	nop5 := genDir(t, append(append(amd, "--site=nop5"), genFlags...)...)
	nop5Insn := []byte{0x0f, 0x1f, 0x44, 0x00, 0x00}
	defSites, nop5Sites := genSites(t, def), genSites(t, nop5)
	for i := range defSites {
		if defSites[i][0] != 0x90 {
			t.Errorf("default: probe %d's site % x, want the 1-byte nop 90", i, defSites[i])
		}
		if !bytes.Equal(nop5Sites[i], nop5Insn) {
			t.Errorf("--site=nop5: probe %d's site % x, want % x", i, nop5Sites[i], nop5Insn)
		}
	}
	for _, args := range [][]string{{"--site=auto"}, {"--site", "nop"}} {
		dir := genDir(t, append(append(amd, args...), genFlags...)...)
		if !bytes.Equal(readFile(t, filepath.Join(dir, "myapp.so")), readFile(t, filepath.Join(def, "myapp.so"))) {
			t.Errorf("%v: myapp.so differs from the default's", args)
		}
	}

	arm := []string{"--arch", "arm64"}
	armDef := genDir(t, append(arm, genFlags...)...)
	armNop5 := genDir(t, append(append(arm, "--site=nop5"), genFlags...)...)
	if !bytes.Equal(readFile(t, filepath.Join(armDef, "myapp.so")), readFile(t, filepath.Join(armNop5, "myapp.so"))) {
		t.Error("--arch arm64 --site=nop5: myapp.so differs from --arch arm64's")
	}

	static := func(args ...string) string {
		dir := filepath.Join(t.TempDir(), "static")
		usdtkit(t, append(append([]string{"gen", "--static", "-o", dir}, args...), genFlags...)...)
		return dir
	}
	staticDef, staticNop5 := static(), static("--site=nop5")
	entries, err := os.ReadDir(staticDef)
	if err != nil || len(entries) == 0 {
		t.Fatalf("--static wrote %v (%v)", entries, err)
	}
	for _, e := range entries {
		if !bytes.Equal(readFile(t, filepath.Join(staticDef, e.Name())), readFile(t, filepath.Join(staticNop5, e.Name()))) {
			t.Errorf("--static --site=nop5: %s differs from --static's", e.Name())
		}
	}
}
