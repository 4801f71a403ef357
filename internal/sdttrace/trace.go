// Package sdttrace is the tracer of USDT probes that package trace's
// programs replace: a fixed BPF program per mode (events, count, hist,
// latency) over internal/session. Only tests and benchmarks use it now;
// it is apart from package sdt so that listing probes links no BPF
// loader.
package sdttrace

import (
	"errors"
	"fmt"
	"os"

	"github.com/usdtkit/usdtkit/internal/argfetch"
	"github.com/usdtkit/usdtkit/internal/bpfgen"
	"github.com/usdtkit/usdtkit/internal/procfs"
	"github.com/usdtkit/usdtkit/internal/session"
	"github.com/usdtkit/usdtkit/internal/symtab"
	"github.com/usdtkit/usdtkit/internal/target"
	"github.com/usdtkit/usdtkit/sdt"
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

// ErrNoArg is wrapped by Trace when an option reads an argument that a
// probe does not have.
var ErrNoArg = session.ErrNoArg

// TraceOptions describes a trace of USDT probes.
type TraceOptions struct {
	// Probes are traced at every location; List finds them. At least one.
	Probes []sdt.Probe
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
	// PrintArgs has bit i set when the caller prints argument i of every
	// probe (a format's argN); ProbePrintArgs does so for one probe. Trace
	// only checks them.
	PrintArgs      uint16
	ProbePrintArgs map[string]uint16
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
	// Session, probe names and argument signedness: ProbeName, Signed,
	// Read, Run, Detach, Drain, Lost, Counts, Hist, Close and the rest
	// are its methods.
	*session.Tracer
	// Warnings says which arguments of which locations cannot be read by
	// the program (a register BPF cannot see, a symbol operand, a spec
	// that does not parse): those arguments read as 0 with their fault
	// bit set.
	Warnings []error
}

// Trace loads a program for opts and attaches it to every location of the
// probes. An argument an option reads (a string, a printed or filtered
// one, HistArg) that a probe lacks is an error wrapping ErrNoArg, naming
// the probe; so is a per-probe option whose key names no traced probe.
// Errors wrap ebpf.ErrNotSupported when the kernel lacks a feature,
// os.ErrPermission without the privileges (root, or CAP_BPF and
// CAP_PERFMON), and os.ErrNotExist when the process is gone.
func Trace(opts *TraceOptions) (*Tracer, error) {
	if opts == nil || len(opts.Probes) == 0 {
		return nil, fmt.Errorf("trace: %w", ErrNoProbes)
	}
	t := &Tracer{Tracer: &session.Tracer{PID: opts.PID}}
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
	// Each file is opened once, as List opened it, and checked to be the
	// file listed; the kernel attaches to the open file, not to a name.
	// The kernel holds the inode once attached, so the files are closed
	// when Trace returns.
	files := make(map[fileKey]*os.File)
	defer func() {
		for _, f := range files {
			f.Close()
		}
	}()
	var symbols symtab.Resolvers
	var order []string
	signedArgs := make(map[int]bool)
	refs := &session.ArgRefs{
		Strings: opts.StringArgs, ProbeStrings: opts.ProbeStringArgs,
		Prints: opts.PrintArgs, ProbePrints: opts.ProbePrintArgs,
		Filters: opts.Filters, Hist: opts.HistArg, HistOn: opts.Mode == ModeHist,
	}
	for i := range opts.Probes {
		p := &opts.Probes[i]
		if p.Machine != cfg.Machine {
			return nil, fmt.Errorf("trace %s in %s: machine %s, other probes are %s", p, p.Path, p.Machine, cfg.Machine)
		}
		id, ok := ids[p.String()]
		if !ok {
			id = uint32(len(t.Names))
			ids[p.String()] = id
			t.Names = append(t.Names, p.String())
			var mask uint16
			if len(p.Locations) > 0 {
				for k, a := range p.Locations[0].Args {
					if a.Signed && k < 16 {
						mask |= 1 << k
					}
				}
			}
			t.SignedArgs = append(t.SignedArgs, mask)
		}
		fk := fileKey{p.PID, p.Path, procfs.FileID{Dev: p.Dev, Inode: p.Inode}}
		file := files[fk]
		if file == nil {
			var err error
			if file, err = target.Reopen(p.Path, p.PID, fk.id); err != nil {
				return nil, fmt.Errorf("trace %s: %w", p, err)
			}
			files[fk] = file
		}
		fdPath := procfs.FDPath(file)
		obj := objects[fdPath]
		if obj == nil {
			obj = &session.Object{Path: fdPath, Name: p.Path}
			objects[fdPath] = obj
			order = append(order, fdPath)
		}
		resolve := symbols.For(fdPath)
		for j := range p.Locations {
			loc := &p.Locations[j]
			if loc.OffsetErr != nil {
				return nil, fmt.Errorf("trace %s in %s at %#x: %w", p, p.Path, loc.Address, loc.OffsetErr)
			}
			if err := refs.Check(p.String(), len(loc.Args)); err != nil {
				return nil, err
			}
			strs := opts.StringArgs | opts.ProbeStringArgs[p.String()]
			site := bpfgen.Site{Probe: id, Strings: strs & (1<<len(loc.Args) - 1)}
			for k := range loc.Args {
				a := &loc.Args[k]
				f, err := argfetch.Fetch(*a, loc.Address, resolve)
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
	if err := refs.CheckNames(t.Names); err != nil {
		return nil, err
	}
	for i := range cfg.Filters {
		if f := &cfg.Filters[i]; signedArgs[f.Arg] {
			f.Signed = true
		}
	}
	if cfg.Mode == ModeLatency {
		var ok1, ok2 bool
		cfg.LatencyStart, ok1 = t.Lookup(opts.LatencyStart)
		cfg.LatencyDone, ok2 = t.Lookup(opts.LatencyDone)
		if !ok1 || !ok2 {
			return nil, fmt.Errorf("latency from %q to %q: both must be among the traced probes %v", opts.LatencyStart, opts.LatencyDone, t.Names)
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
	t.Session = sess
	return t, nil
}

// fileKey is a file as List found it.
type fileKey struct {
	pid  int
	path string
	id   procfs.FileID
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
