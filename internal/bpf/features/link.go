package features

import (
	"errors"
	"fmt"
	"os"
	"reflect"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/features"
	"github.com/cilium/ebpf/link"
	"golang.org/x/sys/unix"

	"github.com/usdtkit/usdtkit/internal/proc/procfs"
)

// selfExe names this process's executable even when it was deleted or
// replaced on disk: the kernel resolves the magic link to the mapped inode.
const selfExe = "/proc/self/exe"

// HaveUprobeMulti reports whether uprobe_multi links work (Linux 6.6+):
// cilium/ebpf's probe says whether the kernel has them, then a real link
// is attached to a function of this executable, for this process only, and
// closed. The error wraps ebpf.ErrNotSupported when the kernel lacks them
// and os.ErrPermission when this process may not load BPF programs. The
// result is cached.
func HaveUprobeMulti() error {
	_, _, err := uprobeMultiProbe.get()
	return err
}

// HaveCookies reports whether kprobe-type programs, which uprobes run, may
// call bpf_get_attach_cookie (Linux 5.15+), so that one program serves
// sites with different argument specs. The error wraps
// ebpf.ErrNotSupported when they may not and os.ErrPermission when this
// process may not load BPF programs. The result is cached.
func HaveCookies() error {
	_, _, err := cookiesProbe.get()
	return err
}

func probeCookies() (struct{}, string, error) {
	if err := requireBPF(); err != nil {
		return struct{}{}, "", err
	}
	if err := features.HaveProgramHelper(ebpf.Kprobe, asm.FnGetAttachCookie); err != nil {
		return struct{}{}, "", fmt.Errorf("bpf_get_attach_cookie: %w", err)
	}
	return struct{}{}, "bpf_get_attach_cookie callable from kprobe-type programs", nil
}

// HaveBPFLoop reports whether kprobe-type programs may call bpf_loop
// (Linux 5.17+), which the walk of stack keys with call frame
// information in the program needs (its callback unwinds a frame; a
// program with a callback also needs BTF function information, which
// every kernel with bpf_loop takes). The error wraps
// ebpf.ErrNotSupported when they may not and os.ErrPermission when this
// process may not load BPF programs. The result is cached.
func HaveBPFLoop() error {
	_, _, err := bpfLoopProbe.get()
	return err
}

func probeBPFLoop() (struct{}, string, error) {
	if err := requireBPF(); err != nil {
		return struct{}{}, "", err
	}
	if err := features.HaveProgramHelper(ebpf.Kprobe, asm.FnLoop); err != nil {
		return struct{}{}, "", fmt.Errorf("bpf_loop: %w", err)
	}
	return struct{}{}, "bpf_loop callable from kprobe-type programs: ustack map keys are unwound with CFI in the program (--unwind cfi-bpf, the default)", nil
}

// multiTarget is the function the uprobe_multi probe attaches to; it is
// never called.
//
//go:noinline
func multiTarget() {}

func probeUprobeMulti() (struct{}, string, error) {
	if err := requireBPF(); err != nil {
		return struct{}{}, "", err
	}
	// Cheap and conclusive about the kernel: it asks for a link on "/".
	if err := features.HaveBPFLinkUprobeMulti(); err != nil {
		return struct{}{}, "", err
	}
	off, err := selfOffset(uint64(reflect.ValueOf(multiTarget).Pointer()))
	if err != nil {
		return struct{}{}, "", fmt.Errorf("uprobe_multi: %w", err)
	}
	prog, err := emptyProgram(ebpf.AttachTraceUprobeMulti)
	if err != nil {
		return struct{}{}, "", err
	}
	defer prog.Close()
	ex, err := link.OpenExecutable(selfExe)
	if err != nil {
		return struct{}{}, "", fmt.Errorf("uprobe_multi: %w", err)
	}
	l, err := ex.UprobeMulti(nil, prog, &link.UprobeMultiOptions{
		Addresses: []uint64{off},
		PID:       uint32(os.Getpid()),
	})
	if err != nil {
		return struct{}{}, "", fmt.Errorf("attach uprobe_multi to %s at %#x: %w", selfExe, off, err)
	}
	if err := l.Close(); err != nil {
		return struct{}{}, "", fmt.Errorf("close uprobe_multi link: %w", err)
	}
	return struct{}{}, fmt.Sprintf("attached and closed a uprobe_multi link on %s at %#x", selfExe, off), nil
}

// selfOffset turns a code address of this process into an offset in the
// file /proc/self/exe names, through the mapping that contains it.
func selfOffset(addr uint64) (uint64, error) {
	maps, err := procfs.ReadMaps(os.Getpid())
	if err != nil {
		return 0, err
	}
	var st unix.Stat_t
	if err := unix.Stat(selfExe, &st); err != nil {
		return 0, fmt.Errorf("stat %s: %w", selfExe, err)
	}
	for _, m := range maps {
		if addr < m.Start || addr >= m.End {
			continue
		}
		if !m.Exec() || m.Inode != st.Ino || m.Major != unix.Major(st.Dev) || m.Minor != unix.Minor(st.Dev) {
			return 0, fmt.Errorf("code at %#x is in %q, not in an executable mapping of %s", addr, m.Path, selfExe)
		}
		return addr - m.Start + m.Offset, nil
	}
	return 0, fmt.Errorf("code at %#x: no mapping", addr)
}

// selfProbe is an empty BPF program attached as a classic uprobe to code
// of this process, for this process only. It is not safe for concurrent
// use; Close may be called twice.
type selfProbe struct {
	prog *ebpf.Program
	link link.Link
}

// attachSelf attaches an empty program at the code address addr of this
// process.
func attachSelf(addr uint64) (*selfProbe, error) {
	off, err := selfOffset(addr)
	if err != nil {
		return nil, err
	}
	prog, err := emptyProgram(ebpf.AttachNone)
	if err != nil {
		return nil, err
	}
	ex, err := link.OpenExecutable(selfExe)
	if err != nil {
		prog.Close()
		return nil, err
	}
	l, err := ex.Uprobe("", prog, &link.UprobeOptions{Address: off, PID: os.Getpid()})
	if err != nil {
		prog.Close()
		return nil, fmt.Errorf("attach uprobe to %s at %#x: %w", selfExe, off, err)
	}
	return &selfProbe{prog: prog, link: l}, nil
}

func (p *selfProbe) Close() error {
	var errs []error
	if p.link != nil {
		errs = append(errs, p.link.Close())
		p.link = nil
	}
	if p.prog != nil {
		errs = append(errs, p.prog.Close())
		p.prog = nil
	}
	return errors.Join(errs...)
}
