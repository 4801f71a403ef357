package agent

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/prometheus/exporter-toolkit/web"

	"github.com/usdtkit/usdtkit/internal/proc/procfs"
	"github.com/usdtkit/usdtkit/trace"
)

// Options tune New. The zero value is the defaults.
type Options struct {
	// Warn, when not nil, receives what the agent could not do and goes
	// on without: a process it could not attach to (its program does not
	// compile against it, it exited meanwhile), sites of a process the
	// kernel refused to probe (a *trace.RefusedError; the others are
	// traced), a map it could not read.
	// It is called from the agent's goroutines, one call at a time.
	Warn func(error)
	// Classic forces classic uprobe links (see trace.Options.Classic).
	Classic bool
	// NoExecEvents leaves new processes to the periodic scan. By default
	// Run also subscribes to the kernel's process events (the proc
	// connector; needs CAP_NET_ADMIN in the initial network namespace)
	// and looks at each process that execs at once; where that fails it
	// warns and scans periodically only.
	NoExecEvents bool
	// HTTP bounds what Serve gives the clients of /metrics; the zero
	// value is the defaults given at HTTPLimits.
	HTTP HTTPLimits
	// WebConfigFile, when not empty, is the Prometheus exporters' web
	// config that Serve applies to /metrics (TLS, client certificates,
	// basic auth; node_exporter's --web.config.file, read by
	// github.com/prometheus/exporter-toolkit/web). New checks it; its
	// certificates are read again at each TLS connection.
	WebConfigFile string
}

// Agent runs programs in the processes their targets select, following
// processes that start, map objects and exit, and exports the programs'
// maps as Prometheus metrics (it is a prometheus.Collector).
//
// Run, Reload and Collect are safe for concurrent use.
type Agent struct {
	opts Options
	otlp *OTLPConfig
	// listen is the config's Listen at New: Reload cannot move the
	// listener, which is the caller's.
	listen string

	// scanMu serializes scan, Reload and the end of Run.
	scanMu sync.Mutex
	mu     sync.Mutex
	progs  []*program
	// wake is signalled when an attachment's Run returned (its process
	// exited): Run then scans at once.
	wake   chan struct{}
	wg     sync.WaitGroup
	stats  stats
	warnMu sync.Mutex
	// warned are the keys of the warnings given once (warnOnce), under
	// warnMu.
	warned map[string]bool
}

// stats are the agent's own counters, under Agent.mu.
type stats struct {
	attaches, detaches, attachErrors uint64
	exitedAttaching                  uint64
	scans                            uint64
	scanSeconds, collectSeconds      float64
	// lost and updateFails of the attachments retired.
	lost, updateFails uint64
}

// program is one ProgramConfig at run time.
type program struct {
	cfg       ProgramConfig
	scan      time.Duration
	selectors []selector
	// live are the attachments by PID.
	live map[int]*attachment
	// failed remembers, by PID, the object set against which the
	// program did not compile, so as not to compile again until it
	// changes.
	failed map[int]string
	// errored are the PIDs whose attach error was counted, once each.
	errored map[int]bool
	// maps hold the folded values of the attachments retired, and which
	// keys are exported.
	maps map[string]*mapState
	// gen counts the collections (see collect); complete says whether
	// the last one read the maps of every live process.
	gen      uint64
	complete bool
	// fileWide says whether the program may run file-wide for its
	// binary targets (fileWideSource); files are those tracers, and
	// fileFailed the files it did not start on (by identity).
	fileWide   bool
	files      []*fileTracer
	fileFailed map[procfs.FileID]bool
	// covered are the processes a file tracer traces, by PID: the
	// scans see them come and go. Past coveredPrune of them (the
	// execs between two full scans), the gone are left at once.
	covered      map[int]bool
	coveredPrune int
	// late counts the processes the program was started in after
	// their exec.
	late uint64
	// maxProcs bounds live (ProgramConfig.MaxProcesses); refused counts
	// the processes left untraced for it, once each (refusedPIDs).
	maxProcs    int
	refused     uint64
	refusedPIDs map[int]bool
}

// attachment is a program started in one process.
type attachment struct {
	prog   *program
	pid    int
	sig    string
	t      *trace.Tracer
	sites  int
	probes int
	cancel context.CancelFunc
	done   chan struct{}
	// read guards t against Close while Collect reads it.
	read tracerRead
}

// ErrNotRoot is New's error when not run as root: the agent reads the
// maps of every process its targets select and traces them, and a
// non-root agent would serve empty metrics.
var ErrNotRoot = errors.New("the agent must run as root: it reads and traces processes of every user")

// New checks cfg and returns an agent that does nothing until Run. Each
// program is compiled against each of its binary targets that exists
// (else against no object): an error in its text is a *ConfigError; a
// binary that does not exist is a warning (Options.Warn). Not run as
// root, it returns ErrNotRoot.
func New(cfg *Config, opts *Options) (*Agent, error) {
	if cfg == nil {
		return nil, fmt.Errorf("agent: no config")
	}
	if os.Geteuid() != 0 {
		return nil, ErrNotRoot
	}
	if err := cfg.check(); err != nil {
		return nil, err
	}
	a := &Agent{wake: make(chan struct{}, 1)}
	if opts != nil {
		a.opts = *opts
	}
	if a.opts.WebConfigFile != "" {
		if err := web.Validate(a.opts.WebConfigFile); err != nil {
			return nil, fmt.Errorf("web config %s: %w", a.opts.WebConfigFile, err)
		}
	}
	if err := compileCheck(cfg, a.warn); err != nil {
		return nil, err
	}
	a.progs = newPrograms(cfg)
	a.otlp = cfg.OTLP
	a.listen = cfg.Listen
	return a, nil
}

func newPrograms(cfg *Config) []*program {
	scan := time.Duration(cfg.ScanInterval)
	if scan == 0 {
		scan = DefaultScanInterval
	}
	var ps []*program
	for _, pc := range cfg.Programs {
		ps = append(ps, &program{cfg: pc, scan: scan, live: map[int]*attachment{},
			failed: map[int]string{}, errored: map[int]bool{}, maps: map[string]*mapState{},
			fileWide: fileWideSource(pc.Source), fileFailed: map[procfs.FileID]bool{},
			covered: map[int]bool{}, coveredPrune: minCoveredPrune,
			maxProcs: cmp.Or(pc.MaxProcesses, DefaultMaxProcesses), refusedPIDs: map[int]bool{}})
	}
	return ps
}

func (a *Agent) warn(err error) {
	if a.opts.Warn == nil {
		return
	}
	a.warnMu.Lock()
	defer a.warnMu.Unlock()
	a.opts.Warn(err)
}

// Run scans /proc at once, then every Config.ScanInterval and soon after
// each exec (see Options.NoExecEvents), attaching
// each program to the processes its targets select and detaching from
// those that exited, until ctx is done; then it detaches everything and
// returns nil. It returns an error only if /proc cannot be read.
func (a *Agent) Run(ctx context.Context) error {
	defer func() {
		a.scanMu.Lock()
		defer a.scanMu.Unlock()
		a.stopAll()
	}()
	ctx, cancel := context.WithCancel(ctx)
	execs := make(chan struct{}, 1)
	// pending are the PIDs of the execs not looked at yet; past
	// maxPendingExecs a full scan is due instead.
	var (
		pendingMu sync.Mutex
		pending   []int
		overflow  bool
	)
	if !a.opts.NoExecEvents {
		wait, err := watchExecs(ctx, func(pid int) {
			pendingMu.Lock()
			if len(pending) < maxPendingExecs {
				pending = append(pending, pid)
			} else {
				overflow = true
			}
			pendingMu.Unlock()
			select {
			case execs <- struct{}{}:
			default:
			}
		})
		if err != nil {
			a.warn(fmt.Errorf("%w (new processes are found by the periodic scan only)", err))
		} else {
			defer wait()
		}
	}
	defer cancel()
	next := time.Now()
	for {
		if !time.Now().Before(next) {
			if err := a.scan(nil); err != nil {
				return err
			}
			a.mu.Lock()
			next = time.Now().Add(a.progs[0].scan)
			a.mu.Unlock()
		}
		timer := time.NewTimer(time.Until(next))
		select {
		case <-ctx.Done():
			timer.Stop()
			return nil
		case <-timer.C:
		case <-a.wake:
			// A traced process exited: release it now.
			timer.Stop()
			a.scanMu.Lock()
			a.mu.Lock()
			progs := a.progs
			a.mu.Unlock()
			for _, p := range progs {
				a.retireExited(p)
			}
			a.scanMu.Unlock()
		case <-execs:
			timer.Stop()
			pendingMu.Lock()
			pids, full := pending, overflow
			pending, overflow = nil, false
			pendingMu.Unlock()
			if full {
				next = time.Now()
			} else if err := a.scan(pids); err != nil {
				return err
			}
		}
	}
}

// maxPendingExecs bounds the execs remembered between two looks: past
// it, the next look is a full scan.
const maxPendingExecs = 4096

// scan looks at every process once (or, with pids, at these only: the
// processes that just exec'd): attaches to those selected and not
// attached yet, attaches again to those that mapped or unmapped objects,
// detaches from those that exited or no longer match.
func (a *Agent) scan(pids []int) error {
	a.scanMu.Lock()
	defer a.scanMu.Unlock()
	start := time.Now()
	full := pids == nil
	if full {
		var err error
		if pids, err = listPIDs(); err != nil {
			return fmt.Errorf("agent: list processes: %w", err)
		}
	}
	a.mu.Lock()
	progs := a.progs
	a.mu.Unlock()
	for _, p := range progs {
		a.retireExited(p)
		a.scanProgram(p, pids, full)
	}
	if !full {
		return nil
	}
	a.mu.Lock()
	a.stats.scans++
	a.stats.scanSeconds = time.Since(start).Seconds()
	a.mu.Unlock()
	return nil
}

// scanProgram attaches p where it should be and is not, among pids; a
// full scan also leaves the processes that no longer match.
func (a *Agent) scanProgram(p *program, pids []int, full bool) {
	sels := make([]selector, len(p.cfg.Targets))
	needObjects := false
	for i, t := range p.cfg.Targets {
		sels[i] = newSelector(t)
		needObjects = needObjects || sels[i].needsObjects()
	}
	if full {
		a.startFiles(p, sels)
	}
	seen := make(map[int]bool, len(p.live))
	for _, pid := range pids {
		pr, ok := readProc(pid)
		if !ok {
			continue
		}
		a.mu.Lock()
		at := p.live[pid]
		a.mu.Unlock()
		if needObjects || at != nil {
			if err := readObjects(&pr); err != nil {
				continue
			}
		}
		matched := false
		for i := range sels {
			if sels[i].match(&pr) {
				matched = true
				break
			}
		}
		if !matched {
			continue
		}
		seen[pid] = true
		a.mu.Lock()
		covered := p.fileTracer(pr.exe) != nil
		if covered && !p.covered[pid] {
			p.covered[pid] = true
			a.stats.attaches++
			if len(p.covered) >= p.coveredPrune {
				a.pruneCovered(p)
			}
		}
		a.mu.Unlock()
		if covered {
			if at != nil {
				// Attached before the file tracer started: it
				// counts the process from now on.
				stopAttachments([]*attachment{at})
				a.retire(at)
			}
			continue
		}
		if at != nil && at.sig == pr.sig {
			continue
		}
		if at == nil && pr.sig == "" {
			if err := readObjects(&pr); err != nil {
				continue
			}
		}
		if p.failed[pid] == pr.sig {
			continue
		}
		if at == nil {
			a.mu.Lock()
			full := len(p.live) >= p.maxProcs
			if full && !p.refusedPIDs[pid] {
				p.refusedPIDs[pid] = true
				p.refused++
			}
			a.mu.Unlock()
			if full {
				// Each tracer costs memory and descriptors: a
				// neighbour starting processes the targets select
				// must not make the agent spend without bound.
				a.warnOnce(p.cfg.Name+"\x00max_processes", fmt.Errorf("program %s runs in %d processes, its max_processes: process %d and any more are not traced until one ends",
					p.cfg.Name, p.maxProcs, pid))
				continue
			}
		}
		a.attach(p, pid, pr.sig, at)
	}
	if !full {
		return
	}
	for pid := range p.failed {
		if !seen[pid] {
			delete(p.failed, pid)
		}
	}
	for pid := range p.errored {
		if !seen[pid] {
			delete(p.errored, pid)
		}
	}
	a.mu.Lock()
	for pid := range p.refusedPIDs {
		if !seen[pid] || p.live[pid] != nil {
			delete(p.refusedPIDs, pid)
		}
	}
	a.mu.Unlock()
	a.mu.Lock()
	for pid := range p.covered {
		if !seen[pid] {
			delete(p.covered, pid)
			a.stats.detaches++
		}
	}
	a.mu.Unlock()
	// A process that no longer matches (it exec'd another program) is
	// left.
	a.mu.Lock()
	var gone []*attachment
	for pid, at := range p.live {
		if !seen[pid] {
			gone = append(gone, at)
		}
	}
	a.mu.Unlock()
	stopAttachments(gone)
	for _, at := range gone {
		a.retire(at)
	}
}

// minCoveredPrune is the fewest covered processes that are checked for
// their exit between two full scans.
const minCoveredPrune = 1024

// pruneCovered leaves the covered processes that exited, so that the
// execs between two full scans do not grow p.covered without bound; the
// next check is when it has doubled. a.mu is held.
func (a *Agent) pruneCovered(p *program) {
	for pid := range p.covered {
		if _, err := os.Stat("/proc/" + strconv.Itoa(pid)); err != nil {
			delete(p.covered, pid)
			a.stats.detaches++
		}
	}
	p.coveredPrune = max(minCoveredPrune, 2*len(p.covered))
}

// retireExited retires p's attachments whose Run returned.
func (a *Agent) retireExited(p *program) {
	a.mu.Lock()
	var done []*attachment
	for _, at := range p.live {
		select {
		case <-at.done:
			done = append(done, at)
		default:
		}
	}
	a.mu.Unlock()
	for _, at := range done {
		a.retire(at)
	}
	a.stopFiles(p, false)
}

// compileOptions returns o with the agent's stack walk: frame pointers.
// The walk with call frame information (the default) needs each
// tracer's own BPF tables, 32 MiB of rows each, one per program and
// process here; until the agent shares one set (issue 26), its stack
// keys keep the frame-pointer walk.
func compileOptions(o *trace.CompileOptions) *trace.CompileOptions {
	o.Unwind = trace.UnwindFP
	return o
}

// attach compiles p's program against process pid and starts it; on
// success the attachment old (of the same process, before it mapped
// another object) is retired.
func (a *Agent) attach(p *program, pid int, sig string, old *attachment) {
	prog, err := trace.Compile(p.cfg.Name, p.cfg.Source, compileOptions(&trace.CompileOptions{PID: pid}))
	if err == nil && old != nil && prog.Sites() == old.sites {
		// The objects mapped since (libc as ld.so loads it, say) hold
		// none of the program's probes: keep the running tracer rather
		// than replace it (a replacement counts hits twice while both
		// are attached).
		a.mu.Lock()
		old.sig = sig
		a.mu.Unlock()
		return
	}
	if err == nil {
		var t *trace.Tracer
		t, err = trace.Start(prog, &trace.Options{PID: pid, Stdout: io.Discard, Classic: a.opts.Classic, Warn: func(err error) {
			a.warn(fmt.Errorf("program %s, process %d: %w", p.cfg.Name, pid, err))
		}})
		if err == nil {
			at := &attachment{prog: p, pid: pid, sig: sig, t: t, sites: prog.Sites(), probes: prog.Probes(), done: make(chan struct{})}
			var ctx context.Context
			ctx, at.cancel = context.WithCancel(context.Background())
			a.mu.Lock()
			p.live[pid] = at
			delete(p.failed, pid)
			a.stats.attaches++
			if old == nil {
				p.late++
			}
			a.mu.Unlock()
			a.wg.Add(1)
			go func() {
				defer a.wg.Done()
				if err := t.Run(ctx); err != nil {
					a.warn(fmt.Errorf("program %s, process %d: %w", p.cfg.Name, pid, err))
				}
				close(at.done)
				select {
				case a.wake <- struct{}{}:
				default:
				}
			}()
			if old != nil {
				stopAttachments([]*attachment{old})
				a.retire(old)
			}
			return
		}
	}
	a.mu.Lock()
	p.failed[pid] = sig
	switch {
	case old != nil:
		// The running tracer stays (the process may be exiting, its
		// mappings going): nothing is lost.
	case errors.Is(err, syscall.ESRCH):
		// The process exited while being attached: what it fired
		// between the attachment of the links and its exit is lost.
		a.stats.exitedAttaching++
	case noMatch(err):
		// A program that matches nothing in a process is not an error
		// of the agent's: the process may load the object later.
	case p.errored[pid]:
		// Counted at its first error: it is tried again as it maps
		// objects (ld.so loads its libraries after the exec).
	default:
		p.errored[pid] = true
		a.stats.attachErrors++
	}
	a.mu.Unlock()
	// Said once per program and cause, whichever process it is of.
	a.warnOnce(p.cfg.Name+"\x00"+strings.ReplaceAll(err.Error(), strconv.Itoa(pid), "PID"), fmt.Errorf("program %s, process %d: %w", p.cfg.Name, pid, err))
}

// noMatch reports whether err is a compile error whose every error is
// that a probe has no site in the process (trace.ErrNoMatch).
func noMatch(err error) bool {
	var list trace.CompileErrors
	if !errors.As(err, &list) || len(list) == 0 {
		return false
	}
	for _, e := range list {
		if !errors.Is(e.Err, trace.ErrNoMatch) {
			return false
		}
	}
	return true
}

// maxWarned bounds the causes warnOnce remembers; past it, warnings are
// no longer deduplicated.
const maxWarned = 1024

// warnOnce warns err unless a warning of the same key was given.
func (a *Agent) warnOnce(key string, err error) {
	a.warnMu.Lock()
	if a.warned[key] {
		a.warnMu.Unlock()
		return
	}
	if a.warned == nil {
		a.warned = map[string]bool{}
	}
	if len(a.warned) < maxWarned {
		a.warned[key] = true
	}
	a.warnMu.Unlock()
	a.warn(err)
}

// stopAttachments ends the Runs of ats (together: each detach waits for
// an SRCU grace period) and waits for them.
func stopAttachments(ats []*attachment) {
	for _, at := range ats {
		at.cancel()
	}
	for _, at := range ats {
		<-at.done
	}
}

// retire folds a finished attachment's maps into its program's and
// closes it. Run has returned: the links are closed, the maps are final.
func (a *Agent) retire(at *attachment) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if at.t == nil {
		return
	}
	p := at.prog
	if maps, err := at.t.Maps(); err != nil {
		a.warnLocked(fmt.Errorf("program %s, process %d: %w", p.cfg.Name, at.pid, err))
	} else {
		for i := range maps {
			p.fold(&maps[i])
		}
	}
	if lost, updates, err := at.t.Lost(); err == nil {
		a.stats.lost += lost
		a.stats.updateFails += updates
	}
	at.read.close(at.t)
	at.t = nil
	a.stats.detaches++
	if p.live[at.pid] == at {
		delete(p.live, at.pid)
	}
}

// warnLocked warns while a.mu is held.
func (a *Agent) warnLocked(err error) { a.warn(err) }

// stopAll stops and retires every attachment; a.scanMu is held.
func (a *Agent) stopAll() {
	a.mu.Lock()
	var all []*attachment
	for _, p := range a.progs {
		for _, at := range p.live {
			all = append(all, at)
		}
	}
	a.mu.Unlock()
	stopAttachments(all)
	for _, at := range all {
		a.retire(at)
	}
	for _, p := range a.progs {
		a.stopFiles(p, true)
	}
	a.wg.Wait()
}

// Reload replaces the configuration: every program is detached, its
// values dropped, and the new programs attached at the next scan (the
// exported counters restart from zero, which Prometheus reads as a
// reset). It must be called while Run runs or before. A cfg that New
// would refuse is refused here too, and the running config, its tracers
// and its values are kept. A new Listen is not applied (the listener is
// the caller's): Reload warns that it is ignored (Options.Warn).
func (a *Agent) Reload(cfg *Config) error {
	if cfg == nil {
		return fmt.Errorf("agent: no config")
	}
	if err := cfg.check(); err != nil {
		return err
	}
	if err := compileCheck(cfg, a.warn); err != nil {
		return err
	}
	if cfg.Listen != a.listen {
		a.warn(fmt.Errorf("reload: listen %q ignored: the agent serves on %q until it restarts", cfg.Listen, a.listen))
	}
	a.scanMu.Lock()
	defer a.scanMu.Unlock()
	a.stopAll()
	a.mu.Lock()
	a.progs = newPrograms(cfg)
	a.mu.Unlock()
	a.warnMu.Lock()
	a.warned = nil
	a.warnMu.Unlock()
	return nil
}
