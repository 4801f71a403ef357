// Package session runs one trace: it loads the program bpfgen generates,
// attaches it to every probe site of every object, reads the events and the
// aggregations, and detaches.
//
// # Lifetime
//
// Start loads and attaches; on any failure it releases everything it had
// acquired and returns the error, so a half-attached session never exists.
// Detach closes the links (the kernel then drops the semaphores it had
// raised) but keeps the maps, so that events still in the ring buffer can be
// drained and aggregations read afterwards. Close releases everything; it is
// safe to call twice and interrupts a pending Read.
//
// # Links
//
// One uprobe_multi link per object (kernel 6.6+) carries every site of that
// object with its cookie (the site's index in Config.Sites) and its
// semaphore's file offset. Kernels without uprobe_multi get one classic
// uprobe link per site (cookies need 5.15+), which needs the program variant
// of Config.Multi == false. An Object with Return set gets uretprobe links
// of the same two kinds; entry and return sites of one file are two Objects. The kernel
// unregisters classic uprobes one at a time, each waiting for an RCU grace
// period, while a multi link goes in one step: multi is not only faster to
// attach, it is what makes detaching large probe sets usable. Detach closes
// classic links concurrently, which overlaps part of the waiting, and Run
// passes on no event that happened after the trace's end (see Run).
//
// # Reading
//
// The program writes records without waking the reader unless the ring is a
// quarter full (see bpfgen), so Read also polls on a timer: an event waits at
// most PollInterval before it is seen. Events the ring buffer refused are
// counted in the kernel; Lost reports them.
//
// A Session is safe for concurrent use except that only one goroutine may
// Read at a time.
package session

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/features"
	"github.com/cilium/ebpf/link"
	"github.com/cilium/ebpf/ringbuf"
	"golang.org/x/sys/unix"

	"github.com/usdtkit/usdtkit/internal/bpfgen"
	"github.com/usdtkit/usdtkit/internal/launch"
)

// DefaultPollInterval is how often Read looks at the ring buffer when no
// wakeup comes.
const DefaultPollInterval = 50 * time.Millisecond

// ErrClosed is returned by Read after Close.
var ErrClosed = errors.New("session closed")

// errEnd stops Run's first drain at the end of the trace.
var errEnd = errors.New("end of trace")

// Object is one file to attach to, with its sites. Offsets, Cookies and
// RefCtrOffsets have one entry per site.
type Object struct {
	// Path is where the kernel finds the file: "/proc/self/fd/N" of a
	// file the caller opened once and keeps open until Start returns (the
	// kernel then holds the inode), so that no name is resolved again.
	Path string
	// Name is the file as users know it, for messages; Path when empty.
	Name string
	// Offsets are the file offsets of the probe sites.
	Offsets []uint64
	// Cookies are the indexes of the sites in Config.Sites.
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

// Options describes a session.
type Options struct {
	// Config is the program to generate; Start sets Config.Multi.
	Config bpfgen.Config
	// Objects to attach to: at least one.
	Objects []Object
	// PID restricts the probes to one process; 0 traces every process that
	// maps the objects.
	PID int
	// Classic forces classic uprobe links even where uprobe_multi exists.
	Classic bool
	// PollInterval is how often Read polls; 0 means DefaultPollInterval.
	PollInterval time.Duration
}

// Session is a loaded and attached trace.
type Session struct {
	cfg   bpfgen.Config
	coll  *ebpf.Collection
	rd    *ringbuf.Reader
	poll  time.Duration
	multi bool
	sites int

	mu     sync.Mutex
	links  []link.Link
	closed bool

	rec       ringbuf.Record
	discarded atomic.Uint64
}

// Start generates, loads and attaches the program described by opts. It
// returns an error wrapping ebpf.ErrNotSupported when the kernel lacks
// something the session needs, os.ErrPermission without the privileges, and
// os.ErrNotExist when the process is gone.
func Start(opts *Options) (_ *Session, err error) {
	if opts == nil || len(opts.Objects) == 0 {
		return nil, fmt.Errorf("session: no objects to attach to")
	}
	s := &Session{cfg: opts.Config, poll: opts.PollInterval}
	if s.poll <= 0 {
		s.poll = DefaultPollInterval
	}
	defer func() {
		if err != nil {
			s.Close()
		}
	}()
	s.multi = !opts.Classic && features.HaveBPFLinkUprobeMulti() == nil
	s.cfg.Multi = s.multi
	spec, err := bpfgen.Generate(&s.cfg)
	if err != nil {
		return nil, err
	}
	s.coll, err = ebpf.NewCollection(spec)
	if err != nil {
		return nil, fmt.Errorf("load program: %w", err)
	}
	prog := s.coll.Programs[bpfgen.ProgName]
	for i := range opts.Objects {
		if err := s.attach(prog, &opts.Objects[i], opts.PID); err != nil {
			return nil, err
		}
	}
	if m := s.coll.Maps[bpfgen.MapEvents]; m != nil {
		s.rd, err = ringbuf.NewReader(m)
		if err != nil {
			return nil, fmt.Errorf("ring buffer reader: %w", err)
		}
	}
	return s, nil
}

func (s *Session) attach(prog *ebpf.Program, obj *Object, pid int) error {
	name := obj.Name
	if name == "" {
		name = obj.Path
	}
	if len(obj.Offsets) == 0 || len(obj.Cookies) != len(obj.Offsets) ||
		(obj.RefCtrOffsets != nil && len(obj.RefCtrOffsets) != len(obj.Offsets)) {
		return fmt.Errorf("attach %s: %d offsets, %d cookies, %d ref_ctr offsets", name, len(obj.Offsets), len(obj.Cookies), len(obj.RefCtrOffsets))
	}
	ex, err := link.OpenExecutable(obj.Path)
	if err != nil {
		return fmt.Errorf("attach %s: %w", name, err)
	}
	if s.multi {
		mo := &link.UprobeMultiOptions{
			Addresses:     obj.Offsets,
			Cookies:       obj.Cookies,
			RefCtrOffsets: obj.RefCtrOffsets,
			PID:           uint32(pid),
		}
		multi := ex.UprobeMulti
		if obj.Return {
			multi = ex.UretprobeMulti
		}
		l, err := multi(nil, prog, mo)
		if err != nil {
			return fmt.Errorf("attach %s (%d sites): %w", name, len(obj.Offsets), err)
		}
		s.addLink(l)
		s.sites += len(obj.Offsets)
		return nil
	}
	for i, off := range obj.Offsets {
		uo := &link.UprobeOptions{Address: off, Cookie: obj.Cookies[i], PID: pid}
		if obj.RefCtrOffsets != nil {
			uo.RefCtrOffset = obj.RefCtrOffsets[i]
		}
		classic := ex.Uprobe
		if obj.Return {
			classic = ex.Uretprobe
		}
		l, err := classic("", prog, uo)
		if err != nil {
			return fmt.Errorf("attach %s at offset %#x: %w", name, off, err)
		}
		s.addLink(l)
		s.sites++
	}
	return nil
}

func (s *Session) addLink(l link.Link) {
	s.mu.Lock()
	s.links = append(s.links, l)
	s.mu.Unlock()
}

// Multi reports whether the session attached with uprobe_multi links.
func (s *Session) Multi() bool { return s.multi }

// Sites is the number of probe sites attached.
func (s *Session) Sites() int { return s.sites }

// Config is the program's configuration, for decoding and printing.
func (s *Session) Config() *bpfgen.Config { return &s.cfg }

// Read waits for the next event and decodes it into ev, which it reuses
// (strings aside, nothing is allocated per event). It returns ctx.Err() when
// ctx is done and ErrClosed after Close. After Detach, use Drain to read
// what is left without waiting.
func (s *Session) Read(ctx context.Context, ev *bpfgen.Event) error {
	if s.rd == nil {
		return fmt.Errorf("read: session has no event ring buffer (mode %s)", s.cfg.Mode)
	}
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		s.rd.SetDeadline(time.Now().Add(s.poll))
		err := s.rd.ReadInto(&s.rec)
		switch {
		case errors.Is(err, os.ErrDeadlineExceeded):
			continue
		case errors.Is(err, ringbuf.ErrClosed):
			return ErrClosed
		case err != nil:
			return fmt.Errorf("read ring buffer: %w", err)
		}
		return s.cfg.DecodeEvent(s.rec.RawSample, ev)
	}
}

// Drain decodes every event left in the ring buffer, calling fn for each,
// without waiting for more. Call it after Detach so that nothing is lost.
func (s *Session) Drain(fn func(*bpfgen.Event) error) error {
	if s.rd == nil {
		return nil
	}
	var ev bpfgen.Event
	for {
		s.rd.SetDeadline(time.Now())
		err := s.rd.ReadInto(&s.rec)
		switch {
		case errors.Is(err, os.ErrDeadlineExceeded), errors.Is(err, ringbuf.ErrClosed):
			return nil
		case err != nil:
			return fmt.Errorf("read ring buffer: %w", err)
		}
		if err := s.cfg.DecodeEvent(s.rec.RawSample, &ev); err != nil {
			return err
		}
		if err := fn(&ev); err != nil {
			return err
		}
	}
}

// Run reads events (ModeEvents) and calls fn for each until ctx is done or,
// when pid is not 0, process pid exits; then it detaches and calls fn for
// every event still in the ring buffer that happened before that end, so
// that nothing delivered is lost and nothing after the end is printed:
// detaching classic uprobe links takes a while, during which the probes
// still fire. Those later events are counted (see Discarded), not passed
// to fn. In the aggregating modes it waits for ctx (or the exit) and
// detaches. It returns the first error of fn or of reading; ctx's end is
// not an error.
func (s *Session) Run(ctx context.Context, pid int, fn func(*bpfgen.Event) error) error {
	if pid != 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithCancel(ctx)
		done := make(chan struct{})
		defer func() { cancel(); <-done }()
		go func() {
			defer close(done)
			launch.WaitExit(ctx, pid)
			cancel()
		}()
	}
	if s.cfg.Mode != bpfgen.ModeEvents {
		<-ctx.Done()
		return s.Detach()
	}
	var ev bpfgen.Event
	for {
		err := s.Read(ctx, &ev)
		if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
			break
		}
		if err == nil {
			err = fn(&ev)
		}
		if err != nil {
			s.Detach()
			return err
		}
	}
	// The end, on the clock of the events (bpf_ktime_get_ns).
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		return fmt.Errorf("read the clock: %w", err)
	}
	end := uint64(ts.Nano())
	// A reader behind a busy ring sees the deadline late: the end is the
	// deadline itself, not when Read noticed it.
	if d, ok := ctx.Deadline(); ok && errors.Is(ctx.Err(), context.DeadlineExceeded) {
		if late := time.Since(d); late > 0 && uint64(late) < end {
			end -= uint64(late)
		}
	}
	before := func(ev *bpfgen.Event) error {
		if ev.Time > end {
			s.discarded.Add(1)
			return nil
		}
		return fn(ev)
	}
	// What came before the end is passed on now, not after the detach;
	// the first event after it stops this drain, which could otherwise
	// chase probes that keep firing. Events of other CPUs that are before
	// the end but behind it in the ring come with the second drain.
	err := s.Drain(func(ev *bpfgen.Event) error {
		if ev.Time > end {
			s.discarded.Add(1)
			return errEnd
		}
		return fn(ev)
	})
	if err != nil && err != errEnd {
		s.Detach()
		return err
	}
	if err := s.Detach(); err != nil {
		return err
	}
	return s.Drain(before)
}

// Discarded is the number of events Run read after the end of the trace
// (they happened while the links were being closed) and did not pass on.
func (s *Session) Discarded() uint64 { return s.discarded.Load() }

// detachWorkers bounds the goroutines Detach closes links with.
const detachWorkers = 32

// Detach closes every link: probes stop firing and the kernel lowers the
// semaphores it raised. Maps stay readable until Close. Safe to call twice.
// Links are closed concurrently (at most detachWorkers at a time, all
// waited for): closing one classic uprobe link waits for the kernel to
// unregister it, which costs ~200 ms, and the waits overlap.
func (s *Session) Detach() error {
	s.mu.Lock()
	links := s.links
	s.links = nil
	s.mu.Unlock()
	errs := make([]error, len(links))
	var (
		wg   sync.WaitGroup
		next atomic.Int64
	)
	for range min(detachWorkers, len(links)) {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= len(links) {
					return
				}
				errs[i] = links[i].Close()
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// Lost returns how many events the ring buffer refused and how many
// aggregation updates failed (a full map), summed over CPUs.
func (s *Session) Lost() (events, updates uint64, err error) {
	m, err := s.sessionMap(bpfgen.MapLost)
	if err != nil {
		return 0, 0, err
	}
	return bpfgen.ReadLost(m)
}

// Counts returns the ModeCount entries.
func (s *Session) Counts() ([]bpfgen.CountEntry, error) {
	m, err := s.sessionMap(bpfgen.MapCounts)
	if err != nil {
		return nil, err
	}
	return bpfgen.ReadCounts(m)
}

// Hist returns the ModeHist or ModeLatency buckets per probe id.
func (s *Session) Hist() (map[uint32][]uint64, error) {
	m, err := s.sessionMap(bpfgen.MapHist)
	if err != nil {
		return nil, err
	}
	return bpfgen.ReadHist(m)
}

func (s *Session) sessionMap(name string) (*ebpf.Map, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, ErrClosed
	}
	m := s.coll.Maps[name]
	if m == nil {
		return nil, fmt.Errorf("map %s: none in mode %s", name, s.cfg.Mode)
	}
	return m, nil
}

// Close detaches and releases the program, the maps and the reader. Safe to
// call twice; interrupts a pending Read.
func (s *Session) Close() error {
	errs := []error{s.Detach()}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return errors.Join(errs...)
	}
	s.closed = true
	if s.rd != nil {
		// Interrupts a Read; the reader stays set so Read sees ErrClosed.
		errs = append(errs, s.rd.Close())
	}
	if s.coll != nil {
		s.coll.Close()
	}
	return errors.Join(errs...)
}
