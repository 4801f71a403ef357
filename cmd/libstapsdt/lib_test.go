package libstapsdt

import (
	"context"
	"debug/elf"
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"

	"github.com/usdtkit/usdtkit/elfnotes"
	"github.com/usdtkit/usdtkit/internal/elf/symtab"
	"github.com/usdtkit/usdtkit/internal/testutil"
	"github.com/usdtkit/usdtkit/internal/tracetest"
	"github.com/usdtkit/usdtkit/sdt"
	"github.com/usdtkit/usdtkit/trace"
)

// libDir holds the library the tests build once (buildLib), removed by
// TestMain.
var (
	libOnce sync.Once
	libDir  string
	libErr  error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if libDir != "" {
		os.RemoveAll(libDir)
	}
	os.Exit(code)
}

// buildLib builds the library as make libstapsdt does, into a directory
// holding libstapsdt.so.0, the libstapsdt.so link and libstapsdt.h, and
// returns that directory.
func buildLib(t testing.TB) string {
	t.Helper()
	testutil.RequireTool(t, "gcc")
	libOnce.Do(func() {
		dir, err := os.MkdirTemp("", "libstapsdt-test-")
		if err != nil {
			libErr = err
			return
		}
		libDir = dir
		testutil.BuildLibstapsdt(t, dir, "gcc")
	})
	if libErr != nil {
		t.Fatal(libErr)
	}
	return libDir
}

// TestExports checks the library's dynamic symbols: libstapsdt's eight
// functions and nothing of the Go runtime or cgo.
func TestExports(t *testing.T) {
	f, err := elfnotes.Open(filepath.Join(buildLib(t), "libstapsdt.so.0"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	syms, err := symtab.Read(f)
	if err != nil {
		t.Fatal(err)
	}
	var have []string
	for _, s := range syms {
		if s.Dynamic && s.Bind == elf.STB_GLOBAL && s.Section != uint16(elf.SHN_UNDEF) {
			have = append(have, s.Name)
		}
	}
	slices.Sort(have)
	want := []string{"probeFire", "probeIsEnabled", "providerAddProbe", "providerDestroy", "providerInit",
		"providerLoad", "providerUnload", "providerUseMemfd"}
	equalLines(t, "exported", have, want)
}

// buildC compiles the C program src (in testdata) against the library,
// with the extra compiler flags cflags.
func buildC(t testing.TB, src string, cflags ...string) string {
	t.Helper()
	return buildCWith(t, buildLib(t), src, cflags...)
}

// buildCWith is buildC against the library in the directory lib.
func buildCWith(t testing.TB, lib, src string, cflags ...string) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), strings.TrimSuffix(src, ".c"))
	args := append([]string{"-O2", "-Wall", "-Werror"}, cflags...)
	args = append(args, "-o", bin, filepath.Join("testdata", src),
		"-I"+lib, "-L"+lib, "-lstapsdt", "-lpthread", "-Wl,-rpath,"+lib)
	cmd := exec.Command("gcc", args...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("gcc %s: %v\n%s", src, err, out)
	}
	return bin
}

// TestABI compiles testdata/abi.c: libstapsdt.h's struct layouts, enum
// values and prototypes are libstapsdt's, and its inline macros compile
// in C99, C11 and GNU C17 and, in a C++ file, as C++11, with gcc and (if
// installed) clang.
func TestABI(t *testing.T) {
	testutil.RequireTool(t, "gcc")
	cxx := filepath.Join(t.TempDir(), "use.cc")
	if err := os.WriteFile(cxx, []byte(`#include "libstapsdt.h"
int f(SDTProbe_t *p) { probeFire(p); probeFire(p, 1, 2ULL); probeFire(nullptr, 1); return probeIsEnabled(p) + (probeIsEnabled)(p); }
`), 0o644); err != nil {
		t.Fatal(err)
	}
	compilers := [][2]string{{"gcc", "g++"}}
	if _, err := exec.LookPath("clang"); err == nil {
		compilers = append(compilers, [2]string{"clang", "clang++"})
	}
	for _, cc := range compilers {
		for _, std := range []string{"-std=c99", "-std=c11", "-std=gnu17"} {
			cmd := exec.Command(cc[0], std, "-Wall", "-Werror", "-c", "-o", filepath.Join(t.TempDir(), "abi.o"), "-I.", "testdata/abi.c")
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Errorf("%s %s abi.c: %v\n%s", cc[0], std, err, out)
			}
		}
		if _, err := exec.LookPath(cc[1]); err != nil {
			continue
		}
		cmd := exec.Command(cc[1], "-std=c++11", "-Wall", "-Werror", "-c", "-o", filepath.Join(t.TempDir(), "use.o"), "-I.", cxx)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("%s use.cc: %v\n%s", cc[1], err, out)
		}
	}
}

// wantArg is the value the driver passes as argument j of probe nK, as a
// tracer reads it: sign-extended for signed types (see driver.c's VAL).
func wantArg(k, j int) uint64 {
	K, J := int64(k), int64(j)
	switch j % 8 {
	case 0:
		return uint64(int64(int8(-J - 1 - K)))
	case 1:
		return uint64(uint8(200 + K + J))
	case 2:
		return uint64(int64(int16(-(1000*K + J))))
	case 3:
		return uint64(uint16(60000 + K*10 + J))
	case 4:
		return uint64(int64(int32(-(100000*K + J))))
	case 5:
		return uint64(uint32(4000000000 + K*10 + J))
	case 6:
		return uint64(-(1 << 40) - K*10 - J)
	default:
		return 1<<63 + uint64(K*10+J)
	}
}

// wantFire is what a tracer of driver's "fire" command reads, one line
// per probe.
func wantFire() []string {
	var want []string
	for k := 1; k <= 12; k++ {
		args := make([]uint64, k)
		for j := range args {
			args[j] = wantArg(k, j)
		}
		want = append(want, fmt.Sprint("cprov:n", k, " ", args))
	}
	return append(want, fmt.Sprint("cprov:str hello from C ", uint64(1<<64-42)))
}

// listProbes lists the probes of providers in process pid.
func listProbes(t *testing.T, pid int, providers ...string) []sdt.Probe {
	t.Helper()
	var sel []sdt.Selector
	for _, p := range providers {
		sel = append(sel, sdt.Selector{Provider: p})
	}
	probes, err := sdt.List(&sdt.ListOptions{PID: pid, Selectors: sel})
	if err != nil {
		t.Fatal(err)
	}
	return probes
}

// startTrace traces the probes of providers in pid (trace.CompileEvents),
// reading cprov:str's first argument as a string.
func startTrace(t *testing.T, pid int, providers ...string) *tracetest.Tracer {
	t.Helper()
	var probes []trace.EventProbe
	for _, p := range providers {
		if p == "cprov" {
			probes = append(probes, trace.EventProbe{Probe: "usdt::cprov:n*,usdt::cprov:seq"},
				trace.EventProbe{Probe: "usdt::cprov:str", Strings: []int{0}})
		} else {
			probes = append(probes, trace.EventProbe{Probe: "usdt::" + p + ":*"})
		}
	}
	tr := tracetest.Start(t, probes, pid, nil)
	if len(tr.Warnings) > 0 {
		t.Errorf("warnings: %v", tr.Warnings)
	}
	return tr
}

// readEvents reads n events as "provider:probe args" lines ("cprov:str
// STRING ARG1" for the string probe), checking each came from pid.
func readEvents(t *testing.T, tr *tracetest.Tracer, pid, n int) []string {
	t.Helper()
	var have []string
	for range n {
		ev := tr.Next(t)
		if tracetest.HasFault(ev) {
			t.Errorf("%s: a fault in %v", ev.Name, ev.Args)
		}
		if ev.PID != pid {
			t.Errorf("%s: event from PID %d, want %d", ev.Name, ev.PID, pid)
		}
		if ev.Name == "cprov:str" {
			have = append(have, fmt.Sprint(ev.Name, " ", ev.Args[0].Str, " ", ev.Args[1].Raw))
		} else {
			have = append(have, fmt.Sprint(ev.Name, " ", tracetest.Raw(ev)))
		}
	}
	return have
}

// semaphores reads the semaphores of probes in process pid through
// /proc/PID/mem: the object is mapped with addresses equal to file
// offsets, at the start of its offset-0 mapping.
func semaphores(t *testing.T, pid int, probes []sdt.Probe) []uint16 {
	t.Helper()
	maps, err := os.ReadFile(fmt.Sprintf("/proc/%d/maps", pid))
	if err != nil {
		t.Fatal(err)
	}
	mem, err := os.Open(fmt.Sprintf("/proc/%d/mem", pid))
	if err != nil {
		t.Fatal(err)
	}
	defer mem.Close()
	var sems []uint16
	for _, p := range probes {
		var base uint64
		for line := range strings.Lines(string(maps)) {
			f := strings.Fields(line)
			if len(f) < 6 || f[2] != "00000000" || f[4] != strconv.FormatUint(p.Inode, 10) {
				continue
			}
			start, _, _ := strings.Cut(f[0], "-")
			base, err = strconv.ParseUint(start, 16, 64)
			if err != nil {
				t.Fatal(err)
			}
			break
		}
		if base == 0 || len(p.Locations) != 1 || p.Locations[0].Semaphore == 0 {
			t.Fatalf("%s: no mapping or no semaphore (base %#x, %d locations)", p.String(), base, len(p.Locations))
		}
		var b [2]byte
		if _, err := mem.ReadAt(b[:], int64(base+p.Locations[0].Semaphore)); err != nil {
			t.Fatalf("%s: read semaphore: %v", p.String(), err)
		}
		sems = append(sems, binary.LittleEndian.Uint16(b[:]))
	}
	return sems
}

// readelfNotes runs readelf -n on the object with inode ino mapped in
// process pid, through /proc/PID/map_files (which also reads a memfd):
// readelf, a tool we did not write, finds the 14 cprov notes, and n12's
// twelve argument specs.
func readelfNotes(t *testing.T, pid int, ino uint64) {
	t.Helper()
	readelf := testutil.RequireTool(t, "readelf")
	maps, err := os.ReadFile(fmt.Sprintf("/proc/%d/maps", pid))
	if err != nil {
		t.Fatal(err)
	}
	var file string
	for line := range strings.Lines(string(maps)) {
		if f := strings.Fields(line); len(f) >= 6 && f[2] == "00000000" && f[4] == strconv.FormatUint(ino, 10) {
			file = fmt.Sprintf("/proc/%d/map_files/%s", pid, f[0])
			break
		}
	}
	if file == "" {
		t.Fatalf("no offset-0 mapping of inode %d in /proc/%d/maps", ino, pid)
	}
	out, err := exec.Command(readelf, "-n", file).CombinedOutput()
	if err != nil {
		t.Fatalf("readelf -n %s: %v\n%s", file, err, out)
	}
	if n := strings.Count(string(out), "Provider: cprov\n"); n != 14 {
		t.Errorf("readelf -n: %d cprov notes, want 14:\n%s", n, out)
	}
	_, n12, ok := strings.Cut(string(out), "Name: n12\n")
	if !ok {
		t.Fatalf("readelf -n: no n12:\n%s", out)
	}
	_, args, _ := strings.Cut(n12, "Arguments: ")
	args, _, _ = strings.Cut(args, "\n")
	if want := "-1@%dil 1@%sil -2@%dx 2@%cx -4@%r8d 4@%r9d -8@8(%rsp) 8@16(%rsp) -1@24(%rsp) 1@32(%rsp) -2@40(%rsp) 2@48(%rsp)"; runtime.GOARCH == "amd64" && args != want {
		t.Errorf("readelf -n: n12's arguments %q, want %q", args, want)
	}
}

// allEnabled is driver's "enabled" line for all probes off or on.
func allEnabled(on bool) string {
	return strings.TrimSpace(strings.Repeat(map[bool]string{false: "0 ", true: "1 "}[on], 14))
}

func equalLines(t *testing.T, what string, have, want []string) {
	t.Helper()
	if !slices.Equal(have, want) {
		t.Errorf("%s:\nhave %q\nwant %q", what, have, want)
	}
}

// TestDriver runs testdata/driver.c, a C program written against
// libstapsdt's API and linked against the library, with the object in a
// memfd and in a file, and traces it: 1 to 12 arguments of every type and
// a string read back as fired; semaphores and probeIsEnabled follow the
// tracer; 8 threads firing at once lose nothing; a 13th argument is
// refused; a child after fork() fires and checks the parent's probes (and
// unloads and destroys them without hanging), but cannot load new ones;
// after providerUnload the probes are gone from the process and probeFire
// does nothing; threads firing traced probes survive unloads and loads.
// The driver is built twice: with libstapsdt.h's inline macros (checks in
// the program, after unload too; the macro evaluates its probe once and
// an untraced probe's arguments never), and with LIBSTAPSDT_NO_INLINE,
// calling the exported functions as programs built against libstapsdt's
// header do.
func TestDriver(t *testing.T) {
	testutil.RequireBPF(t)
	inline := buildC(t, "driver.c")
	exported := buildC(t, "driver.c", "-DLIBSTAPSDT_NO_INLINE")
	// Only the second imports probeIsEnabled: the first checks inline.
	for bin, want := range map[string]bool{inline: false, exported: true} {
		f, err := elf.Open(bin)
		if err != nil {
			t.Fatal(err)
		}
		syms, err := f.ImportedSymbols()
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		if have := slices.ContainsFunc(syms, func(s elf.ImportedSymbol) bool { return s.Name == "probeIsEnabled" }); have != want {
			t.Errorf("%s imports probeIsEnabled: %v, want %v", bin, have, want)
		}
	}
	for _, c := range []struct {
		name  string
		memfd bool
		bin   string
	}{{"memfd", true, inline}, {"file", false, inline}, {"memfd-exported", true, exported}, {"file-exported", false, exported}} {
		memfd, bin := c.memfd, c.bin
		// The macro evaluates an untraced probe's arguments not at all.
		untracedEval := map[string]string{inline: "eval 1 0", exported: "eval 1 1"}[bin]
		t.Run(c.name, func(t *testing.T) {
			t.Setenv("STAPSDT_MEMFD", map[bool]string{true: "1", false: "0"}[memfd])
			d := testutil.StartTracee(t, bin)
			pid := d.PID()
			path := d.Do(t, "path")
			if len(path) != 1 || strings.HasPrefix(path[0], "/memfd:") != memfd {
				t.Fatalf("path %q", path)
			}
			equalLines(t, "before tracing", d.Do(t, "enabled"), []string{allEnabled(false)})
			equalLines(t, "evaluations before tracing", d.Do(t, "eval"), []string{untracedEval})
			probes := listProbes(t, pid, "cprov")
			if len(probes) != 14 {
				t.Fatalf("listed %d probes, want 14", len(probes))
			}
			if sems := semaphores(t, pid, probes); slices.Max(sems) != 0 {
				t.Errorf("semaphores before tracing: %v", sems)
			}
			readelfNotes(t, pid, probes[0].Inode)

			tr := startTrace(t, pid, "cprov")
			equalLines(t, "traced", d.Do(t, "enabled"), []string{allEnabled(true)})
			if sems := semaphores(t, pid, probes); slices.Min(sems) != 1 || slices.Max(sems) != 1 {
				t.Errorf("semaphores while traced: %v, want all 1", sems)
			}
			d.Do(t, "fire")
			equalLines(t, "events", readEvents(t, tr, pid, 13), wantFire())
			equalLines(t, "evaluations traced", d.Do(t, "eval"), []string{"eval 1 1"})
			equalLines(t, "eval's event", readEvents(t, tr, pid, 1), []string{"cprov:n1 [7]"})

			equalLines(t, "13 arguments", d.Do(t, "thirteen"), []string{"refused 5 probe n13: 13 arguments, at most 12"})

			d.Do(t, "threads")
			next := map[uint64]uint64{}
			for range 8 * 1000 {
				ev := tr.Next(t)
				if ev.Name != "cprov:seq" || ev.Args[1].Raw != next[ev.Args[0].Raw] {
					t.Fatalf("%s %v, want cprov:seq with i = %d", ev.Name, ev.Args, next[ev.Args[0].Raw])
				}
				next[ev.Args[0].Raw]++
			}
			if len(next) != 8 {
				t.Errorf("events from %d threads, want 8", len(next))
			}
			// Run detaches and hands over what the kernel still held.
			if err := tr.Stop(); err != nil {
				t.Fatal(err)
			}
			if lost, _, err := tr.T.Lost(); err != nil || lost != 0 {
				t.Errorf("lost %d events (%v)", lost, err)
			}
			if n := len(tr.Events); n != 0 {
				t.Errorf("%d events more than fired", n)
			}
			if err := tr.Close(); err != nil {
				t.Fatal(err)
			}
			equalLines(t, "after detaching", d.Do(t, "enabled"), []string{allEnabled(false)})
			if sems := semaphores(t, pid, probes); slices.Max(sems) != 0 {
				t.Errorf("semaphores after detaching: %v", sems)
			}

			// The child takes over the command loop until "exit".
			child := d.Do(t, "fork")
			var cpid int
			if len(child) != 1 {
				t.Fatalf("fork: %q", child)
			}
			if _, err := fmt.Sscanf(child[0], "child %d", &cpid); err != nil {
				t.Fatalf("fork: %q: %v", child, err)
			}
			equalLines(t, "child before tracing", d.Do(t, "enabled"), []string{allEnabled(false)})
			// The library has no runtime that fork() could break: the
			// child loads a provider of its own, traced like any other.
			equalLines(t, "load in the child", d.Do(t, "newload"), []string{"newload 0 "})
			ktr := startTrace(t, cpid, "kid")
			d.Do(t, "kidfire")
			equalLines(t, "the child's own probe", readEvents(t, ktr, cpid, 1), []string{"kid:k [42]"})
			ktr.Close()
			d.Do(t, "kiddestroy")
			ctr := startTrace(t, cpid, "cprov")
			equalLines(t, "child traced", d.Do(t, "enabled"), []string{allEnabled(true)})
			d.Do(t, "fire")
			equalLines(t, "child's events", readEvents(t, ctr, cpid, 13), wantFire())
			ctr.Close()
			equalLines(t, "child's exit", d.Do(t, "exit"), []string{fmt.Sprintf("child %d exit 0", cpid)})
			equalLines(t, "load in the parent", d.Do(t, "newload"), []string{"newload 0 "})
			d.Do(t, "kiddestroy")

			// Unload with a tracer attached: the probes leave the
			// process, fires do nothing; cmark stays.
			tr = startTrace(t, pid, "cprov", "cmark")
			equalLines(t, "unload", d.Do(t, "unload"), []string{"unload 0"})
			equalLines(t, "unloaded", d.Do(t, "enabled"), []string{allEnabled(false)})
			equalLines(t, "evaluations after unload", d.Do(t, "eval"), []string{untracedEval})
			d.Do(t, "fire")
			d.Do(t, "mark 7")
			equalLines(t, "after unload", readEvents(t, tr, pid, 1), []string{"cmark:mark [7]"})
			if probes := listProbes(t, pid, "cprov"); len(probes) != 0 {
				t.Errorf("after unload: %d cprov probes listed", len(probes))
			}

			// Load again, trace, and unload and load 20 times while 4
			// threads fire the traced probe: a fire racing with unload
			// calls a stub that returns.
			equalLines(t, "load again", d.Do(t, "load"), []string{"load 0"})
			startTrace(t, pid, "cprov")
			equalLines(t, "race", d.Do(t, "race"), []string{"race ok"})
			d.Quit(t)
		})
	}
}

// TestBpftrace traces the driver's probes with bpftrace and tplist-bpfcc,
// tools we did not write, with the object in a memfd (the default) and in
// a file: both find the probes (bcc finds a memfd among the process's open
// descriptors, so the library keeps it open while the provider is loaded,
// as libstapsdt does), and bpftrace prints the values fired, each argument
// cast to its declared type and printed by its sign (bpftrace 0.17's %d
// prints a 32-bit value as signed), and the string.
func TestBpftrace(t *testing.T) {
	testutil.RequireBPF(t)
	bpftrace := testutil.RequireTool(t, "bpftrace")
	tplist := testutil.RequireTool(t, "tplist-bpfcc")
	testutil.RequireTracefs(t)
	bin := buildC(t, "driver.c")
	for _, c := range []struct {
		name, env string
	}{{"memfd", ""}, {"file", "0"}} {
		t.Run(c.name, func(t *testing.T) {
			if c.env != "" {
				t.Setenv("STAPSDT_MEMFD", c.env)
			}
			d := testutil.StartTracee(t, bin)
			pid := strconv.Itoa(d.PID())
			path := d.Do(t, "path")[0]
			if memfd := strings.HasPrefix(path, "/memfd:"); memfd != (c.env == "") {
				t.Fatalf("object at %s", path)
			}
			checkTplist(t, tplist, d.PID(), path, "cprov", []string{"n1", "n6", "n12", "str", "seq"})
			traceBpftrace(t, bpftrace, d, pid)
			// providerUnload closes the memfd; each load keeps one.
			for _, step := range []struct {
				cmd  string
				want int
			}{{"unload", 0}, {"load", 1}, {"unload", 0}} {
				if out := d.Do(t, step.cmd); len(out) != 1 || out[0] != step.cmd+" 0" {
					t.Fatalf("%s: have %q, want %q", step.cmd, out, step.cmd+" 0")
				}
				if fds := descriptorsOn(t, d.PID(), path); c.env == "" && len(fds) != step.want {
					t.Errorf("after %s: descriptors on %s: have %v, want %d", step.cmd, path, fds, step.want)
				}
			}
			d.Quit(t)
		})
	}
}

// tplistPaths returns the paths tplist-bpfcc may print for the object at
// path (as /proc/PID/maps shows it) in process pid: the path itself for a
// file; for a memfd, /proc/PID/fd/N for each descriptor open on it.
func tplistPaths(t *testing.T, pid int, path string) []string {
	t.Helper()
	if !strings.HasSuffix(path, " (deleted)") {
		return []string{path}
	}
	paths := descriptorsOn(t, pid, path)
	if len(paths) == 0 {
		t.Fatalf("no descriptor of process %d is open on %s", pid, path)
	}
	return paths
}

// descriptorsOn returns the /proc/PID/fd/N links of process pid that read
// path.
func descriptorsOn(t *testing.T, pid int, path string) []string {
	t.Helper()
	dir := "/proc/" + strconv.Itoa(pid) + "/fd"
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, e := range ents {
		if link, err := os.Readlink(dir + "/" + e.Name()); err == nil && link == path {
			paths = append(paths, dir+"/"+e.Name())
		}
	}
	return paths
}

// checkTplist runs tplist-bpfcc -p pid and checks that it lists each probe
// of provider in the object at path.
func checkTplist(t *testing.T, tplist string, pid int, path, provider string, probes []string) {
	t.Helper()
	out, err := exec.Command(tplist, "-p", strconv.Itoa(pid)).CombinedOutput()
	if err != nil {
		t.Fatalf("tplist-bpfcc: %v\n%s", err, out)
	}
	paths := tplistPaths(t, pid, path)
	for _, probe := range probes {
		if !slices.ContainsFunc(paths, func(p string) bool {
			return strings.Contains(string(out), p+" "+provider+":"+probe+"\n")
		}) {
			t.Errorf("tplist-bpfcc -p: no line %s %s:%s:\n%s", paths, provider, probe, out)
		}
	}
}

// traceBpftrace runs bpftrace -p on the driver's n6 and str probes (any
// object: a memfd has no path bpftrace could open) and checks the values.
func traceBpftrace(t *testing.T, bpftrace string, d *testutil.Tracee, pid string) {
	t.Helper()
	script := `usdt:*:cprov:n6 {
	printf("n6 %d %u %d %u %d %u\n", (int8)arg0, (uint8)arg1, (int16)arg2, (uint16)arg3, (int32)arg4, (uint32)arg5);
	@seen = 1;
}
usdt:*:cprov:str /@seen/ { printf("str %s %d\n", str(arg0), (int32)arg1); exit(); }`
	cmd := exec.Command(bpftrace, "-p", pid, "-e", script)
	var stdout strings.Builder
	cmd.Stdout = &stdout
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill() })
	// probeIsEnabled turns true when the uprobes are installed, which may
	// be before bpftrace has attached its programs: fire until the
	// script's exit() ends bpftrace.
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	deadline := time.After(20 * time.Second)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
fire:
	for {
		select {
		case err := <-exited:
			if err != nil {
				t.Fatalf("bpftrace: %v\n%s", err, stdout.String())
			}
			break fire
		case <-deadline:
			t.Fatalf("bpftrace printed no hit: %q", stdout.String())
		case <-tick.C:
			d.Do(t, "fire")
		}
	}
	var n6 []string
	for j := range 6 {
		v := wantArg(6, j)
		if j%2 == 0 {
			n6 = append(n6, strconv.FormatInt(int64(v), 10))
		} else {
			n6 = append(n6, strconv.FormatUint(v, 10))
		}
	}
	for _, want := range []string{"n6 " + strings.Join(n6, " ") + "\n", "str hello from C -42\n"} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("bpftrace output: have %q, want a line %q", stdout.String(), want)
		}
	}
}

// BenchmarkC times the library from C (testdata/bench.c) by the program's
// own clock; b.N counts rounds. Only numbers of one run compare (the
// machine is noisy), so each sub-benchmark times its variants in rotation
// in the same rounds and reports their medians and ratios:
//
//   - /untraced: "ns:floor" (a call to an empty function: what any call
//     into a library costs); the exported functions, as bindings and
//     programs built against libstapsdt's header call them:
//     "ns:probeFire0", "ns:probeFire3", "ns:probeIsEnabled"; the same
//     through libstapsdt.h's inline macros: "ns:inline-probeFire0",
//     "ns:inline-probeFire3", "ns:inline-probeIsEnabled"; and each one's
//     ratio to the floor ("x:..."); "ns:load1", one load of a word in
//     the same loop, what a sys/sdt.h semaphore check costs at least.
//   - /providerLoad1000: "ms:providerLoad" of 1000 probes.
//   - /traced: probeFire with 3 arguments against a sys/sdt.h probe with
//     the same arguments in the same program, in the loop's body and in a
//     function of its own, all counted by a trace program (@[probe] =
//     count(), its counts checked against the hits): "ns:probeFire3"
//     (the function), "ns:inline-probeFire3" (the macro), "ns:sdt3",
//     "ns:sdtfunc3" and the ratios of the first two to the others;
//     "ns:probeIsEnabled" and "ns:inline-probeIsEnabled" while the probe
//     is traced, with their ratios to the floor. Also
//     the site forms alone: "ns:nop1func3" and "ns:nop5func3", calls to a
//     function whose first instruction is a 1-byte or 5-byte nop site,
//     and "ns:nop1midfunc3", the 1-byte nop after the first instruction;
//     "ns:nop1jmpfunc3", the 1-byte nop in a function that returns by
//     pop/jmp (dynsdt's nop stub), with its and nop5func3's ratio to sdt3;
//     "ns:nop1loop0" and "ns:nop5loop0", either nop in the loop's body,
//     without arguments;
//     per variant, the BPF program's run time per hit by the kernel's
//     stats ("ns:bpf:OP") and the rest of the time ("ns:rest:OP": trap
//     or trampoline, uprobe dispatch, the loop); and "trampolines", the
//     [uprobes-trampoline] mappings the kernel made in the program.
//
// With LIBSTAPSDT_BASELINE naming a directory that holds another build of
// the library (libstapsdt.so.0, libstapsdt.so and its libstapsdt.h: an
// earlier usdtkit, say), each sub-benchmark runs for it too in the same
// run, as BenchmarkC/baseline/..., beside BenchmarkC/usdtkit/....
func BenchmarkC(b *testing.B) {
	testutil.RequireFile(b, "/usr/include/x86_64-linux-gnu/sys/sdt.h")
	libs := [][2]string{{"usdtkit", buildLib(b)}}
	if dir := os.Getenv("LIBSTAPSDT_BASELINE"); dir != "" {
		libs = append(libs, [2]string{"baseline", dir})
	}
	for _, lib := range libs {
		b.Run(lib[0], func(b *testing.B) { benchmarkC(b, buildCWith(b, lib[1], "bench.c")) })
	}
}

func benchmarkC(b *testing.B, bin string) {
	run := func(b *testing.B, t *testutil.Tracee, ops []string, n int) map[string]float64 {
		samples := map[string][]float64{}
		first := 0
		for b.Loop() {
			for i := range ops {
				op := ops[(first+i)%len(ops)]
				out := t.Do(b, fmt.Sprint(op, " ", n))
				v, err := strconv.ParseFloat(out[0], 64)
				if err != nil {
					b.Fatalf("%s: %q", op, out)
				}
				samples[op] = append(samples[op], v)
			}
			first++
		}
		med := map[string]float64{}
		for op, s := range samples {
			slices.Sort(s)
			med[op] = s[len(s)/2]
		}
		return med
	}
	b.Run("untraced", func(b *testing.B) {
		t := testutil.StartTracee(b, bin)
		m := run(b, t, []string{"floor", "load1", "fire0", "fire3", "enabled", "ifire0", "ifire3", "ienabled"}, 1_000_000)
		b.ReportMetric(m["floor"], "ns:floor")
		b.ReportMetric(m["load1"], "ns:load1")
		for _, v := range []struct{ op, name string }{
			{"fire0", "probeFire0"}, {"fire3", "probeFire3"}, {"enabled", "probeIsEnabled"},
			{"ifire0", "inline-probeFire0"}, {"ifire3", "inline-probeFire3"}, {"ienabled", "inline-probeIsEnabled"},
		} {
			b.ReportMetric(m[v.op], "ns:"+v.name)
			b.ReportMetric(m[v.op]/m["floor"], "x:"+v.name+"/floor")
		}
	})
	b.Run("providerLoad1000", func(b *testing.B) {
		t := testutil.StartTracee(b, bin)
		m := run(b, t, []string{"load"}, 1)
		b.ReportMetric(m["load"]/1e6, "ms:providerLoad")
	})
	b.Run("traced", func(b *testing.B) {
		testutil.RequireBPF(b)
		t := testutil.StartTracee(b, bin)
		t.Do(b, "floor 1") // the probes are loaded
		var probes []sdt.Probe
		for _, sel := range []sdt.Selector{{Provider: "bench", Name: "three"}, {Provider: "benchsdt", Name: "three"}, {Provider: "benchsdt", Name: "func"},
			{Provider: "benchsdt", Name: "nop1"}, {Provider: "benchsdt", Name: "nop1m"}, {Provider: "benchsdt", Name: "nop5"},
			{Provider: "benchsdt", Name: "nop1l"}, {Provider: "benchsdt", Name: "nop5l"}, {Provider: "benchsdt", Name: "nop1j"}} {
			found, err := sdt.List(&sdt.ListOptions{PID: t.PID(), Selectors: []sdt.Selector{sel}})
			if err != nil || len(found) != 1 {
				b.Fatalf("list %s:%s: %v, %d probes", sel.Provider, sel.Name, err, len(found))
			}
			probes = append(probes, found...)
		}
		// The kernel counts the BPF programs' run time while stats is open.
		stats, err := ebpf.EnableStats(uint32(unix.BPF_STATS_RUN_TIME))
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { stats.Close() })
		// Every probe counted in the kernel, in one block.
		var names []string
		for _, p := range probes {
			names = append(names, "usdt::"+p.Provider+":"+p.Name)
		}
		prog, err := trace.Compile("bench.bt", strings.Join(names, ",")+" { @[probe] = count(); }", &trace.CompileOptions{PID: t.PID()})
		if err != nil {
			b.Fatal(err)
		}
		var counts strings.Builder
		tr, err := trace.Start(prog, &trace.Options{PID: t.PID(), Stdout: &counts})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { tr.Close() })
		const n = 10_000
		ops := []string{"fire3", "ifire3", "sdt3", "sdtf3", "nop1f3", "nop1m3", "nop5f3", "nop1l", "nop5l", "nop1jf3"}
		total, bpf := map[string][]float64{}, map[string][]float64{}
		first := 0
		for b.Loop() {
			for i := range ops {
				op := ops[(first+i)%len(ops)]
				ns0, cnt0 := bpfStats(b)
				out := t.Do(b, fmt.Sprint(op, " ", n))
				ns1, cnt1 := bpfStats(b)
				v, err := strconv.ParseFloat(out[0], 64)
				if err != nil {
					b.Fatalf("%s: %q", op, out)
				}
				if cnt1-cnt0 < n {
					b.Fatalf("%s: %d BPF runs for %d hits", op, cnt1-cnt0, n)
				}
				total[op] = append(total[op], v)
				bpf[op] = append(bpf[op], float64(ns1-ns0)/float64(cnt1-cnt0))
			}
			first++
		}
		m := map[string]float64{}
		for _, op := range ops {
			m[op] = median(total[op])
			b.ReportMetric(median(bpf[op]), "ns:bpf:"+op)
			b.ReportMetric(m[op]-median(bpf[op]), "ns:rest:"+op)
		}
		// probeIsEnabled while traced: the same load of the semaphore,
		// now non-zero; beside the empty call, as untraced.
		en := map[string][]float64{}
		for range 5 {
			for _, op := range []string{"floor", "enabled", "ienabled"} {
				out := t.Do(b, fmt.Sprint(op, " ", 1_000_000))
				v, err := strconv.ParseFloat(out[0], 64)
				if err != nil {
					b.Fatalf("%s: %q", op, out)
				}
				en[op] = append(en[op], v)
			}
		}
		for _, v := range []struct{ op, name string }{{"enabled", "probeIsEnabled"}, {"ienabled", "inline-probeIsEnabled"}} {
			b.ReportMetric(median(en[v.op]), "ns:"+v.name)
			b.ReportMetric(median(en[v.op])/median(en["floor"]), "x:"+v.name+"/floor")
		}
		// Whether the kernel turned the nop5 sites into calls: it maps
		// its trampoline into the process. Read before Run detaches.
		maps, err := os.ReadFile(fmt.Sprintf("/proc/%d/maps", t.PID()))
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(strings.Count(string(maps), "[uprobes-trampoline]")), "trampolines")
		// The program counted every hit of every probe, once: Run, its
		// context done, prints the map.
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if err := tr.Run(ctx); err != nil {
			b.Fatal(err)
		}
		for _, p := range probes {
			re := regexp.MustCompile(`(?m)^@\[usdt:[^\]]*:` + p.Provider + `:` + p.Name + `\]: (\d+)$`)
			m := re.FindStringSubmatch(counts.String())
			if m == nil {
				b.Fatalf("no count of %s:%s in %q", p.Provider, p.Name, counts.String())
			}
			want := b.N * n
			if p.Provider == "bench" {
				want *= 2 // fire3 and ifire3
			}
			if c, _ := strconv.Atoi(m[1]); c != want {
				b.Errorf("%s:%s counted %d times, want %d", p.Provider, p.Name, c, want)
			}
		}
		b.ReportMetric(m["fire3"], "ns:probeFire3")
		b.ReportMetric(m["ifire3"], "ns:inline-probeFire3")
		b.ReportMetric(m["sdt3"], "ns:sdt3")
		b.ReportMetric(m["sdtf3"], "ns:sdtfunc3")
		b.ReportMetric(m["nop1f3"], "ns:nop1func3")
		b.ReportMetric(m["nop1m3"], "ns:nop1midfunc3")
		b.ReportMetric(m["nop5f3"], "ns:nop5func3")
		b.ReportMetric(m["nop1l"], "ns:nop1loop0")
		b.ReportMetric(m["nop5l"], "ns:nop5loop0")
		b.ReportMetric(m["nop1jf3"], "ns:nop1jmpfunc3")
		b.ReportMetric(m["nop5f3"]/m["nop1f3"], "ratio:nop5func3/nop1func3")
		b.ReportMetric(m["nop1jf3"]/m["sdt3"], "ratio:nop1jmpfunc3/sdt3")
		b.ReportMetric(m["nop5f3"]/m["sdt3"], "ratio:nop5func3/sdt3")
		b.ReportMetric(m["fire3"]/m["sdt3"], "ratio:probeFire3/sdt3")
		b.ReportMetric(m["fire3"]/m["sdtf3"], "ratio:probeFire3/sdtfunc3")
		b.ReportMetric(m["ifire3"]/m["sdt3"], "ratio:inline-probeFire3/sdt3")
		b.ReportMetric(m["ifire3"]/m["sdtf3"], "ratio:inline-probeFire3/sdtfunc3")
	})
}

// bpfStats sums the run time and run count the kernel keeps for the BPF
// programs this process holds (while ebpf.EnableStats is on), from
// /proc/self/fdinfo.
func bpfStats(b *testing.B) (ns, cnt uint64) {
	b.Helper()
	ents, err := os.ReadDir("/proc/self/fdinfo")
	if err != nil {
		b.Fatal(err)
	}
	for _, e := range ents {
		info, err := os.ReadFile(filepath.Join("/proc/self/fdinfo", e.Name()))
		if err != nil || !strings.Contains(string(info), "prog_type:") {
			continue
		}
		for line := range strings.Lines(string(info)) {
			k, v, _ := strings.Cut(strings.TrimSpace(line), ":")
			x, _ := strconv.ParseUint(strings.TrimSpace(v), 10, 64)
			switch k {
			case "run_time_ns":
				ns += x
			case "run_cnt":
				cnt += x
			}
		}
	}
	return ns, cnt
}

func median(s []float64) float64 {
	s = slices.Clone(s)
	slices.Sort(s)
	return s[len(s)/2]
}

// TestArm64UnderQemu cross-builds the library and testdata/trap.c for
// linux/arm64 (aarch64-linux-gnu-gcc, Debian package gcc-aarch64-linux-gnu)
// and runs trap under qemu-user: providerLoad maps the object with arm64's
// 64 KiB segments, and trap, standing in for a tracer (qemu-user has no
// uprobes), writes BRK over the probe site and checks that probeIsEnabled
// sees it and that probeFire's 12 arguments of every type arrive in x0-x7
// and the first four stack slots, as the notes' specs say; untraced and
// after providerUnload probeFire does not reach the site.
func TestArm64UnderQemu(t *testing.T) {
	if runtime.GOARCH == "arm64" {
		t.Skip("the host is arm64: TestDriver runs natively")
	}
	cc := testutil.RequireTool(t, "aarch64-linux-gnu-gcc")
	qemu, err := exec.LookPath("qemu-aarch64-static")
	if err != nil {
		qemu = testutil.RequireTool(t, "qemu-aarch64")
	}
	sysroot := testutil.RequireFile(t, "/usr/aarch64-linux-gnu")
	dir := t.TempDir()
	testutil.BuildLibstapsdt(t, dir, cc)
	trap := filepath.Join(dir, "trap")
	if out, err := exec.Command(cc, "-O2", "-Wall", "-Werror", "-o", trap, "testdata/trap.c", "-I.",
		"-L"+dir, "-l:libstapsdt.so.0", "-Wl,-rpath,"+dir).CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", cc, err, out)
	}
	run := exec.Command(qemu, trap)
	run.Env = append(os.Environ(), "QEMU_LD_PREFIX="+sysroot)
	out, err := run.CombinedOutput()
	if err != nil || string(out) != "ok\n" {
		t.Errorf("trap under qemu: %v\n%s", err, out)
	}
}
