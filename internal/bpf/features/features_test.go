package features

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"sync"
	"syscall"
	"testing"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"

	"github.com/usdtkit/usdtkit/internal/proc/procfs"
	"github.com/usdtkit/usdtkit/internal/testutil"
)

// kernelAtLeast reports whether the running kernel is major.minor or newer.
func kernelAtLeast(t *testing.T, major, minor int) bool {
	t.Helper()
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		t.Fatal(err)
	}
	var haveMajor, haveMinor int
	rel := unix.ByteSliceToString(u.Release[:])
	if _, err := fmt.Sscanf(rel, "%d.%d", &haveMajor, &haveMinor); err != nil {
		t.Fatalf("kernel release %q: %v", rel, err)
	}
	return haveMajor > major || haveMajor == major && haveMinor >= minor
}

// TestConcurrentProbesRunOnce calls every check from many goroutines (run
// with -race) and asserts that each probe ran once and all callers saw the
// same outcome. It is the first test of the package, so that the first
// calls race.
func TestConcurrentProbesRunOnce(t *testing.T) {
	testutil.RequireBPF(t)
	const callers = 16
	outcomes := make([][]Result, callers)
	var wg sync.WaitGroup
	for i := range callers {
		wg.Go(func() {
			outcomes[i] = Check()
			// The exported functions share the cache with Check.
			HaveBPF()
			UprobePMUType()
			Nop5Optimized()
		})
	}
	wg.Wait()
	for i := 1; i < callers; i++ {
		if !slices.EqualFunc(outcomes[0], outcomes[i], func(a, b Result) bool { return a == b }) {
			t.Errorf("caller %d saw %+v, caller 0 saw %+v", i, outcomes[i], outcomes[0])
		}
	}
	runs := map[string]int32{
		"bpf":          bpfProbe.runs.Load(),
		"btf":          btfProbe.runs.Load(),
		"uprobe-pmu":   pmuProbe.runs.Load(),
		"ref-ctr":      refCtrProbe.runs.Load(),
		"uprobe-multi": uprobeMultiProbe.runs.Load(),
		"cookies":      cookiesProbe.runs.Load(),
		"nop5":         nop5Probe.runs.Load(),
		"copystr":      copyStrProbe.runs.Load(),
	}
	for name, n := range runs {
		if n != 1 {
			t.Errorf("%s: probe ran %d times, want 1", name, n)
		}
	}
}

// TestFeaturesHere asserts what our CI machines (Linux 6.18, x86-64, root)
// have: every feature, and nop5 optimization from 6.18 on x86-64.
func TestFeaturesHere(t *testing.T) {
	testutil.RequireBPF(t)
	pmu := func() error { _, err := UprobePMUType(); return err }
	tests := []struct {
		name string
		have func() error
	}{
		{"HaveBPF", HaveBPF},
		{"HaveBTF", HaveBTF},
		{"UprobePMUType", pmu},
		{"HaveRefCtr", HaveRefCtr},
		{"HaveUprobeMulti", HaveUprobeMulti},
		{"HaveCookies", HaveCookies},
		{"CanTrace", CanTrace},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.have(); err != nil {
				t.Errorf("have %v, want nil", err)
			}
		})
	}
	t.Run("HaveBPFLoop", func(t *testing.T) {
		err := HaveBPFLoop()
		if want := kernelAtLeast(t, 5, 17); (err == nil) != want {
			t.Errorf("have %v; want nil: %v", err, want)
		}
	})
	t.Run("Nop5Optimized", func(t *testing.T) {
		want := runtime.GOARCH == "amd64" && kernelAtLeast(t, 6, 18)
		have, err := Nop5Optimized()
		if err != nil || have != want {
			t.Errorf("have %v, %v; want %v, nil", have, err, want)
		}
	})
}

// timing matches a duration: a number and a unit of time.
var timing = regexp.MustCompile(`[0-9][0-9 ,.]*\s*(ns|µs|us|ms|s|seconds?|minutes?)\b`)

// TestCheck checks the order and consistency of Check's results.
func TestCheck(t *testing.T) {
	testutil.RequireBPF(t)
	want := []string{"bpf", "btf", "uprobe-pmu", "ref-ctr", "uprobe-multi", "cookies", "nop5-optimization", "sleepable-strings", "bpf-loop"}
	results := Check()
	var names []string
	for _, r := range results {
		names = append(names, r.Name)
		if r.OK != (r.Err == nil) {
			t.Errorf("%s: OK %v with Err %v", r.Name, r.OK, r.Err)
		}
		if r.Impact == "" {
			t.Errorf("%s: no impact", r.Name)
		}
		// Timings belong in docs/benchmarks.md, not in what doctor prints.
		if m := timing.FindString(r.Impact); m != "" {
			t.Errorf("%s: impact %q states a timing (%q)", r.Name, r.Impact, m)
		}
		if r.OK && r.Detail == "" {
			t.Errorf("%s: ok without detail", r.Name)
		}
	}
	if !slices.Equal(names, want) {
		t.Errorf("have names %q, want %q", names, want)
	}
	if again := Check(); !slices.EqualFunc(results, again, func(a, b Result) bool { return a == b }) {
		t.Errorf("second Check differs:\nhave %+v\nwant %+v", again, results)
	}
}

// TestCachedKeepsErrors checks that a failing probe is not retried.
func TestCachedKeepsErrors(t *testing.T) {
	errBoom := errors.New("boom")
	c := newCached(func() (int, string, error) { return 0, "tried", errBoom })
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			if _, detail, err := c.get(); !errors.Is(err, errBoom) || detail != "tried" {
				t.Errorf("have %q, %v; want \"tried\", %v", detail, err, errBoom)
			}
		})
	}
	wg.Wait()
	if n := c.runs.Load(); n != 1 {
		t.Errorf("have %d runs, want 1", n)
	}
}

func TestSysfsProbes(t *testing.T) {
	tests := []struct {
		tree       string // under testdata/sysfs; "" is an empty tree
		wantType   uint32
		typeErr    error // errors.Is target; formatErr means *formatError
		refCtrErr  error
		btfErr     error
		wantDetail string // of the PMU probe
	}{
		{tree: "linux-6.18", wantType: 8, wantDetail: "PMU type 8"},
		{tree: "linux-4.19", wantType: 7, wantDetail: "PMU type 7", refCtrErr: ebpf.ErrNotSupported, btfErr: ebpf.ErrNotSupported},
		{tree: "broken", typeErr: errFormat, refCtrErr: ebpf.ErrNotSupported, btfErr: ebpf.ErrNotSupported},
		{tree: "", typeErr: ebpf.ErrNotSupported, refCtrErr: ebpf.ErrNotSupported, btfErr: ebpf.ErrNotSupported},
	}
	for _, tt := range tests {
		t.Run(tt.tree, func(t *testing.T) {
			root := t.TempDir()
			if tt.tree != "" {
				root = filepath.Join("testdata", "sysfs", tt.tree)
				testutil.RequireFile(t, root)
			}
			typ, detail, err := probePMUType(root)
			if !matches(err, tt.typeErr) || typ != tt.wantType || detail != tt.wantDetail {
				t.Errorf("PMU type: have %d, %q, %v; want %d, %q, %v", typ, detail, err, tt.wantType, tt.wantDetail, tt.typeErr)
			}
			if _, _, err := probeRefCtr(root); !matches(err, tt.refCtrErr) {
				t.Errorf("ref_ctr: have %v, want %v", err, tt.refCtrErr)
			}
			if _, _, err := probeBTF(root); !matches(err, tt.btfErr) {
				t.Errorf("BTF: have %v, want %v", err, tt.btfErr)
			}
		})
	}
}

// errFormat stands for "a *formatError" in test tables.
var errFormat = errors.New("a *formatError")

func matches(err, want error) bool {
	switch want {
	case nil:
		return err == nil
	case errFormat:
		var fe *formatError
		return errors.As(err, &fe)
	}
	return errors.Is(err, want)
}

func TestParsePMUType(t *testing.T) {
	tests := []struct {
		in   string
		want uint32
		err  error
	}{
		{"8\n", 8, nil},
		{"8", 8, nil},
		{"4294967295\n", 1<<32 - 1, nil},
		{"4294967296\n", 0, errFormat},
		{"-1\n", 0, errFormat},
		{"", 0, errFormat},
		{"8\n\n", 0, errFormat},
		{" 8\n", 0, errFormat},
	}
	for _, tt := range tests {
		have, err := parsePMUType([]byte(tt.in))
		if have != tt.want || !matches(err, tt.err) {
			t.Errorf("parsePMUType(%q): have %d, %v; want %d, %v", tt.in, have, err, tt.want, tt.err)
		}
	}
}

func TestCheckBTFHeader(t *testing.T) {
	good := make([]byte, btfHeaderLen)
	binary.NativeEndian.PutUint16(good, btfMagic)
	good[2] = 1 // version
	badVersion := slices.Clone(good)
	badVersion[2] = 2
	badMagic := slices.Clone(good)
	badMagic[0] = 0
	tests := []struct {
		name string
		in   []byte
		err  error
	}{
		{"good", good, nil},
		{"truncated", good[:btfHeaderLen-1], errFormat},
		{"bad magic", badMagic, errFormat},
		{"bad version", badVersion, errFormat},
		{"empty", nil, errFormat},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := checkBTFHeader(tt.in); !matches(err, tt.err) {
				t.Errorf("have %v, want %v", err, tt.err)
			}
		})
	}
}

func TestClassifyNop5(t *testing.T) {
	const site = 0x401000
	tramp := procfs.Mapping{Start: 0x3ff000, End: 0x400000, Perms: "r-xp", Path: trampolineName}
	other := procfs.Mapping{Start: 0x7f0000000000, End: 0x7f0000001000, Perms: "r-xp", Path: "[vdso]"}
	// call rel32 from site to target: rel = target - (site + 5).
	call := func(target uint64) []byte {
		rel := uint32(int32(int64(target) - int64(site+5)))
		return []byte{callOp, byte(rel), byte(rel >> 8), byte(rel >> 16), byte(rel >> 24)}
	}
	tests := []struct {
		name string
		code []byte
		want bool
		err  bool
	}{
		{"call into trampoline", call(0x3ff000), true, false},
		{"call elsewhere", call(0x7f0000000000), false, true},
		{"int3", []byte{int3Op, 0x1f, 0x44, 0x00, 0x00}, false, false},
		{"nop5 untouched", nop5Insn, false, true},
		{"short read", []byte{callOp}, false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			have, detail, err := classifyNop5(tt.code, site, []procfs.Mapping{other, tramp})
			if have != tt.want || (err != nil) != tt.err || (err == nil && detail == "") {
				t.Errorf("have %v, %q, %v; want %v, error %v", have, detail, err, tt.want, tt.err)
			}
		})
	}
}

// TestSelfOffset checks the address-to-file-offset mapping the probes use
// against the ELF file: the bytes at the offset are the bytes in memory.
func TestSelfOffset(t *testing.T) {
	nop5, nop1, ok := sites()
	if !ok {
		t.Skip("no probe sites on", runtime.GOARCH)
	}
	exe, err := os.ReadFile(selfExe)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []codeSite{nop5, nop1} {
		off, err := selfOffset(s.addr)
		if err != nil {
			t.Fatal(err)
		}
		mem, err := readSelf(s.addr, 6)
		if err != nil {
			t.Fatal(err)
		}
		if off+6 > uint64(len(exe)) || !slices.Equal(exe[off:off+6], mem) {
			t.Errorf("site %#x at file offset %#x: memory % x, file differs", s.addr, off, mem)
		}
	}
	if _, err := selfOffset(0); err == nil {
		t.Error("offset of address 0: have nil error")
	}
}

// childEnv marks the copy of this test binary that TestUnprivileged runs
// as nobody.
const childEnv = "USDTKIT_FEATURES_UNPRIVILEGED_CHILD"

// TestUnprivileged runs this test binary as nobody and checks, there, that
// every check that loads BPF programs fails with an error wrapping
// os.ErrPermission and that the sysfs checks still work.
func TestUnprivileged(t *testing.T) {
	if os.Getenv(childEnv) == "1" {
		for name, err := range map[string]error{
			"HaveBPF":         HaveBPF(),
			"HaveUprobeMulti": HaveUprobeMulti(),
			"HaveCookies":     HaveCookies(),
			"HaveBPFLoop":     HaveBPFLoop(),
			"CanTrace":        CanTrace(),
		} {
			if !errors.Is(err, os.ErrPermission) {
				t.Errorf("%s: have %v, want an error wrapping os.ErrPermission", name, err)
			}
		}
		if ok, err := Nop5Optimized(); ok || !errors.Is(err, os.ErrPermission) {
			t.Errorf("Nop5Optimized: have %v, %v; want false and os.ErrPermission", ok, err)
		}
		if _, err := UprobePMUType(); err != nil {
			t.Errorf("UprobePMUType: have %v, want nil", err)
		}
		return
	}
	testutil.RequireRoot(t) // to switch to another user
	// The test binary's own directory is private; nobody needs to run it.
	dir, err := os.MkdirTemp("", "usdtkit-features-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	self, err := os.ReadFile(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "features.test")
	if err := os.WriteFile(bin, self, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	const nobody = 65534
	cmd := exec.Command(bin, "-test.run", "^TestUnprivileged$", "-test.v")
	cmd.Dir = "/"
	cmd.Env = append(os.Environ(), childEnv+"=1")
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Credential: &syscall.Credential{Uid: nobody, Gid: nobody, NoSetGroups: true},
	}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("as nobody: %v\n%s", err, out)
	}
}
