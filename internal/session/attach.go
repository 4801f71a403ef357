// Package session attaches a loaded uprobe program to the probe sites of
// objects, as usdtlink does for its programs: one uprobe_multi link per
// object (kernel 6.6+) carrying every site with its cookie and its
// semaphore's file offset, or one classic uprobe link per site (cookies
// need 5.15+). An Object with Return set gets uretprobe links of the
// same two kinds. Package trace, the tracing core, attaches through
// internal/btrun.
//
// The kernel unregisters classic uprobes one at a time, each waiting for
// an RCU grace period, while a multi link goes in one step.
package session

import (
	"errors"
	"fmt"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
)

// Object is one file to attach to, with its sites. Offsets, Cookies and
// RefCtrOffsets have one entry per site.
type Object struct {
	// Path is where the kernel finds the file: "/proc/self/fd/N" of a
	// file the caller opened once and keeps open until AttachObject
	// returns (the kernel then holds the inode), so that no name is
	// resolved again.
	Path string
	// Name is the file as users know it, for messages; Path when empty.
	Name string
	// Offsets are the file offsets of the probe sites.
	Offsets []uint64
	// Cookies are the sites' attach cookies.
	Cookies []uint64
	// RefCtrOffsets are the file offsets of the sites' semaphores, 0 for
	// none; nil when no site has one. Needs kernel 4.20+.
	RefCtrOffsets []uint64
	// Return attaches return probes (uretprobes) instead of entry probes:
	// each offset must be a function's entry, and the program runs when
	// that function returns. The kernel replaces the return address on the
	// stack, which breaks code that moves its stack (Go): callers refuse
	// Go binaries.
	Return bool
}

// AttachObject attaches prog to every site of obj: one uprobe_multi link
// when multi is true, else one classic uprobe link per site (uretprobes
// when obj.Return), for process pid only when it is not 0. On failure it
// closes the links it made and returns the error; on success the caller
// owns the links.
func AttachObject(prog *ebpf.Program, obj *Object, pid int, multi bool) ([]link.Link, error) {
	name := obj.Name
	if name == "" {
		name = obj.Path
	}
	if len(obj.Offsets) == 0 || len(obj.Cookies) != len(obj.Offsets) ||
		(obj.RefCtrOffsets != nil && len(obj.RefCtrOffsets) != len(obj.Offsets)) {
		return nil, fmt.Errorf("attach %s: %d offsets, %d cookies, %d ref_ctr offsets", name, len(obj.Offsets), len(obj.Cookies), len(obj.RefCtrOffsets))
	}
	ex, err := link.OpenExecutable(obj.Path)
	if err != nil {
		return nil, fmt.Errorf("attach %s: %w", name, err)
	}
	if multi {
		mo := &link.UprobeMultiOptions{
			Addresses:     obj.Offsets,
			Cookies:       obj.Cookies,
			RefCtrOffsets: obj.RefCtrOffsets,
			PID:           uint32(pid),
		}
		attach := ex.UprobeMulti
		if obj.Return {
			attach = ex.UretprobeMulti
		}
		l, err := attach(nil, prog, mo)
		if err != nil {
			return nil, fmt.Errorf("attach %s (%d sites): %w", name, len(obj.Offsets), err)
		}
		return []link.Link{l}, nil
	}
	var links []link.Link
	for i, off := range obj.Offsets {
		uo := &link.UprobeOptions{Address: off, Cookie: obj.Cookies[i], PID: pid}
		if obj.RefCtrOffsets != nil {
			uo.RefCtrOffset = obj.RefCtrOffsets[i]
		}
		attach := ex.Uprobe
		if obj.Return {
			attach = ex.Uretprobe
		}
		l, err := attach("", prog, uo)
		if err != nil {
			errs := []error{fmt.Errorf("attach %s at offset %#x: %w", name, off, err)}
			for _, l := range links {
				if err := l.Close(); err != nil {
					errs = append(errs, err)
				}
			}
			return nil, errors.Join(errs...)
		}
		links = append(links, l)
	}
	return links, nil
}
