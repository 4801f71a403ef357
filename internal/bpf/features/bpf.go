package features

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"golang.org/x/sys/unix"
)

// HaveBPF reports whether this process may load the programs usdtkit
// attaches to uprobes: it loads an empty kprobe-type program and closes it.
// Loading one needs root, or CAP_BPF and CAP_PERFMON (Linux 5.8+; before,
// CAP_SYS_ADMIN). The error wraps os.ErrPermission when the kernel refused
// for lack of privileges, and ebpf.ErrNotSupported when the kernel has no
// BPF syscall. The result is cached.
func HaveBPF() error {
	_, _, err := bpfProbe.get()
	return err
}

func probeBPF() (struct{}, string, error) {
	detail := fmt.Sprintf("kernel %s, %s", kernelRelease(), privileges())
	prog, err := emptyProgram(ebpf.AttachNone)
	if err != nil {
		return struct{}{}, detail, err
	}
	prog.Close()
	return struct{}{}, detail, nil
}

// emptyProgram loads "return 0" as a kprobe-type program, the type uprobes
// run. attach is ebpf.AttachTraceUprobeMulti for uprobe_multi links.
func emptyProgram(attach ebpf.AttachType) (*ebpf.Program, error) {
	prog, err := ebpf.NewProgram(&ebpf.ProgramSpec{
		Name:       "usdtkit_probe",
		Type:       ebpf.Kprobe,
		AttachType: attach,
		License:    "MIT",
		Instructions: asm.Instructions{
			asm.Mov.Imm(asm.R0, 0),
			asm.Return(),
		},
	})
	switch {
	case err == nil:
		return prog, nil
	case errors.Is(err, os.ErrPermission):
		// EPERM: no CAP_BPF/CAP_PERFMON, or kernel.unprivileged_bpf_disabled.
		// Keep only the errno: cilium adds a hint about RLIMIT_MEMLOCK that
		// is wrong on kernels that charge BPF memory to the cgroup (5.11+).
		var errno unix.Errno
		if errors.As(err, &errno) {
			err = errno
		}
		return nil, fmt.Errorf("load a kprobe program: %w (needs root or CAP_BPF+CAP_PERFMON)", err)
	case errors.Is(err, unix.ENOSYS):
		return nil, fmt.Errorf("load a kprobe program: %w: %w (kernel built without CONFIG_BPF_SYSCALL)", ebpf.ErrNotSupported, err)
	}
	return nil, fmt.Errorf("load a kprobe program: %w", err)
}

// needsBPFError is the outcome of a check that loads BPF programs when
// HaveBPF failed: a short message, the cause in the chain.
type needsBPFError struct{ err error }

func (e *needsBPFError) Error() string { return "not checked: BPF programs do not load" }
func (e *needsBPFError) Unwrap() error { return e.err }

// requireBPF is HaveBPF for checks that build on it.
func requireBPF() error {
	if err := HaveBPF(); err != nil {
		return &needsBPFError{err}
	}
	return nil
}

// kernelRelease is uname -r, or "?" if uname fails.
func kernelRelease() string {
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		return "?"
	}
	return unix.ByteSliceToString(u.Release[:])
}

// privileges describes the effective user and the capabilities that matter
// for tracing, e.g. "uid 0 with CAP_BPF, CAP_PERFMON, CAP_SYS_ADMIN".
func privileges() string {
	s := fmt.Sprintf("uid %d", os.Geteuid())
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	// Version 3 has two 32-bit words of each set; Capget writes both.
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return s
	}
	eff := uint64(data[1].Effective)<<32 | uint64(data[0].Effective)
	var caps []string
	for _, c := range []struct {
		bit  uint
		name string
	}{
		{unix.CAP_BPF, "CAP_BPF"},
		{unix.CAP_PERFMON, "CAP_PERFMON"},
		{unix.CAP_SYS_ADMIN, "CAP_SYS_ADMIN"},
	} {
		if eff&(1<<c.bit) != 0 {
			caps = append(caps, c.name)
		}
	}
	if len(caps) == 0 {
		return s + " without CAP_BPF, CAP_PERFMON or CAP_SYS_ADMIN"
	}
	return s + " with " + strings.Join(caps, ", ")
}
