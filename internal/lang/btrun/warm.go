package btrun

import (
	"os"
	"runtime"
	"sync"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/features"
	"github.com/cilium/ebpf/link"
)

// The warm-up in flight: warmCh is non-nil while one runs and is closed
// when it ends; warmErr is the last one's error.
var (
	warmMu  sync.Mutex
	warmCh  chan struct{}
	warmErr error
)

// Warm starts, in the background, the kernel's cost of a first uprobe
// registration, so that a Start soon after (within tens of milliseconds)
// does not wait for it in full, and returns a channel closed when that
// background work has ended. The kernel waits for an RCU grace period
// when a uprobe is registered or
// removed and none was for about a grace period before (uprobes'
// dup_mmap_sem is a per-CPU rw-semaphore, whose writer waits for one): a
// tracer that registers its first uprobe only once its program is
// compiled and loaded waits for it after all its other work. Warm
// registers and removes, in a goroutine, a uprobe of an empty program on
// fire, for this process only, so that the grace period runs while the
// caller compiles and loads.
//
// Warm returns at once and is safe for concurrent use: a call while a
// warm-up runs joins it. It changes nothing else: without the privileges
// or the kernel's support it does nothing. Start calls it, and Close
// waits for the channel, so that no file Warm opened outlives the Runner;
// a caller that compiles first gains more by calling it before compiling.
func Warm() <-chan struct{} {
	warmMu.Lock()
	defer warmMu.Unlock()
	if warmCh != nil {
		return warmCh
	}
	ch := make(chan struct{})
	warmCh = ch
	go func() {
		err := warm()
		warmMu.Lock()
		warmErr, warmCh = err, nil
		warmMu.Unlock()
		close(ch)
	}()
	// The grace period is what a Start soon after waits for: let the
	// registration begin before the caller's own work, which takes a CPU
	// the registration would otherwise wait for on a busy machine.
	runtime.Gosched()
	return ch
}

// warm registers and removes one uprobe on fire. Warm keeps its error for
// tests only, as the only effect sought is the kernel's.
func warm() error {
	site, err := stubSite()
	if err != nil {
		return err
	}
	multi := features.HaveBPFLinkUprobeMulti() == nil
	spec := &ebpf.ProgramSpec{
		Name: "warm", Type: ebpf.Kprobe, License: "GPL",
		Instructions: asm.Instructions{asm.Mov.Imm(asm.R0, 0), asm.Return()},
	}
	if multi {
		spec.AttachType = ebpf.AttachTraceUprobeMulti
	}
	prog, err := ebpf.NewProgram(spec)
	if err != nil {
		return err
	}
	defer prog.Close()
	ex, err := link.OpenExecutable(site.Path)
	if err != nil {
		return err
	}
	var l link.Link
	if multi {
		l, err = ex.UprobeMulti(nil, prog, &link.UprobeMultiOptions{Addresses: []uint64{site.Offset}, PID: uint32(os.Getpid())})
	} else {
		l, err = ex.Uprobe("", prog, &link.UprobeOptions{Address: site.Offset, PID: os.Getpid()})
	}
	if err != nil {
		return err
	}
	return l.Close()
}
