package usdtlink

import (
	"errors"
	"fmt"
	"os"
	"sync"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/features"
	"github.com/cilium/ebpf/link"
	"golang.org/x/sys/unix"

	"github.com/usdtkit/usdtkit/internal/bpf/attach"
	"github.com/usdtkit/usdtkit/internal/elf/symtab"
	"github.com/usdtkit/usdtkit/internal/proc/procfs"
	"github.com/usdtkit/usdtkit/internal/proc/target"
	"github.com/usdtkit/usdtkit/sdt"
)

// SpecsMap and IPMap are the names of the maps <bpf/usdt.bpf.h> declares.
// Attach fills SpecsMap; IPMap serves kernels without BPF cookies, which
// usdtlink does not support, and is left alone.
const (
	SpecsMap = "__bpf_usdt_specs"
	IPMap    = "__bpf_usdt_ip_to_spec_id"
)

// ErrAttachType is wrapped by Attach's error when Options.Classic asks for
// classic uprobe links and the program was loaded with the uprobe_multi
// attach type, which the kernel attaches with uprobe_multi links only.
var ErrAttachType = errors.New("the program was loaded with the uprobe_multi attach type, which takes no classic links")

// Options are the optional parameters of Attach and AttachProbes. A nil
// *Options is the zero value.
type Options struct {
	// PID, when not 0, finds the target among the objects process PID
	// has mapped (target may then be "" for all of them, or a library
	// short name such as "libpython3.11") and restricts the probes to
	// that process.
	PID int
	// Cookie is the 64-bit value bpf_usdt_cookie(ctx) returns in the
	// program (libbpf's bpf_usdt_opts.usdt_cookie). Attach only: the BPF
	// cookie itself carries the spec id.
	Cookie uint64
	// Classic uses one classic uprobe link per location even where the
	// kernel has uprobe_multi; the program must have been loaded with the
	// generic attach type (LoadCollectionSpec's, or PrepareSpec with
	// Classic), else Attach fails saying so. Without it, Attach uses
	// uprobe_multi when the kernel has it and falls back to classic links
	// when the program was not loaded for uprobe_multi (see PrepareSpec).
	Classic bool
}

// Link is a set of attached probe locations. Close detaches them.
type Link struct {
	mu    sync.Mutex
	links []link.Link
	ids   []uint32
	alloc *idAlloc
	sites int
	multi bool
}

// Sites is the number of probe locations attached.
func (l *Link) Sites() int { return l.sites }

// Multi reports whether the locations were attached with uprobe_multi
// links (else with classic uprobe links).
func (l *Link) Multi() bool { return l.multi }

// Close detaches every location (the kernel lowers the semaphores it
// raised) and frees the spec ids for later Attach calls. Safe to call twice.
func (l *Link) Close() error {
	l.mu.Lock()
	links, ids := l.links, l.ids
	l.links, l.ids = nil, nil
	l.mu.Unlock()
	var errs []error
	for _, k := range links {
		errs = append(errs, k.Close())
	}
	if l.alloc != nil {
		l.alloc.free(ids)
	}
	return errors.Join(errs...)
}

// Find returns the probes provider:name of target (a file path or library
// short name; with opts.PID, an object of the process, or "" for every
// one), with sdt's discovery rules (see sdt.List). Of opts (nil: no
// process) only PID counts. No probe gives an error wrapping
// sdt.ErrNotFound.
func Find(target, provider, name string, opts *Options) ([]sdt.Probe, error) {
	var pid int
	if opts != nil {
		pid = opts.PID
	}
	lo := &sdt.ListOptions{PID: pid, Selectors: []sdt.Selector{{Provider: provider, Name: name}}}
	if target != "" {
		lo.Paths = []string{target}
	}
	probes, err := sdt.List(lo)
	if err != nil {
		return nil, err
	}
	if len(probes) == 0 {
		where := target
		if pid != 0 {
			where = fmt.Sprintf("%s in pid %d", target, pid)
		}
		return nil, fmt.Errorf("probe %s:%s in %s: %w", provider, name, where, sdt.ErrNotFound)
	}
	return probes, nil
}

// Attach attaches prog, a program compiled against libbpf's
// <bpf/usdt.bpf.h>, to every location of the USDT probe provider:name of
// target, so that its BPF_USDT arguments, bpf_usdt_arg, bpf_usdt_arg_cnt
// and bpf_usdt_cookie work as under libbpf's bpf_program__attach_usdt.
// specs is the program's __bpf_usdt_specs map; its value size chooses the
// Layout.
//
// For each location Attach encodes the argument specs (EncodeSpec), puts
// them in specs under a spec id (equal specs share one), and attaches with
// the spec id as the BPF cookie and the semaphore's file offset as the
// uprobe reference counter. Spec ids are allocated per map, so several
// Attach calls may share one program's maps; Close frees them.
//
// Errors: a location whose arguments the layout cannot express fails the
// call with its *sdt.ArgError (wrapping ErrUnsupported), naming the probe
// and location; a kernel without BPF cookies gives ebpf.ErrNotSupported;
// no probe gives sdt.ErrNotFound; a full specs map says so.
func Attach(prog *ebpf.Program, specs *ebpf.Map, target, provider, name string, opts *Options) (*Link, error) {
	if opts == nil {
		opts = &Options{}
	}
	if prog == nil || specs == nil {
		return nil, fmt.Errorf("attach usdt %s:%s: nil program or specs map", provider, name)
	}
	layout, err := LayoutOf(specs.ValueSize())
	if err != nil {
		return nil, fmt.Errorf("attach usdt %s:%s: %w", provider, name, err)
	}
	if err := features.HaveProgramHelper(ebpf.Kprobe, asm.FnGetAttachCookie); err != nil {
		return nil, fmt.Errorf("attach usdt %s:%s: BPF cookies: %w", provider, name, err)
	}
	probes, err := Find(target, provider, name, opts)
	if err != nil {
		return nil, err
	}
	alloc, err := allocFor(specs)
	if err != nil {
		return nil, err
	}
	l := &Link{alloc: alloc}
	ok := false
	defer func() {
		if !ok {
			l.Close()
		}
	}()
	byValue := make(map[string]uint32)
	cookie := func(p *sdt.Probe, loc *sdt.Location, symbol func(string) (uint64, error)) (uint64, error) {
		s, err := EncodeSpec(loc.Args, loc.Address, symbol, opts.Cookie, layout)
		if err != nil {
			return 0, err
		}
		b, err := s.MarshalLayout(layout)
		if err != nil {
			return 0, err
		}
		id, seen := byValue[string(b)]
		if !seen {
			if id, err = alloc.get(); err != nil {
				return 0, err
			}
			l.ids = append(l.ids, id)
			if err := specs.Update(id, b, ebpf.UpdateAny); err != nil {
				return 0, fmt.Errorf("write spec %d: %w", id, err)
			}
			byValue[string(b)] = id
		}
		return uint64(id), nil
	}
	if err := l.attach(prog, probes, opts, cookie); err != nil {
		return nil, err
	}
	ok = true
	return l, nil
}

// AttachProbes attaches prog to every location of probes, with the
// location's index in Locations order over all probes as the BPF cookie
// (the first probe's locations are 0..n-1, the next probe's follow): the
// order EmitArgSwitch dispatches in when given the same probes. Semaphores
// are raised through the uprobe reference counter. It is for programs that
// read their arguments with EmitArg, not with <bpf/usdt.bpf.h>.
func AttachProbes(prog *ebpf.Program, probes []sdt.Probe, opts *Options) (*Link, error) {
	if opts == nil {
		opts = &Options{}
	}
	if len(probes) == 0 {
		return nil, fmt.Errorf("attach usdt: %w", sdt.ErrNotFound)
	}
	l := &Link{}
	next := uint64(0)
	err := l.attach(prog, probes, opts, func(*sdt.Probe, *sdt.Location, func(string) (uint64, error)) (uint64, error) {
		next++
		return next - 1, nil
	})
	if err != nil {
		l.Close()
		return nil, err
	}
	return l, nil
}

// attach opens each probe's object as sdt.List read it (refusing a
// different file), and attaches prog through /proc/self/fd/N of it.
func (l *Link) attach(prog *ebpf.Program, probes []sdt.Probe, opts *Options, cookieOf func(*sdt.Probe, *sdt.Location, func(string) (uint64, error)) (uint64, error)) error {
	type fileKey struct {
		pid  int
		path string
		id   procfs.FileID
	}
	files := make(map[fileKey]*os.File)
	defer func() {
		for _, f := range files {
			f.Close()
		}
	}()
	objects := make(map[fileKey]*attach.Object)
	var order []fileKey
	var symbols symtab.Resolvers
	for i := range probes {
		p := &probes[i]
		fk := fileKey{p.PID, p.Path, procfs.FileID{Dev: p.Dev, Inode: p.Inode}}
		file := files[fk]
		if file == nil {
			var err error
			if file, err = target.Reopen(p.Path, p.PID, fk.id); err != nil {
				return fmt.Errorf("attach usdt %s: %w", p, err)
			}
			files[fk] = file
			objects[fk] = &attach.Object{Path: procfs.FDPath(file), Name: p.Path}
			order = append(order, fk)
		}
		obj := objects[fk]
		resolve := symbols.For(obj.Path)
		for j := range p.Locations {
			loc := &p.Locations[j]
			if loc.OffsetErr != nil {
				return fmt.Errorf("attach usdt %s in %s at %#x: %w", p, p.Path, loc.Address, loc.OffsetErr)
			}
			c, err := cookieOf(p, loc, resolve)
			if err != nil {
				return fmt.Errorf("attach usdt %s in %s at %#x: %w", p, p.Path, loc.Address, err)
			}
			sem := uint64(0)
			if loc.Semaphore != 0 {
				if loc.SemaphoreErr != nil {
					return fmt.Errorf("attach usdt %s in %s at %#x: semaphore: %w", p, p.Path, loc.Address, loc.SemaphoreErr)
				}
				sem = loc.SemaphoreOffset
			}
			obj.Offsets = append(obj.Offsets, loc.Offset)
			obj.Cookies = append(obj.Cookies, c)
			obj.RefCtrOffsets = append(obj.RefCtrOffsets, sem)
		}
	}
	multi := !opts.Classic && features.HaveBPFLinkUprobeMulti() == nil
	for _, fk := range order {
		obj := objects[fk]
		if !nonZero(obj.RefCtrOffsets) {
			obj.RefCtrOffsets = nil
		}
		links, err := attach.AttachObject(prog, obj, opts.PID, multi)
		if err != nil && multi && len(l.links) == 0 && errors.Is(err, unix.EINVAL) {
			// A program loaded without the uprobe_multi attach type
			// (see PrepareSpec) takes classic links only.
			multi = false
			links, err = attach.AttachObject(prog, obj, opts.PID, multi)
		}
		if err != nil && !multi && len(l.links) == 0 && loadedForMulti(prog, obj, opts.PID) {
			// cilium/ebpf formats the kernel's EINVAL with %v: the
			// uprobe_multi link taken is what tells the cause.
			return fmt.Errorf("attach usdt %s: %w: load it with PrepareSpec and Options.Classic", obj.Name, ErrAttachType)
		}
		if err != nil {
			return err
		}
		l.mu.Lock()
		l.links = append(l.links, links...)
		l.mu.Unlock()
		l.sites += len(obj.Offsets)
	}
	l.multi = multi
	return nil
}

// loadedForMulti reports whether prog takes a uprobe_multi link on obj,
// which the kernel refuses to programs of the generic attach type: the
// link is closed at once. It explains a classic link refused with EINVAL.
func loadedForMulti(prog *ebpf.Program, obj *attach.Object, pid int) bool {
	if features.HaveBPFLinkUprobeMulti() != nil {
		return false
	}
	probe := *obj
	probe.Offsets, probe.Cookies, probe.RefCtrOffsets = obj.Offsets[:1], obj.Cookies[:1], nil
	links, err := attach.AttachObject(prog, &probe, pid, true)
	for _, k := range links {
		k.Close()
	}
	return err == nil
}

func nonZero(v []uint64) bool {
	for _, x := range v {
		if x != 0 {
			return true
		}
	}
	return false
}

// idAlloc hands out the spec ids of one __bpf_usdt_specs map.
type idAlloc struct {
	mu   sync.Mutex
	used []bool
}

var (
	allocsMu sync.Mutex
	allocs   = make(map[ebpf.MapID]*idAlloc)
)

// allocFor returns the allocator of m, shared by every Attach in this
// process on the same map (the kernel's map id names it).
func allocFor(m *ebpf.Map) (*idAlloc, error) {
	info, err := m.Info()
	if err != nil {
		return nil, fmt.Errorf("%s map info: %w", SpecsMap, err)
	}
	id, ok := info.ID()
	if !ok {
		return nil, fmt.Errorf("%s: the kernel reports no map id", SpecsMap)
	}
	allocsMu.Lock()
	defer allocsMu.Unlock()
	a := allocs[id]
	if a == nil {
		a = &idAlloc{used: make([]bool, m.MaxEntries())}
		allocs[id] = a
	}
	return a, nil
}

func (a *idAlloc) get() (uint32, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for i, u := range a.used {
		if !u {
			a.used[i] = true
			return uint32(i), nil
		}
	}
	return 0, fmt.Errorf("%s is full (%d specs; raise BPF_USDT_MAX_SPEC_CNT)", SpecsMap, len(a.used))
}

func (a *idAlloc) free(ids []uint32) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, id := range ids {
		if int(id) < len(a.used) {
			a.used[id] = false
		}
	}
}
