package sdt

import (
	"context"
	"debug/elf"
	"errors"
	"fmt"
	"strings"

	"github.com/usdtkit/usdtkit/elfnotes"
	"github.com/usdtkit/usdtkit/internal/bpfgen"
	"github.com/usdtkit/usdtkit/internal/session"
	"github.com/usdtkit/usdtkit/internal/symtab"
)

// Types of a trace, shared with package uprobe's function tracing.
type (
	// Event is one probe hit as the tracer read it: time, process, thread,
	// CPU, probe id (see Tracer.ProbeName), comm and arguments.
	Event = bpfgen.Event
	// Filter keeps a hit only when an argument compares with a value.
	Filter = bpfgen.Filter
	// Mode is what the program does with a hit.
	Mode = bpfgen.Mode
	// CountKey selects what counts are kept per, beside the probe.
	CountKey = bpfgen.CountKey
	// CountEntry is one count of a ModeCount trace.
	CountEntry = bpfgen.CountEntry
)

// Modes of a trace.
const (
	// ModeEvents sends every hit to user space.
	ModeEvents = bpfgen.ModeEvents
	// ModeCount counts hits in the kernel.
	ModeCount = bpfgen.ModeCount
	// ModeHist builds a log2 histogram of one argument in the kernel.
	ModeHist = bpfgen.ModeHist
	// ModeLatency builds a log2 histogram of the time between two probes
	// on the same thread.
	ModeLatency = bpfgen.ModeLatency

	CountPID  = bpfgen.CountPID
	CountComm = bpfgen.CountComm
)

// ErrClosed is returned by Tracer.Read after Close.
var ErrClosed = session.ErrClosed

// TraceOptions describes a trace of USDT probes.
type TraceOptions struct {
	// Probes are traced at every location; List finds them. At least one.
	Probes []Probe
	// PID restricts the trace to one process; 0 traces every process that
	// maps the probes' files. Probes listed from a process need their PID.
	PID int
	// Mode is what happens at a hit; the zero value is ModeEvents.
	Mode Mode
	// StringArgs has bit i set to read argument i of every probe as a
	// NUL-terminated string (Event.Strings[i]); at most StrLen bytes,
	// default 64. ProbeStringArgs does the same for the probe named by the
	// key ("provider:name").
	StringArgs      uint16
	ProbeStringArgs map[string]uint16
	StrLen          int
	// Filters are ANDed; a hit that fails one is dropped in the kernel.
	// A filter's comparison is made signed when its argument's spec is.
	Filters []Filter
	// CountBy adds the PID and/or comm to ModeCount's key.
	CountBy CountKey
	// HistArg is ModeHist's argument.
	HistArg int
	// LatencyStart and LatencyDone name ModeLatency's probes as
	// "provider:name".
	LatencyStart, LatencyDone string
	// Classic forces classic uprobe links; by default one uprobe_multi
	// link per file is used where the kernel has it (6.6+).
	Classic bool
}

// Tracer is a running trace of USDT probes. Close it to detach.
//
// A Tracer is safe for concurrent use, except that only one goroutine may
// Read at a time; Close interrupts a Read.
type Tracer struct {
	sess  *session.Session
	names []string
	pid   int
	// signed[id] has bit i set when argument i of probe id is signed (per
	// its first location).
	signed []uint16
	// Warnings says which arguments of which locations cannot be read by
	// the program (a register BPF cannot see, a symbol operand, a spec
	// that does not parse): those arguments read as 0 with their fault
	// bit set.
	Warnings []error
}

// Trace loads a program for opts and attaches it to every location of the
// probes. Errors wrap ebpf.ErrNotSupported when the kernel lacks a feature,
// os.ErrPermission without the privileges (root, or CAP_BPF and
// CAP_PERFMON), and os.ErrNotExist when the process is gone.
func Trace(opts *TraceOptions) (*Tracer, error) {
	if opts == nil || len(opts.Probes) == 0 {
		return nil, fmt.Errorf("trace: %w", ErrNoProbes)
	}
	t := &Tracer{}
	ids := make(map[string]uint32)
	cfg := bpfgen.Config{
		Machine: opts.Probes[0].Machine,
		Mode:    opts.Mode,
		StrLen:  opts.StrLen,
		Filters: append([]Filter(nil), opts.Filters...),
		CountBy: opts.CountBy,
		HistArg: opts.HistArg,
	}
	objects := make(map[string]*session.Object)
	symbols := make(symbolTables)
	var order []string
	signedArgs := make(map[int]bool)
	for i := range opts.Probes {
		p := &opts.Probes[i]
		if p.Machine != cfg.Machine {
			return nil, fmt.Errorf("trace %s in %s: machine %s, other probes are %s", p, p.Path, p.Machine, cfg.Machine)
		}
		id, ok := ids[p.String()]
		if !ok {
			id = uint32(len(t.names))
			ids[p.String()] = id
			t.names = append(t.names, p.String())
			var mask uint16
			if len(p.Locations) > 0 {
				for k, a := range p.Locations[0].Args {
					if a.Signed && k < 16 {
						mask |= 1 << k
					}
				}
			}
			t.signed = append(t.signed, mask)
		}
		obj := objects[p.OpenPath]
		if obj == nil {
			obj = &session.Object{Path: p.OpenPath}
			objects[p.OpenPath] = obj
			order = append(order, p.OpenPath)
		}
		resolve := symbols.resolver(p.OpenPath)
		for j := range p.Locations {
			loc := &p.Locations[j]
			if loc.OffsetErr != nil {
				return nil, fmt.Errorf("trace %s in %s at %#x: %w", p, p.Path, loc.Address, loc.OffsetErr)
			}
			strs := opts.StringArgs | opts.ProbeStringArgs[p.String()]
			site := bpfgen.Site{Probe: id, Strings: strs & (1<<len(loc.Args) - 1)}
			for k := range loc.Args {
				a := &loc.Args[k]
				f, err := a.Fetch(loc.Address, resolve)
				if err != nil {
					t.Warnings = append(t.Warnings, fmt.Errorf("%s in %s at %#x: arg%d: %w", p, p.Path, loc.Address, k, err))
					f = bpfgen.Fetch{Kind: bpfgen.FetchConst, Size: 8}
				}
				if _, seen := signedArgs[k]; !seen && a.Err == nil {
					signedArgs[k] = a.Signed
				}
				site.Args = append(site.Args, f)
			}
			obj.Offsets = append(obj.Offsets, loc.Offset)
			obj.Cookies = append(obj.Cookies, uint64(len(cfg.Sites)))
			sem := uint64(0)
			if loc.Semaphore != 0 && loc.SemaphoreErr == nil {
				sem = loc.SemaphoreOffset
			}
			obj.RefCtrOffsets = append(obj.RefCtrOffsets, sem)
			cfg.Sites = append(cfg.Sites, site)
		}
	}
	for i := range cfg.Filters {
		if f := &cfg.Filters[i]; signedArgs[f.Arg] {
			f.Signed = true
		}
	}
	if cfg.Mode == ModeLatency {
		var ok1, ok2 bool
		cfg.LatencyStart, ok1 = t.lookup(opts.LatencyStart)
		cfg.LatencyDone, ok2 = t.lookup(opts.LatencyDone)
		if !ok1 || !ok2 {
			return nil, fmt.Errorf("latency from %q to %q: both must be among the traced probes %v", opts.LatencyStart, opts.LatencyDone, t.names)
		}
	}
	sopts := &session.Options{Config: cfg, PID: opts.PID, Classic: opts.Classic}
	for _, path := range order {
		obj := objects[path]
		if !hasNonZero(obj.RefCtrOffsets) {
			obj.RefCtrOffsets = nil
		}
		sopts.Objects = append(sopts.Objects, *obj)
	}
	sess, err := session.Start(sopts)
	if err != nil {
		return nil, err
	}
	t.sess = sess
	t.pid = opts.PID
	return t, nil
}

// symbolTables resolves symbols in argument specs ("8@counter+8(%rip)"),
// reading each object's symbol table once, and only if an argument needs it.
type symbolTables map[string]*symbolTable

type symbolTable struct {
	table *symtab.Table
	err   error
}

func (st symbolTables) resolver(path string) func(string) (uint64, error) {
	return func(name string) (uint64, error) {
		t := st[path]
		if t == nil {
			t = &symbolTable{}
			st[path] = t
			t.table, t.err = readSymbols(path)
		}
		if t.err != nil {
			return 0, t.err
		}
		sym, err := t.table.Lookup(name)
		if err != nil {
			return 0, err
		}
		if sym.Type == elf.STT_TLS {
			return 0, fmt.Errorf("symbol %s is thread-local", name)
		}
		return sym.Value, nil
	}
}

func readSymbols(path string) (*symtab.Table, error) {
	f, err := elfnotes.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	syms, err := symtab.Read(f)
	if err != nil {
		return nil, err
	}
	return symtab.NewTable(syms), nil
}

// ErrNoProbes means there is nothing to trace.
var ErrNoProbes = errors.New("no probes to trace")

func hasNonZero(v []uint64) bool {
	for _, x := range v {
		if x != 0 {
			return true
		}
	}
	return false
}

// lookup finds a probe id by "provider:name", or by a name that only one
// traced probe has.
func (t *Tracer) lookup(s string) (uint32, bool) {
	found, n := uint32(0), 0
	for id, name := range t.names {
		if name == s {
			return uint32(id), true
		}
		if _, pname, _ := strings.Cut(name, ":"); pname == s {
			found, n = uint32(id), n+1
		}
	}
	return found, n == 1
}

// ProbeName returns "provider:name" of an Event's Probe id.
func (t *Tracer) ProbeName(id uint32) string {
	if int(id) < len(t.names) {
		return t.names[id]
	}
	return fmt.Sprintf("probe#%d", id)
}

// Signed reports whether argument arg of probe id is signed, so that its
// 64-bit value in an Event prints as a signed number.
func (t *Tracer) Signed(id uint32, arg int) bool {
	return int(id) < len(t.signed) && arg < 16 && t.signed[id]&(1<<arg) != 0
}

// Sites is the number of probe locations attached.
func (t *Tracer) Sites() int { return t.sess.Sites() }

// Multi reports whether uprobe_multi links carry the trace.
func (t *Tracer) Multi() bool { return t.sess.Multi() }

// Read waits for the next event (ModeEvents) and decodes it into ev, which
// it reuses. It returns ctx.Err() when ctx is done and ErrClosed after Close.
func (t *Tracer) Read(ctx context.Context, ev *Event) error { return t.sess.Read(ctx, ev) }

// Run reads events (ModeEvents) and calls fn for each until ctx is done or
// the traced process (TraceOptions.PID) exits, then detaches and calls fn for every event still in the ring buffer, so
// that nothing delivered is lost. In the aggregating modes it waits for ctx
// and detaches. It returns the first error of fn or of reading; ctx's end is
// not an error. Aggregations and Lost can be read after Run returns.
func (t *Tracer) Run(ctx context.Context, fn func(*Event) error) error {
	return t.sess.Run(ctx, t.pid, fn)
}

// Detach stops the probes; events already delivered can still be drained
// and aggregations read.
func (t *Tracer) Detach() error { return t.sess.Detach() }

// Drain calls fn for every event left, without waiting.
func (t *Tracer) Drain(fn func(*Event) error) error { return t.sess.Drain(fn) }

// Lost returns the events the ring buffer refused and the aggregation
// updates that failed, counted in the kernel.
func (t *Tracer) Lost() (events, updates uint64, err error) { return t.sess.Lost() }

// Counts returns ModeCount's counts.
func (t *Tracer) Counts() ([]CountEntry, error) { return t.sess.Counts() }

// Hist returns ModeHist's or ModeLatency's log2 buckets per probe id.
func (t *Tracer) Hist() (map[uint32][]uint64, error) { return t.sess.Hist() }

// Close detaches and releases everything. Safe to call twice.
func (t *Tracer) Close() error { return t.sess.Close() }
