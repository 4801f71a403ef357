package attach

import (
	"cmp"
	"errors"
	"fmt"
	"os"
	"slices"
	"sync"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"golang.org/x/sys/unix"
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

// Refusal is a site the kernel refuses to probe.
type Refusal struct {
	// Index is the site's index in Object.Offsets.
	Index int
	// Offset is its file offset.
	Offset uint64
	// Err says why: the kernel's error, or the instruction it refuses
	// (an *InsnError).
	Err error
}

// AttachObject attaches prog to every site of obj: one uprobe_multi link
// when multi is true, else one classic uprobe link per site (uretprobes
// when obj.Return), for process pid only when it is not 0. On failure,
// a site the kernel refuses included, it closes the links it made and
// returns the error; on success the caller owns the links.
func AttachObject(prog *ebpf.Program, obj *Object, pid int, multi bool) ([]link.Link, error) {
	links, refused, err := AttachSites(prog, obj, pid, multi)
	if err != nil {
		return nil, err
	}
	if len(refused) > 0 {
		err := fmt.Errorf("attach %s at offset %#x: %w", obj.name(), refused[0].Offset, refused[0].Err)
		return nil, errors.Join(append([]error{err}, closeAll(links)...)...)
	}
	return links, nil
}

// AttachSites is AttachObject that leaves out the sites the kernel
// refuses and returns them, in the order of obj.Offsets, with the links
// of the others (none when every site is refused). Any other error fails
// it whole: it closes the links it made and returns the error.
func AttachSites(prog *ebpf.Program, obj *Object, pid int, multi bool) ([]link.Link, []Refusal, error) {
	name := obj.name()
	if len(obj.Offsets) == 0 || len(obj.Cookies) != len(obj.Offsets) ||
		(obj.RefCtrOffsets != nil && len(obj.RefCtrOffsets) != len(obj.Offsets)) {
		return nil, nil, fmt.Errorf("attach %s: %d offsets, %d cookies, %d ref_ctr offsets", name, len(obj.Offsets), len(obj.Cookies), len(obj.RefCtrOffsets))
	}
	ex, err := link.OpenExecutable(obj.Path)
	if err != nil {
		return nil, nil, fmt.Errorf("attach %s: %w", name, err)
	}
	refused, err := precheck(obj)
	if err != nil {
		return nil, nil, fmt.Errorf("attach %s: %w", name, err)
	}
	var sites []int
	for i, next := 0, refused; i < len(obj.Offsets); i++ {
		if len(next) > 0 && next[0].Index == i {
			next = next[1:]
			continue
		}
		sites = append(sites, i)
	}
	// The kernel reads a site's instruction when it puts the breakpoint
	// in a process that maps the file, and a process mapping it later
	// loses a refused site silently: mapped here too, every site is read
	// as it is attached, for every process (pid 0) or this one; for
	// another process, a check in this one comes first.
	unmap := mapSelf(obj.Path)
	defer unmap()
	if pid != 0 && pid != os.Getpid() {
		sites, refused, err = check(obj, ex, sites, refused)
		if err != nil {
			return nil, nil, err
		}
	}
	a := &attacher{prog: prog, obj: obj, ex: ex, pid: pid, ret: obj.Return, refused: refused}
	if multi {
		err = a.multi(sites)
	} else {
		err = a.classic(sites)
	}
	if err != nil {
		return nil, nil, errors.Join(append([]error{err}, closeAll(a.links)...)...)
	}
	sortRefusals(a.refused)
	return a.links, a.refused, nil
}

// attacher attaches the sites of one object, gathering links and
// refusals.
type attacher struct {
	prog *ebpf.Program
	obj  *Object
	ex   *link.Executable
	pid  int
	ret  bool
	// sem bounds multi's attempts in flight; mu guards links and
	// refused, which its goroutines add to.
	sem     chan struct{}
	mu      sync.Mutex
	links   []link.Link
	refused []Refusal
}

// multi attaches sites (indexes in obj.Offsets) in one uprobe_multi
// link; when the kernel refuses a site, each half in a link of its own,
// down to the refused sites. A failed attach leaves nothing attached, so
// each half is tried afresh. The halves are tried concurrently: a
// refused attempt costs the kernel's grace periods more than its work,
// and these then overlap.
func (a *attacher) multi(sites []int) error {
	if a.sem == nil {
		a.sem = make(chan struct{}, maxAttempts)
	}
	return a.bisect(sites)
}

// maxAttempts bounds the attach attempts in flight.
const maxAttempts = 32

func (a *attacher) bisect(sites []int) error {
	if len(sites) == 0 {
		return nil
	}
	mo := &link.UprobeMultiOptions{PID: uint32(a.pid)}
	for _, i := range sites {
		mo.Addresses = append(mo.Addresses, a.obj.Offsets[i])
		mo.Cookies = append(mo.Cookies, a.obj.Cookies[i])
		if a.obj.RefCtrOffsets != nil {
			mo.RefCtrOffsets = append(mo.RefCtrOffsets, a.obj.RefCtrOffsets[i])
		}
	}
	attach := a.ex.UprobeMulti
	if a.ret {
		attach = a.ex.UretprobeMulti
	}
	a.sem <- struct{}{}
	l, err := attach(nil, a.prog, mo)
	<-a.sem
	if err == nil {
		a.mu.Lock()
		a.links = append(a.links, l)
		a.mu.Unlock()
		return nil
	}
	if !siteRefused(err) {
		return fmt.Errorf("attach %s (%d sites): %w", a.obj.name(), len(sites), err)
	}
	if len(sites) == 1 {
		a.mu.Lock()
		a.refused = append(a.refused, Refusal{Index: sites[0], Offset: a.obj.Offsets[sites[0]], Err: err})
		a.mu.Unlock()
		return nil
	}
	half := len(sites) / 2
	var errs [2]error
	var wg sync.WaitGroup
	wg.Go(func() { errs[0] = a.bisect(sites[:half]) })
	errs[1] = a.bisect(sites[half:])
	wg.Wait()
	return errors.Join(errs[:]...)
}

// classic attaches one classic link per site.
func (a *attacher) classic(sites []int) error {
	for _, i := range sites {
		off := a.obj.Offsets[i]
		uo := &link.UprobeOptions{Address: off, Cookie: a.obj.Cookies[i], PID: a.pid}
		if a.obj.RefCtrOffsets != nil {
			uo.RefCtrOffset = a.obj.RefCtrOffsets[i]
		}
		attach := a.ex.Uprobe
		if a.ret {
			attach = a.ex.Uretprobe
		}
		l, err := attach("", a.prog, uo)
		if siteRefused(err) {
			a.refused = append(a.refused, Refusal{Index: i, Offset: off, Err: err})
			continue
		}
		if err != nil {
			return fmt.Errorf("attach %s at offset %#x: %w", a.obj.name(), off, err)
		}
		a.links = append(a.links, l)
	}
	return nil
}

// siteRefused reports whether err is how the kernel refuses the
// instruction at a site: ENOTSUPP (524) when it cannot single-step or
// emulate it, ENOEXEC when it cannot decode it
// (arch_uprobe_analyze_insn). Other errors (permissions, a missing
// process, a kernel without uprobe_multi) are not about one site and are
// not bisected.
func siteRefused(err error) bool {
	return err != nil && (errors.Is(err, unix.Errno(524)) || errors.Is(err, unix.ENOEXEC))
}

func (o *Object) name() string {
	if o.Name == "" {
		return o.Path
	}
	return o.Name
}

// closeAll closes links concurrently: each close waits for the kernel's
// uprobe grace period.
func closeAll(links []link.Link) []error {
	errs := make([]error, len(links))
	var wg sync.WaitGroup
	for i, l := range links {
		wg.Go(func() { errs[i] = l.Close() })
	}
	wg.Wait()
	return slices.DeleteFunc(errs, func(err error) bool { return err == nil })
}

func sortRefusals(r []Refusal) {
	slices.SortFunc(r, func(a, b Refusal) int { return cmp.Compare(a.Index, b.Index) })
}
