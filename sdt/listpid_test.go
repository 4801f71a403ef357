package sdt_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/usdtkit/usdtkit/elfnotes"
	"github.com/usdtkit/usdtkit/internal/testutil"
	"github.com/usdtkit/usdtkit/sdt"
)

// listOutcome lists process pid's probes and classifies the result: the
// process's own executable listed (own), or skipped with a warning
// (refused). It fails the test on the host file's probes or identity.
func listOutcome(t *testing.T, sw *testutil.Swap) (own, refused bool) {
	t.Helper()
	var warnings []error
	probes, err := sdt.List(&sdt.ListOptions{PID: sw.PID(), Warn: func(err error) { warnings = append(warnings, err) }})
	if err != nil {
		t.Fatalf("list -p: %v", err)
	}
	for _, p := range probes {
		id := testutil.FileID{Dev: p.Dev, Inode: p.Inode}
		if p.Provider == "host" || (sw.HostID != testutil.FileID{} && id == sw.HostID) {
			t.Fatalf("listed the host file's probe %s as %s (opened %s)", p.String(), p.Path, p.OpenPath)
		}
		if p.Provider == "own" {
			if id != sw.OwnID {
				t.Fatalf("own:only listed from device %#x inode %d, want %+v", p.Dev, p.Inode, sw.OwnID)
			}
			own = true
		}
	}
	if own && len(warnings) > 0 {
		t.Fatalf("own file listed and warnings %v", warnings)
	}
	return own, len(warnings) > 0
}

// TestListPIDSwap runs list -p against a process in its own mount
// namespace that keeps swapping the directory of its executable with an
// absolute symlink to a host directory holding a different executable
// (issue 10 item 2), or with a directory holding a FIFO of the same name.
// Every listing must show the process's own file, or skip it with a
// warning; never the host file's probes, and never block on the FIFO.
func TestListPIDSwap(t *testing.T) {
	for _, tt := range []struct {
		name string
		with testutil.SwapWith
	}{
		{"symlink", testutil.SwapSymlink},
		{"fifo", testutil.SwapFIFO},
	} {
		t.Run(tt.name, func(t *testing.T) {
			sw := testutil.StartSwap(t, tt.with)
			const runs = 200
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			owned, refused := 0, 0
			for i := 0; i < runs; i++ {
				if ctx.Err() != nil {
					t.Fatalf("%d listings in 2 minutes, want %d: blocked?", i, runs)
				}
				own, ref := listOutcome(t, sw)
				switch {
				case own:
					owned++
				case ref:
					refused++
				default:
					t.Fatalf("run %d: the process's own executable neither listed nor refused", i)
				}
			}
			t.Logf("%d runs: own file %d, refused %d", runs, owned, refused)
			if owned == 0 {
				t.Errorf("the own file was never listed in %d runs", runs)
			}
		})
	}
}

// TestListPIDMalformed maps a good library and two malformed ELF files
// into a process: each malformed one is skipped with one warning naming
// it, and the rest is listed.
func TestListPIDMalformed(t *testing.T) {
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
	// A corrupt header: section headers said to lie far beyond the file
	// (e_shoff, 8 bytes at 0x28 in ELF64).
	corrupt := append([]byte(nil), img...)
	copy(corrupt[0x28:], []byte{0, 0, 0, 0, 0, 0, 0, 0x7f})
	// A truncated ELF: the header and little else.
	bad := map[string][]byte{"libcorrupt.so": corrupt, "libtruncated.so": img[:256]}
	files := []string{good}
	for name, b := range bad {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		files = append(files, p)
	}
	for name, b := range bad {
		if _, err := elfnotes.NewFile(bytes.NewReader(b)); err == nil {
			t.Fatalf("%s parses; the test needs a malformed file", name)
		}
	}
	cmd := testutil.StartMapper(t, exe, files...)

	var warnings []error
	probes, err := sdt.List(&sdt.ListOptions{PID: cmd.Process.Pid, Warn: func(err error) { warnings = append(warnings, err) }})
	if err != nil {
		t.Fatalf("list -p: %v", err)
	}
	warned := make(map[string]int)
	for _, w := range warnings {
		var fe *elfnotes.FormatError
		if !errors.As(w, &fe) {
			t.Errorf("warning %v: want an elfnotes.FormatError", w)
		}
		for name := range bad {
			if strings.Contains(w.Error(), filepath.Join(dir, name)) {
				warned[name]++
			}
		}
	}
	for name := range bad {
		if warned[name] != 1 {
			t.Errorf("%s: have %d warnings naming it, want 1 (warnings %v)", name, warned[name], warnings)
		}
	}
	if len(warnings) != len(bad) {
		t.Errorf("have %d warnings, want %d: %v", len(warnings), len(bad), warnings)
	}
	have := make(map[string]string)
	for _, p := range probes {
		have[p.String()] = p.Path
	}
	for probe, path := range map[string]string{"good:lib": good, "own:only": exe, "swap:hit": exe} {
		if have[probe] != path {
			t.Errorf("probe %s: have it in %q, want in %s (all: %v)", probe, have[probe], path, have)
		}
	}

	// A selector naming one object reads that one only: the malformed
	// ones are not read, so not warned about.
	warnings = nil
	probes, err = sdt.List(&sdt.ListOptions{PID: cmd.Process.Pid, Selectors: []sdt.Selector{{Path: "libgood"}},
		Warn: func(err error) { warnings = append(warnings, err) }})
	if err != nil || len(probes) != 1 || probes[0].String() != "good:lib" || len(warnings) != 0 {
		t.Errorf("usdt:libgood:*:*: %v, probes %v, warnings %v; want good:lib alone, no warning", err, probes, warnings)
	}
}
