package dynsdt

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Options says where Load puts the shared object. The zero value (or a nil
// *Options) writes a file in a private directory.
type Options struct {
	// Memfd backs the object with an anonymous file (memfd_create(2),
	// Linux 3.17+) instead of a file in Dir. /proc/PID/maps then shows
	// "/memfd:PROVIDER.so (deleted)". The Provider keeps the memfd open
	// (close-on-exec) until Close, as libstapsdt does: usdtkit list -p
	// and trace -p read it through /proc/PID/map_files, bcc's tools
	// (tplist-bpfcc -p, bpftrace -p) through /proc/PID/fd. Nothing is
	// ever left on disk.
	Memfd bool
	// Dir is the directory for the object file; ignored with Memfd. It
	// must exist, be owned by this process's effective user and not be
	// writable by group or others. Default: $XDG_RUNTIME_DIR/usdtkit, or
	// usdtkit-<euid> in os.TempDir(), created with mode 0700 (and then
	// required to be 0700).
	Dir string
	// Site is the kind of probe site the stubs get on x86-64 (see
	// "Probe sites" in docs/probes.md). SiteAuto, the default,
	// takes the one the USDTKIT_SITE environment variable names (auto,
	// nop, nop5, nop10), else ChooseSite's for the running kernel.
	Site Site
}

// Provider is a provider's shared object mapped into this process, with
// its probes. It is safe for concurrent use, and Close may race with
// Enabled and Fire: after Close, Enabled reports false and Fire does
// nothing (see docs/probes.md).
type Provider struct {
	name string
	path string // as /proc/self/maps shows it
	site Site
	res  *resources

	probes []Probe
	byName map[string]*Probe

	mu     sync.Mutex
	closed bool
}

// resources are what a Provider holds in the kernel. Once the Provider and
// its Probes are unreachable, no Fire or Enabled can be running in the
// image, and a cleanup (runtime.AddCleanup) unmaps it — also after Close,
// which keeps the address range mapped for Fires in flight — and, if Close
// was not called, removes the file too.
type resources struct {
	img   *image
	file  string // the object file's name in dirfd; "" for a memfd or once removed
	fd    int    // the object file, holding its lock; -1 if none
	dirfd int    // the directory holding file; -1 if none
}

// release frees what is left; only for Load's failures and the cleanup.
func (r *resources) release() {
	if r.img != nil {
		r.img.unmap()
	}
	if r.file != "" {
		removeObjectFile(r.dirfd, r.file, r.fd)
	}
	if r.fd >= 0 {
		unix.Close(r.fd)
	}
	if r.dirfd >= 0 {
		unix.Close(r.dirfd)
	}
}

// Probe is one probe of a loaded Provider. It is safe for concurrent use;
// its methods accept a nil *Probe (Enabled false, Fire no-op), so code may
// use a probe of a Provider that failed to load.
type Probe struct {
	// site is the 4-byte word at the stub's entry, the probe site; orig
	// is its value as written. A uprobe on the site changes it.
	site *uint32
	orig uint32
	stub uintptr
	// sem is the probe's semaphore, which the kernel counts up for every
	// tracer that attaches with a reference counter (ref_ctr_offset).
	sem  *uint16
	name string
	// prov keeps the Provider, and with it the mapping, alive while the
	// Probe is reachable.
	prov *Provider
}

// Load builds the shared object of spec for this machine (see Build),
// writes it to a new file (or a memfd, see Options), maps it into this
// process and returns its probes, ready to fire. Before writing a file it
// removes the object files that ended processes left in the directory.
//
// Errors wrap ErrSpec for an invalid spec, ErrSite for an unknown Site or
// USDTKIT_SITE value, ErrUnsafeDir for a directory others could tamper
// with, and errors.ErrUnsupported on architectures other than amd64 and
// arm64. Close the Provider to unmap it and remove its file.
func Load(spec *ProviderSpec, opts *Options) (*Provider, error) {
	if opts == nil {
		opts = &Options{}
	}
	if HostMachine == 0 {
		return nil, fmt.Errorf("load provider on %s: %w", runtime.GOARCH, errors.ErrUnsupported)
	}
	site, err := ResolveSite(opts.Site)
	if err != nil {
		return nil, fmt.Errorf("load provider %s: %w", spec.Name, err)
	}
	obj, err := Build(spec, HostMachine, &BuildOptions{Site: site})
	if err != nil {
		return nil, err
	}
	l := loader{p: &Provider{name: spec.Name, site: obj.Site, res: &resources{fd: -1, dirfd: -1}}, fd: -1}
	defer l.close()
	if err := l.create(obj, opts); err != nil {
		return nil, fmt.Errorf("load provider %s: %w", spec.Name, err)
	}
	if err := l.mapProbes(spec, obj); err != nil {
		return nil, fmt.Errorf("load provider %s: %w", spec.Name, err)
	}
	p := l.p
	l.p = nil
	runtime.AddCleanup(p, (*resources).release, p.res)
	return p, nil
}

// loader holds what Load acquired until it hands the Provider out.
type loader struct {
	p  *Provider
	fd int // a memfd, handed to the Provider once mapped
}

// close releases everything of a Load that failed.
func (l *loader) close() {
	if l.fd >= 0 {
		unix.Close(l.fd)
	}
	if l.p != nil {
		l.p.res.release()
	}
}

// create writes obj to a memfd or a new file and sets the Provider's path.
func (l *loader) create(obj *Object, opts *Options) error {
	p := l.p
	var err error
	if opts.Memfd {
		err = l.createMemfd(obj)
	} else if err = l.createFile(obj, opts.Dir); err != nil && opts.Dir == "" {
		// Anyone may create usdtkit-<euid> in /tmp before us, as
		// another user's directory, a symbolic link or with mode 0777:
		// that must not stop every Load.
		if merr := l.createMemfd(obj); merr != nil {
			err = fmt.Errorf("%w; memfd instead: %w", err, merr)
		} else {
			err = nil
		}
	}
	if err != nil {
		return err
	}
	fd := l.fd
	if p.res.fd >= 0 {
		fd = p.res.fd
	}
	// The kernel prints the same path (d_path) for the fd and for the
	// mappings: absolute, symbolic links resolved, " (deleted)" appended
	// for a memfd.
	path, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(fd))
	if err != nil {
		return err
	}
	p.path = path
	img, err := mapObject(fd, obj)
	if err != nil {
		return err
	}
	p.res.img = img
	if l.fd >= 0 {
		// The memfd stays open until Close, as libstapsdt keeps its
		// own: bcc (tplist-bpfcc -p, bpftrace -p) cannot open a
		// mapping's "/memfd:... (deleted)" path and finds the file
		// instead among /proc/PID/fd by its inode.
		p.res.fd, l.fd = l.fd, -1
	}
	return nil
}

// createFile writes obj to a new file in dir (openDir) and hands the
// file, its name and its directory to the Provider's resources.
func (l *loader) createFile(obj *Object, dir string) error {
	dir, dirfd, err := openDir(dir)
	if err != nil {
		return err
	}
	reap(dir, dirfd)
	name, fd, err := createObjectFile(dirfd, l.p.name, obj.Bytes)
	if err != nil {
		unix.Close(dirfd)
		return fmt.Errorf("%s: %w", dir, err)
	}
	r := l.p.res
	r.dirfd, r.fd, r.file = dirfd, fd, name
	return nil
}

// createMemfd writes obj to a new sealed memfd, which l then owns.
func (l *loader) createMemfd(obj *Object) error {
	p := l.p
	fd, err := unix.MemfdCreate(SOName(p.name), unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING)
	if err != nil {
		if errors.Is(err, unix.ENOSYS) {
			err = fmt.Errorf("%w: %w", errors.ErrUnsupported, err)
		}
		return fmt.Errorf("memfd_create: %w", err)
	}
	l.fd = fd
	if err := writeAll(fd, obj.Bytes); err != nil {
		return fmt.Errorf("write memfd: %w", err)
	}
	// Nobody may change the object under the tracers' feet; the
	// mappings are private, so sealing writes does not stop the
	// kernel from writing breakpoints into this process's copy.
	const seals = unix.F_SEAL_SEAL | unix.F_SEAL_SHRINK | unix.F_SEAL_GROW | unix.F_SEAL_WRITE
	if _, err := unix.FcntlInt(uintptr(fd), unix.F_ADD_SEALS, seals); err != nil {
		return fmt.Errorf("seal memfd: %w", err)
	}
	return nil
}

// mapProbes fills in the Provider's probes from the mapped object.
func (l *loader) mapProbes(spec *ProviderSpec, obj *Object) error {
	p := l.p
	p.probes = make([]Probe, len(spec.Probes))
	p.byName = make(map[string]*Probe, len(spec.Probes))
	for i, ps := range spec.Probes {
		pr := &p.probes[i]
		pr.name = ps.Name
		pr.prov = p
		pr.stub = uintptr(p.res.img.at(obj.Stubs[i]))
		pr.site = (*uint32)(p.res.img.at(obj.Stubs[i]))
		pr.orig = atomic.LoadUint32(pr.site)
		pr.sem = (*uint16)(p.res.img.at(obj.Semaphores[i]))
		p.byName[ps.Name] = pr
	}
	return nil
}

// Close unmaps the object from tracers' view and removes its file. A
// tracer attached to its probes stops seeing hits. Close is idempotent: the
// second call returns nil. Probes stay safe to use (see Provider).
func (p *Provider) Close() error {
	if p == nil {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil
	}
	p.closed = true
	var errs []error
	r := p.res
	if err := r.img.retire(); err != nil {
		errs = append(errs, err)
	}
	if r.file != "" {
		if err := removeObjectFile(r.dirfd, r.file, r.fd); err != nil {
			errs = append(errs, err)
		}
	}
	if r.fd >= 0 {
		// Unlocks the file, which is gone already, or frees the memfd
		// once the retired image no longer maps it.
		if err := unix.Close(r.fd); err != nil {
			errs = append(errs, fmt.Errorf("close %s: %w", p.path, err))
		}
	}
	if r.dirfd >= 0 {
		unix.Close(r.dirfd)
	}
	r.file, r.fd, r.dirfd = "", -1, -1
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("close provider %s: %w", p.name, err)
	}
	return nil
}

// Name returns the provider's name.
func (p *Provider) Name() string { return p.name }

// Site returns the kind of probe site its stubs have (never SiteAuto).
func (p *Provider) Site() Site { return p.site }

// Path returns the mapped object's path as /proc/PID/maps shows it: the
// file's absolute path, or "/memfd:PROVIDER.so (deleted)". It stays the
// same after Close.
func (p *Provider) Path() string { return p.path }

// Probe returns the probe named name, or nil if the provider has none.
func (p *Provider) Probe(name string) *Probe {
	if p == nil {
		return nil
	}
	return p.byName[name]
}

// Name returns the probe's name.
func (pr *Probe) Name() string {
	if pr == nil {
		return ""
	}
	return pr.name
}

// Enabled reports whether a tracer is attached to the probe: one 4-byte
// load of the probe site, which every uprobe changes (to int3, a call to
// the kernel's uprobe trampoline, or BRK), whether or not the tracer also
// counts the semaphore. It is false for a nil Probe and after Close. See
// docs/probes.md.
func (pr *Probe) Enabled() bool {
	if pr == nil {
		return false
	}
	// pr (and with it the mapping, see resources) must be live until the
	// site is read. Loading pr.orig after the site does that: a load is
	// never moved before an atomic load, so pr stays in a register (which
	// the GC scans when it preempts) until then. runtime.KeepAlive(pr)
	// would say the same, but makes the compiler store pr to the stack at
	// every check when the caller has no further use for it.
	site := atomic.LoadUint32(pr.site)
	return site != pr.orig
}

// Fire calls the probe's stub with args as its arguments in the C calling
// convention: integers (sign- or zero-extended to 64 bits by the caller's
// conversion), pointers (see BytesPtr and CString), bools as 0 or 1. Pass
// as many values as the probe declares; values past MaxArgs are ignored,
// missing ones read as 0. It does not allocate, takes no lock, and does
// nothing visible when no tracer is attached, for a nil Probe, or after
// Close.
//
//go:nosplit
func (pr *Probe) Fire(args ...uint64) {
	// Untraced, the site holds its original bytes: skip the call into the
	// stub (one load instead of two calls). Every uprobe, with or without
	// a semaphore, changes the site, so no tracer misses a hit by this.
	if pr == nil || atomic.LoadUint32(pr.site) == pr.orig {
		return
	}
	// fire takes pr, not its stub's address: as an argument pr stays live,
	// and with it the mapping (see resources), until the stub returns.
	fire(pr, unsafe.SliceData(args), len(args))
}

// Addresses returns what native code that calls the probe's stub itself
// (assembly, or C reached through cgo) needs: the stub's
// address in this process, the 4-byte word Load found at it (untraced, the
// probe site holds it; Enabled compares with it) and the address of the
// probe's 2-byte semaphore. The stub stays callable and its first word
// readable while the Provider is reachable, also after Close; the
// semaphore is not accessible after Close.
func (pr *Probe) Addresses() (stub uintptr, orig uint32, semaphore uintptr) {
	return pr.stub, pr.orig, uintptr(unsafe.Pointer(pr.sem))
}

// semaphore returns the probe's semaphore: the number of tracers attached
// with a reference counter.
func (pr *Probe) semaphore() uint16 {
	// sync/atomic has no 16-bit load: load the aligned word holding it.
	addr := uintptr(unsafe.Pointer(pr.sem))
	word := (*uint32)(unsafe.Add(unsafe.Pointer(pr.sem), -int(addr&2)))
	return uint16(atomic.LoadUint32(word) >> (8 * (addr & 2)))
}

// CString returns a NUL-terminated copy of s for a String argument: pass
// BytesPtr(CString(s)) to Fire and keep the slice alive until Fire returns
// (runtime.KeepAlive). A NUL inside s ends the string tracers read.
func CString(s string) []byte {
	b := make([]byte, len(s)+1)
	copy(b, s)
	return b
}

// BytesPtr returns the address of b's first byte for a Pointer, String or
// Bytes argument, 0 for an empty b. The caller keeps b alive until Fire
// returns. Call it in the argument list of Fire: a goroutine stack may
// move at a function call, and b may live on it; Fire and the trampoline
// make no call that could grow the stack.
//
//go:nosplit
func BytesPtr(b []byte) uint64 {
	if len(b) == 0 {
		return 0
	}
	return uint64(uintptr(unsafe.Pointer(unsafe.SliceData(b))))
}
