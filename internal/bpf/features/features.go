package features

import (
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/cilium/ebpf"
)

// Result is the outcome of one check, as Check reports it and `usdtkit
// doctor` prints it. It is plain data, safe to copy and compare.
type Result struct {
	// Name identifies the check: "bpf", "btf", "uprobe-pmu", "ref-ctr",
	// "uprobe-multi", "cookies", "nop5-optimization",
	// "sleepable-strings" or "bpf-loop".
	Name string
	// OK is true when the feature is available (Err is nil).
	OK bool
	// Detail is what was found, e.g. "PMU type 8" or the kernel release.
	Detail string
	// Err says why the feature is missing. It wraps ebpf.ErrNotSupported
	// when the kernel cannot do it and os.ErrPermission when this process
	// lacks the privileges to find out or to use it.
	Err error
	// Impact is one sentence on what usdtkit does without the feature.
	Impact string
}

// cached runs a feature probe once and remembers its outcome, including
// errors: like cilium/ebpf's features, a result persists across later
// changes to the process's privileges. It is safe for concurrent use.
type cached[T any] struct {
	fn func() (T, string, error)

	once   sync.Once
	runs   atomic.Int32 // how often fn ran; tests assert it is 1
	val    T
	detail string
	err    error
}

func newCached[T any](fn func() (T, string, error)) *cached[T] {
	return &cached[T]{fn: fn}
}

func (c *cached[T]) get() (T, string, error) {
	c.once.Do(func() {
		c.runs.Add(1)
		c.val, c.detail, c.err = c.fn()
	})
	return c.val, c.detail, c.err
}

// outcome is get without the value.
func (c *cached[T]) outcome() (string, error) {
	_, detail, err := c.get()
	return detail, err
}

// The probes, one per feature. They hold only their cached outcome; see
// docs/architecture.md.
var (
	bpfProbe         = newCached(probeBPF)
	btfProbe         = newCached(func() (struct{}, string, error) { return probeBTF(sysfsRoot) })
	pmuProbe         = newCached(func() (uint32, string, error) { return probePMUType(sysfsRoot) })
	refCtrProbe      = newCached(func() (struct{}, string, error) { return probeRefCtr(sysfsRoot) })
	uprobeMultiProbe = newCached(probeUprobeMulti)
	cookiesProbe     = newCached(probeCookies)
	nop5Probe        = newCached(probeNop5)
	copyStrProbe     = newCached(probeCopyStr)
	bpfLoopProbe     = newCached(probeBPFLoop)
)

// sysfsRoot is where sysfs is mounted; tests pass fake trees to the probe
// functions instead.
const sysfsRoot = "/sys"

// Impacts of missing features, one sentence each.
const (
	impactBPF = "nothing can be traced: usdtkit cannot load BPF programs " +
		"(run as root or grant CAP_BPF and CAP_PERFMON)"
	impactBTF = "usdtkit's generated programs do not need it, but nothing " +
		"that reads kernel types (CO-RE) can run on this kernel"
	impactPMU = "classic uprobes cannot be created through perf_event_open " +
		"and must go through tracefs, which needs it mounted at /sys/kernel/tracing"
	impactRefCtr = "semaphore-guarded probes (Python's function__entry, most " +
		"of libjvm's) never fire: the kernel cannot raise their semaphores"
	impactUprobeMulti = "falls back to one classic uprobe link per site; " +
		"attaching and closing grow with the number of sites " +
		"(docs/benchmarks.md: attach + detach of 1000 sites)"
	impactCookies = "a probe whose sites have different argument specs " +
		"needs one BPF program per spec instead of one program that " +
		"picks the spec by the attach cookie"
	impactNop5 = "5-byte nop sites trap through int3 like 1-byte ones, " +
		"which costs more per hit (see BenchmarkUprobeHit); attaching to " +
		"a nop5 inside a function is safe"
	impactBPFLoop = "ustack map keys (@[ustack], --stacks) fall back to the " +
		"frame-pointer walk (--unwind fp): their stacks end at code built " +
		"without frame pointers (Debian's libc, most -O2 C code); --unwind " +
		"cfi still unwinds them with CFI, in usdtkit"
	impactCopyStr = "strings are read with bpf_probe_read_user_str, which " +
		"cannot fault pages in: a string in a page the process has not " +
		"touched yet reads as empty and faulted, as in bpftrace"
)

// Check runs every check, each at most once per process, and returns the
// results in a stable order: bpf, btf, uprobe-pmu, ref-ctr, uprobe-multi,
// cookies, nop5-optimization, sleepable-strings, bpf-loop. It is safe for
// concurrent use.
func Check() []Result {
	return []Result{
		result("bpf", impactBPF, bpfProbe.outcome),
		result("btf", impactBTF, btfProbe.outcome),
		result("uprobe-pmu", impactPMU, pmuProbe.outcome),
		result("ref-ctr", impactRefCtr, refCtrProbe.outcome),
		result("uprobe-multi", impactUprobeMulti, uprobeMultiProbe.outcome),
		result("cookies", impactCookies, cookiesProbe.outcome),
		result("nop5-optimization", impactNop5, nop5Outcome),
		result("sleepable-strings", impactCopyStr, copyStrProbe.outcome),
		result("bpf-loop", impactBPFLoop, bpfLoopProbe.outcome),
	}
}

// CanTrace reports whether usdtkit can trace at all: nil when this process
// may load BPF programs and the kernel has the uprobe PMU, else the first
// error of HaveBPF and UprobePMUType.
func CanTrace() error {
	if err := HaveBPF(); err != nil {
		return err
	}
	_, err := UprobePMUType()
	return err
}

func result(name, impact string, outcome func() (string, error)) Result {
	detail, err := outcome()
	return Result{Name: name, OK: err == nil, Detail: detail, Err: err, Impact: impact}
}

// nop5Outcome turns Nop5Optimized's (false, nil), "this kernel traps on
// nop5s", into a missing feature.
func nop5Outcome() (string, error) {
	ok, detail, err := nop5Probe.get()
	if err == nil && !ok {
		err = fmt.Errorf("nop5 sites are not optimized: %w", ebpf.ErrNotSupported)
	}
	return detail, err
}
