package main

import (
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/usdtkit/usdtkit/internal/testutil"
)

// pythonTarget is run by python3.11: it maps libstdc++ three ways — from
// its real path, from a copy it deletes, and from a memfd — prints "ready"
// and waits for stdin to close.
const pythonTarget = `
import ctypes, os, shutil, sys
lib = sys.argv[1]
ctypes.CDLL(lib)
tmp = os.path.join(sys.argv[2], "libcopy.so")
shutil.copy(lib, tmp)
ctypes.CDLL(tmp)
os.unlink(tmp)
fd = os.memfd_create("usdtkit-test")
with open(lib, "rb") as f:
    os.write(fd, f.read())
ctypes.CDLL("/proc/self/fd/%d" % fd)
print("ready", flush=True)
sys.stdin.read()
`

// startPython starts the target and returns its PID once it is ready.
func startPython(t *testing.T) int {
	t.Helper()
	testutil.RequireRoot(t)
	py := testutil.RequireFile(t, testutil.Python311)
	testutil.RequireFile(t, testutil.LibStdcxx)
	py3 := testutil.StartCmd(t, exec.Command(py, "-c", pythonTarget, testutil.LibStdcxx, t.TempDir()))
	py3.Expect(t, "ready")
	py3.Discard()
	return py3.PID()
}

func TestListPID(t *testing.T) {
	pid := startPython(t)
	p := strconv.Itoa(pid)

	lines := listJSON(t, "-p", p)
	byPath := make(map[string][]string)
	for _, l := range lines {
		if l.PID != pid {
			t.Errorf("%s:%s: pid %d, want %d", l.Provider, l.Name, l.PID, pid)
		}
		byPath[l.Path] = append(byPath[l.Path], l.Provider+":"+l.Name)
	}
	if !slices.Contains(byPath[testutil.Python311], "python:function__entry") {
		t.Errorf("no python:function__entry in %s; have %v", testutil.Python311, byPath)
	}
	real, err := filepath.EvalSymlinks(testutil.LibStdcxx)
	if err != nil {
		t.Fatal(err)
	}
	// Every object but python is a copy of libstdc++.
	stdcxxNotes := len(readelfNotes(t, real))
	if stdcxxNotes == 0 {
		t.Fatalf("readelf -n %s shows no notes", real)
	}
	var deleted, memfd bool
	for path, probes := range byPath {
		if len(probes) != stdcxxNotes && path != testutil.Python311 {
			t.Errorf("%s: %d probes, want libstdc++'s %d: %v", path, len(probes), stdcxxNotes, probes)
		}
		deleted = deleted || strings.HasSuffix(path, "/libcopy.so")
		memfd = memfd || strings.HasPrefix(path, "/memfd:usdtkit-test")
	}
	if _, ok := byPath[real]; !ok {
		t.Errorf("libstdc++ (%s) not listed; have %v", real, keys(byPath))
	}
	if !deleted || !memfd {
		t.Errorf("deleted copy listed: %v, memfd listed: %v; have %v", deleted, memfd, keys(byPath))
	}

	// A selector with a path glob keeps only python's function probes.
	have := nonEmptyLines(usdtkit(t, "list", "-p", p, "usdt:*:python:function__*"))
	want := []string{
		testutil.Python311 + " python:function__entry",
		testutil.Python311 + " python:function__return",
	}
	if !slices.Equal(have, want) {
		t.Errorf("selector: have %q, want %q", have, want)
	}

	// A library short name with -p filters the process's objects.
	filtered := listJSON(t, "-p", p, "libstdc++")
	if len(filtered) != stdcxxNotes {
		t.Errorf("-p %s libstdc++: %d notes, want %d", p, len(filtered), stdcxxNotes)
	}
	for _, l := range filtered {
		if l.Path != real || l.Provider != "libstdcxx" {
			t.Errorf("-p %s libstdc++: got %s %s:%s", p, l.Path, l.Provider, l.Name)
		}
	}
}

func keys(m map[string][]string) []string {
	var k []string
	for p := range m {
		k = append(k, p)
	}
	slices.Sort(k)
	return k
}
