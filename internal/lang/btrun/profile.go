package btrun

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"unsafe"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"golang.org/x/sys/unix"

	"github.com/usdtkit/usdtkit/internal/lang/btgen"
)

// Profile blocks (btgen's profile.go) sample every CPU: per possible CPU
// one software CPU clock event (PERF_COUNT_SW_CPU_CLOCK, which needs no
// PMU) of every process (pid -1), at Block.Freq samples a second or one
// every Block.Period, with the block's program attached by a BPF link
// (Linux 5.15+). The link holds the event: its descriptor is closed once
// attached, and closing the link ends the event. Offline CPUs are
// skipped. Which processes count is the program's choice, by
// btgen.MapProfilePIDs, which fillProfilePIDs writes before any event
// exists: Options.PIDs, or every process.

// fillProfilePIDs writes the processes profile blocks sample.
func (r *Runner) fillProfilePIDs() error {
	m := r.coll.Maps[btgen.MapProfilePIDs]
	if m == nil {
		return nil
	}
	pids := r.opts.PIDs
	if len(pids) == 0 {
		pids = []int{0}
	}
	for _, pid := range pids {
		if err := m.Put(uint32(pid), uint32(1)); err != nil {
			return fmt.Errorf("profile process %d: %w", pid, err)
		}
	}
	return nil
}

// attachProfile attaches a profile block's program to a CPU clock event
// on every online CPU.
func (r *Runner) attachProfile(prog *ebpf.Program, b *btgen.Block) error {
	attr := unix.PerfEventAttr{
		Type:   unix.PERF_TYPE_SOFTWARE,
		Config: unix.PERF_COUNT_SW_CPU_CLOCK,
		Size:   uint32(unsafe.Sizeof(unix.PerfEventAttr{})),
	}
	if b.Freq > 0 {
		attr.Sample, attr.Bits = b.Freq, unix.PerfBitFreq
	} else {
		attr.Sample = uint64(b.Period.Nanoseconds())
	}
	cpus, err := ebpf.PossibleCPU()
	if err != nil {
		return fmt.Errorf("profile: %w", err)
	}
	attached := 0
	for cpu := range cpus {
		fd, err := unix.PerfEventOpen(&attr, -1, cpu, -1, unix.PERF_FLAG_FD_CLOEXEC)
		if errors.Is(err, unix.ENODEV) {
			continue // an offline CPU
		}
		if errors.Is(err, unix.EINVAL) && b.Freq > 0 {
			if max, rerr := os.ReadFile("/proc/sys/kernel/perf_event_max_sample_rate"); rerr == nil {
				return fmt.Errorf("profile: CPU clock event on CPU %d at %d hz: %w (kernel.perf_event_max_sample_rate is %s)", cpu, b.Freq, err, strings.TrimSpace(string(max)))
			}
		}
		if err != nil {
			return fmt.Errorf("profile: CPU clock event on CPU %d: %w", cpu, err)
		}
		l, err := link.AttachRawLink(link.RawLinkOptions{Target: fd, Program: prog, Attach: ebpf.AttachPerfEvent})
		unix.Close(fd)
		if err != nil {
			return fmt.Errorf("profile: attach to CPU %d: %w", cpu, err)
		}
		r.links = append(r.links, l)
		attached++
	}
	if attached == 0 {
		return fmt.Errorf("profile: no online CPU of %d", cpus)
	}
	return nil
}
