//go:build amd64 || arm64

package dynsdt

import (
	"bufio"
	"debug/elf"
	"encoding/binary"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/usdtkit/usdtkit/internal/testutil"
)

// TestArm64UnderQemu runs the arm64 runtime for real on an amd64 host:
// it cross-compiles this package's tests for linux/arm64 and runs them
// under qemu-user (Debian package qemu-user-static), where Load maps the
// object with 64 KiB-aligned segments, fire_arm64.s calls the stubs, and
// Enabled, Close and the reaping of dead processes' files run as on an
// arm64 machine. qemu-user has no uprobes and no BPF, so only tests that
// need neither run; the tracing tests run on arm64 hardware only.
//
// In CI (testutil.Strict) a missing qemu is a failure, not a skip.
func TestArm64UnderQemu(t *testing.T) {
	if runtime.GOARCH == "arm64" {
		t.Skip("the host is arm64: the tests run natively")
	}
	qemu := qemuAArch64(t)
	bin := buildArm64Test(t)

	t.Run("tests", func(t *testing.T) {
		// Tests of Load, Fire, Enabled, Close and the object files that
		// need neither root nor BPF nor a peer tool. TestReap re-executes
		// the test binary, which the kernel cannot run without a
		// binfmt_misc entry for qemu: the "reap" subtest below does its
		// part from here.
		want := []string{
			"TestParseObjectName", "TestReapLocked", "TestLockAndCheckReaped",
			"TestLoadHostileDefaultDir", "TestCloseThroughDir",
			"TestFireABI", "TestFireAlignment", "TestFireMethod",
			"TestLoad", "TestLoadErrors", "TestFireAllocs", "TestCloseWhileFiring",
			"TestLoadedStubs", "ExampleLoad",
		}
		// The default object directory goes under TMPDIR, so that what
		// the tests leave there is seen.
		tmp := t.TempDir()
		cmd := exec.Command(qemu, bin, "-test.v", "-test.count=1", "-test.timeout=5m",
			"-test.run=^("+strings.Join(want, "|")+")$")
		cmd.Env = qemuEnv("TMPDIR=" + tmp)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s: %v\n%s", cmd, err, out)
		}
		passed, others := testResults(out)
		if len(others) > 0 || !slices.Equal(passed, slices.Sorted(slices.Values(want))) {
			t.Errorf("tests under qemu:\nhave passed %q, others %q\nwant passed %q\n%s", passed, others, want, out)
		}
		if !strings.HasSuffix(string(out), "\nPASS\n") {
			t.Errorf("output does not end in PASS:\n%s", out)
		}
		if left := regularFiles(t, tmp); len(left) > 0 {
			t.Errorf("files left in TMPDIR: %q", left)
		}
	})

	t.Run("reap", func(t *testing.T) {
		// TestReap's processes, under qemu: the live one's file stays, the
		// killed and the exited ones' are removed by the next Load, which
		// TestHelperLoad makes too.
		dir := t.TempDir()
		live, _, livePath := startQemuHelper(t, qemu, bin, dir)
		killed, _, killedPath := startQemuHelper(t, qemu, bin, dir)
		exited, exitedStdin, exitedPath := startQemuHelper(t, qemu, bin, dir)
		if err := killed.Process.Kill(); err != nil {
			t.Fatal(err)
		}
		killed.Wait()
		exitedStdin.Close()
		if err := exited.Wait(); err != nil {
			t.Fatalf("exited helper: %v", err)
		}
		if have, want := regularFiles(t, dir), baseNames(livePath, killedPath, exitedPath); !slices.Equal(have, want) {
			t.Fatalf("before the next Load: have %q, want %q", have, want)
		}
		next, _, nextPath := startQemuHelper(t, qemu, bin, dir)
		if have, want := regularFiles(t, dir), baseNames(livePath, nextPath); !slices.Equal(have, want) {
			t.Errorf("after the next Load: have %q, want %q", have, want)
		}
		// qemu-user passes getpid through: the name carries the process's
		// PID.
		prefix := "ktest-" + strconv.Itoa(next.Process.Pid) + "-"
		if !strings.HasPrefix(filepath.Base(nextPath), prefix) {
			t.Errorf("object file %s, want prefix %s", filepath.Base(nextPath), prefix)
		}
		live.Process.Kill()
	})
}

// qemuAArch64 returns the path of qemu-user for arm64: qemu-aarch64-static
// (Debian's qemu-user-static) or qemu-aarch64 (qemu-user).
func qemuAArch64(t *testing.T) string {
	t.Helper()
	if p, err := exec.LookPath("qemu-aarch64-static"); err == nil {
		return p
	}
	return testutil.RequireTool(t, "qemu-aarch64")
}

// buildArm64Test compiles this package's tests for linux/arm64, static
// (CGO_ENABLED=0, as qemu-user runs it without an arm64 sysroot).
func buildArm64Test(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "dynsdt.test")
	// go test runs a package's tests in its directory.
	cmd := exec.Command(filepath.Join(runtime.GOROOT(), "bin", "go"), "test", "-c", "-o", bin, ".")
	cmd.Env = append(os.Environ(), "GOOS=linux", "GOARCH=arm64", "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", cmd, err, out)
	}
	return bin
}

// qemuEnv is this process's environment for a test binary under qemu,
// with extra added: without the variables that make skips fail (the
// selected tests never skip, and a test that did is reported by name) and
// without XDG_RUNTIME_DIR, so that the default object directory is under
// TMPDIR.
func qemuEnv(extra ...string) []string {
	env := slices.DeleteFunc(os.Environ(), func(kv string) bool {
		name, _, _ := strings.Cut(kv, "=")
		return name == testutil.RequireEnv || name == "CI" || name == "XDG_RUNTIME_DIR" || name == "TMPDIR"
	})
	return append(env, extra...)
}

// testResults returns, sorted, the top-level tests and examples that a
// test binary run with -test.v reports as passed, and the lines of those
// that failed or skipped.
func testResults(out []byte) (passed, others []string) {
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	for sc.Scan() {
		line := sc.Text()
		rest, ok := strings.CutPrefix(line, "--- ")
		if !ok {
			continue
		}
		f := strings.Fields(rest)
		if len(f) >= 2 && f[0] == "PASS:" {
			passed = append(passed, f[1])
		} else {
			others = append(others, line)
		}
	}
	slices.Sort(passed)
	return passed, others
}

// startQemuHelper runs TestHelperLoad (provider_reap_test.go) under qemu
// with dir, and returns it with its stdin and the path of its object file.
func startQemuHelper(t *testing.T, qemu, bin, dir string) (*exec.Cmd, io.Closer, string) {
	t.Helper()
	cmd := exec.Command(qemu, bin, "-test.run=^TestHelperLoad$")
	cmd.Env = qemuEnv(HelperDirEnv + "=" + dir)
	stdin, path := StartLoadHelper(t, cmd, dir)
	return cmd, stdin, path
}

// regularFiles returns the names, relative to dir and sorted, of the
// regular files under dir.
func regularFiles(t *testing.T, dir string) []string {
	t.Helper()
	var names []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type().IsRegular() {
			rel, err := filepath.Rel(dir, path)
			if err != nil {
				return err
			}
			names = append(names, rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return names
}

func baseNames(paths ...string) []string {
	var names []string
	for _, p := range paths {
		names = append(names, filepath.Base(p))
	}
	slices.Sort(names)
	return names
}

// TestLoadedStubs checks a loaded provider's probes against its object:
// each site is the entry of its stub in the mapping and holds the stub's
// first instruction; the trampoline calls the mapped stubs, and after
// Close the copies that replace them; and Enabled sees a breakpoint
// written over the site. The other tests fire only untraced probes, which
// never reach a stub. TestArm64UnderQemu runs it on arm64.
func TestLoadedStubs(t *testing.T) {
	spec := ProviderSpec{Name: "kstubs", Probes: []ProbeSpec{
		{Name: "str", Args: []ArgType{String, Int64}},
		{Name: "twelve", Args: []ArgType{Int64, Int64, Int64, Int64, Int64, Int64,
			Int64, Int64, Int64, Int64, Int64, Int32}},
		{Name: "none"},
	}}
	mach, _ := lookupMachine(HostMachine)
	sites := []Site{SiteNop, SiteNop5, SiteNop10}
	if HostMachine != elf.EM_X86_64 {
		sites = []Site{SiteAuto}
	}
	for _, site := range sites {
		t.Run(site.String(), func(t *testing.T) { testLoadedStubs(t, &spec, mach, site) })
	}
}

func testLoadedStubs(t *testing.T, spec *ProviderSpec, mach *machine, site Site) {
	obj, err := Build(spec, HostMachine, &BuildOptions{Site: site})
	if err != nil {
		t.Fatal(err)
	}
	orig := binary.LittleEndian.Uint32(mach.stub(obj.Site))
	// What a uprobe writes over the site: int3 over the first byte, or
	// BRK #0x5 (arm64's UPROBE_BRK_IMM, arch/arm64/include/asm/brk-imm.h).
	breakpoint := map[string]uint32{"amd64": orig&^0xff | 0xcc, "arm64": 0xd42000a0}[runtime.GOARCH]

	for _, memfd := range []bool{false, true} {
		t.Run("memfd="+strconv.FormatBool(memfd), func(t *testing.T) {
			p, err := Load(spec, &Options{Memfd: memfd, Dir: t.TempDir(), Site: site})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { p.Close() })
			if have, want := p.Site(), obj.Site; have != want && site != SiteAuto {
				t.Errorf("site %v, want %v", have, want)
			}
			args := [MaxArgs]uint64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}
			for i := range p.probes {
				pr := &p.probes[i]
				if have, want := pr.stub, uintptr(p.res.img.base)+uintptr(obj.Stubs[i]); have != want {
					t.Errorf("%s: stub at %#x, want %#x", pr.name, have, want)
				}
				if have := uintptr(unsafe.Pointer(pr.site)); have != pr.stub {
					t.Errorf("%s: site at %#x, want the stub's entry %#x", pr.name, have, pr.stub)
				}
				if pr.orig != orig || atomic.LoadUint32(pr.site) != orig {
					t.Errorf("%s: site %#x, orig %#x, want %#x", pr.name, atomic.LoadUint32(pr.site), pr.orig, orig)
				}
				// The copy before the stub, which libstapsdt.h's check
				// compares the site with.
				if have := *(*uint32)(unsafe.Add(unsafe.Pointer(pr.site), -4)); have != orig {
					t.Errorf("%s: word before the site %#x, want %#x", pr.name, have, orig)
				}
				if n := pr.semaphore(); n != 0 {
					t.Errorf("%s: semaphore %d, want 0", pr.name, n)
				}
				fire(pr, &args[0], MaxArgs)

				writeSite(t, pr, breakpoint)
				if !pr.Enabled() {
					t.Errorf("%s: not enabled with a breakpoint on the site", pr.name)
				}
				writeSite(t, pr, orig)
				if pr.Enabled() {
					t.Errorf("%s: enabled with the site restored", pr.name)
				}
			}
			if err := p.Close(); err != nil {
				t.Fatal(err)
			}
			for i := range p.probes {
				pr := &p.probes[i]
				fire(pr, &args[0], MaxArgs)
				if pr.Enabled() {
					t.Errorf("%s: enabled after Close", pr.name)
				}
			}
		})
	}
}

// writeSite stores v at pr's site, as a debugger or the kernel does: the
// page made writable for the store, then read+execute again.
func writeSite(t *testing.T, pr *Probe, v uint32) {
	t.Helper()
	pg := uintptr(os.Getpagesize())
	site := unsafe.Pointer(pr.site)
	page := unsafe.Slice((*byte)(unsafe.Add(site, -int(uintptr(site)&(pg-1)))), pg)
	if err := unix.Mprotect(page, unix.PROT_READ|unix.PROT_WRITE|unix.PROT_EXEC); err != nil {
		t.Fatal(err)
	}
	atomic.StoreUint32(pr.site, v)
	if err := unix.Mprotect(page, unix.PROT_READ|unix.PROT_EXEC); err != nil {
		t.Fatal(err)
	}
}
