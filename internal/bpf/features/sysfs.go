package features

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"

	"github.com/cilium/ebpf"
)

// Paths below the sysfs mount point.
const (
	// pmuTypePath holds the perf event type of the uprobe PMU, a decimal
	// number (Linux 4.17, commit 33ea4b24277b "perf/core: Implement the
	// 'perf_uprobe' PMU").
	pmuTypePath = "bus/event_source/devices/uprobe/type"
	// refCtrPath names the perf_event_attr bits that carry the reference
	// counter offset (Linux 4.20, commit a6ca88b241d5 "trace_uprobe:
	// support reference counter in fd-based uprobe").
	refCtrPath = "bus/event_source/devices/uprobe/format/ref_ctr_offset"
	// vmlinuxBTFPath is the kernel's own BTF (CONFIG_DEBUG_INFO_BTF, 5.4).
	vmlinuxBTFPath = "kernel/btf/vmlinux"
)

// maxSysfsValue bounds what is read from a sysfs attribute; the ones read
// here are a few bytes long.
const maxSysfsValue = 64

// HaveBTF reports whether the kernel exposes its own BTF at
// /sys/kernel/btf/vmlinux with a valid header. The error wraps
// ebpf.ErrNotSupported when the file is missing. The result is cached.
func HaveBTF() error {
	_, _, err := btfProbe.get()
	return err
}

// UprobePMUType returns the perf event type of the uprobe PMU, read from
// /sys/bus/event_source/devices/uprobe/type (Linux 4.17+). The error wraps
// ebpf.ErrNotSupported when the kernel has no such PMU. The result is
// cached.
func UprobePMUType() (uint32, error) {
	typ, _, err := pmuProbe.get()
	return typ, err
}

// HaveRefCtr reports whether uprobes created through the PMU accept a
// reference counter (semaphore) offset, that is whether
// /sys/bus/event_source/devices/uprobe/format/ref_ctr_offset exists
// (Linux 4.20+). The error wraps ebpf.ErrNotSupported when it does not.
// The result is cached.
func HaveRefCtr() error {
	_, _, err := refCtrProbe.get()
	return err
}

func probePMUType(sysfs string) (uint32, string, error) {
	b, err := readSysfs(filepath.Join(sysfs, pmuTypePath))
	if err != nil {
		return 0, "", fmt.Errorf("uprobe PMU: %w", err)
	}
	typ, err := parsePMUType(b)
	if err != nil {
		return 0, "", fmt.Errorf("uprobe PMU: %w", err)
	}
	return typ, fmt.Sprintf("PMU type %d", typ), nil
}

func probeRefCtr(sysfs string) (struct{}, string, error) {
	b, err := readSysfs(filepath.Join(sysfs, refCtrPath))
	if err != nil {
		return struct{}{}, "", fmt.Errorf("uprobe ref_ctr_offset: %w", err)
	}
	return struct{}{}, fmt.Sprintf("ref_ctr_offset in %s", bytes.TrimSpace(b)), nil
}

func probeBTF(sysfs string) (struct{}, string, error) {
	path := filepath.Join(sysfs, vmlinuxBTFPath)
	f, err := os.Open(path)
	if err != nil {
		return struct{}{}, "", fmt.Errorf("vmlinux BTF: %w", sysfsError(err))
	}
	defer f.Close()
	var hdr [btfHeaderLen]byte
	if _, err := io.ReadFull(f, hdr[:]); err != nil {
		return struct{}{}, "", fmt.Errorf("vmlinux BTF %s: read header: %w", path, err)
	}
	if err := checkBTFHeader(hdr[:]); err != nil {
		return struct{}{}, "", fmt.Errorf("vmlinux BTF %s: %w", path, err)
	}
	// sysfs reports the real size of this binary attribute.
	detail := path
	if fi, err := f.Stat(); err == nil {
		detail = fmt.Sprintf("%s, %.1f MiB", path, float64(fi.Size())/(1<<20))
	}
	return struct{}{}, detail, nil
}

// readSysfs reads a small sysfs attribute. A missing file means the kernel
// lacks the feature.
func readSysfs(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, sysfsError(err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxSysfsValue+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	if len(b) > maxSysfsValue {
		return nil, fmt.Errorf("%s: longer than %d bytes", path, maxSysfsValue)
	}
	return b, nil
}

// sysfsError adds ebpf.ErrNotSupported to "no such file": the kernel was
// built without the feature (or is too old for it).
func sysfsError(err error) error {
	if errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("%w: %w", ebpf.ErrNotSupported, err)
	}
	return err
}

// formatError is a malformed sysfs attribute or BTF header.
type formatError struct {
	Msg string // what is wrong
	Val string // the offending text
}

func (e *formatError) Error() string { return fmt.Sprintf("%s %q", e.Msg, e.Val) }

// parsePMUType parses the content of a PMU's type attribute: a decimal
// uint32 and a newline.
func parsePMUType(b []byte) (uint32, error) {
	s := string(bytes.TrimSuffix(b, []byte("\n")))
	n, err := strconv.ParseUint(s, 10, 32)
	if err != nil {
		return 0, &formatError{Msg: "PMU type is not a decimal uint32:", Val: s}
	}
	return uint32(n), nil
}

// btfHeaderLen is the size of struct btf_header (include/uapi/linux/btf.h):
// magic u16, version u8, flags u8, hdr_len u32, then four u32 offsets and
// lengths of the type and string sections.
const btfHeaderLen = 24

// btfMagic is BTF_MAGIC; the kernel writes its BTF in host byte order.
const btfMagic = 0xeb9f

// checkBTFHeader checks the magic and version of a BTF blob.
func checkBTFHeader(b []byte) error {
	if len(b) < btfHeaderLen {
		return &formatError{Msg: "BTF header truncated:", Val: fmt.Sprintf("%x", b)}
	}
	if binary.NativeEndian.Uint16(b) != btfMagic {
		return &formatError{Msg: "no BTF magic:", Val: fmt.Sprintf("%x", b[:2])}
	}
	if b[2] != 1 {
		return &formatError{Msg: "unknown BTF version:", Val: strconv.Itoa(int(b[2]))}
	}
	return nil
}
