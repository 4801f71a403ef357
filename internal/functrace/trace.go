package functrace

import (
	"debug/elf"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/usdtkit/usdtkit/internal/bpfgen"
	"github.com/usdtkit/usdtkit/internal/gofunc"
	"github.com/usdtkit/usdtkit/internal/procfs"
	"github.com/usdtkit/usdtkit/internal/session"
	"github.com/usdtkit/usdtkit/internal/target"
	"github.com/usdtkit/usdtkit/uprobe"
)

// Types of a trace, the same as package sdt's.
type (
	// Event is one probe hit: time, process, thread, CPU, probe id (see
	// Tracer.ProbeName), comm and arguments.
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

// Modes of a trace, as in package sdt.
const (
	ModeEvents  = bpfgen.ModeEvents
	ModeCount   = bpfgen.ModeCount
	ModeHist    = bpfgen.ModeHist
	ModeLatency = bpfgen.ModeLatency

	CountPID  = bpfgen.CountPID
	CountComm = bpfgen.CountComm
)

// Errors of Functions and Trace.
var (
	// ErrClosed is returned by Tracer.Read after Close.
	ErrClosed = session.ErrClosed
	// ErrNoFunctions means there is nothing to trace.
	ErrNoFunctions = errors.New("no functions to trace")
	// ErrNoArg means an option reads an argument a function's site does
	// not have (package sdt's value).
	ErrNoArg = session.ErrNoArg
)

// TraceOptions describes a trace of native functions. The fields other
// than Functions mean what they mean in sdttrace.TraceOptions.
type TraceOptions struct {
	// Functions are the sites to trace, as Functions returns them; at
	// least one, all of one machine.
	Functions []uprobe.Function
	// PID restricts the trace to one process; 0 traces every process that
	// maps the files.
	PID int
	// Mode is what happens at a hit; the zero value is ModeEvents.
	Mode Mode
	// StringArgs has bit i set to read argument i of every probe as a
	// NUL-terminated string; ProbeStringArgs does so for the probe named
	// by the key ("uprobe:FUNC"). At most StrLen bytes, default 64.
	StringArgs      uint16
	ProbeStringArgs map[string]uint16
	StrLen          int
	// PrintArgs and ProbePrintArgs name the arguments the caller prints
	// (a format's argN), for Trace to check.
	PrintArgs      uint16
	ProbePrintArgs map[string]uint16
	// Filters are ANDed; comparisons are unsigned (C arguments are read
	// as 8-byte unsigned registers).
	Filters []Filter
	CountBy CountKey
	// HistArg is ModeHist's argument.
	HistArg int
	// LatencyStart and LatencyDone name ModeLatency's probes
	// ("uprobe:FUNC", "uretprobe:FUNC", or FUNC if only one has it).
	LatencyStart, LatencyDone string
	// Classic forces classic uprobe links; by default one uprobe_multi
	// link per file and kind is used where the kernel has it (6.6+).
	Classic bool

	// GoFilters are filters on Go functions' values by name; every traced
	// function must be a Go function with that value. They are ANDed with
	// Filters.
	GoFilters []GoFilter
	// GoHist names the ModeHist value of Go functions (instead of
	// HistArg).
	GoHist string
	// Fields are paths through pointer parameters of Go functions
	// ("s.hits", "req.next.id") read at their entry, in addition to the
	// parameters. Integer, bool and pointer fields only.
	Fields []string
}

// Tracer is a running trace of functions. Close it to detach.
//
// A Tracer is safe for concurrent use, except that only one goroutine may
// Read at a time; Close interrupts a Read.
type Tracer struct {
	// Session and probe names: ProbeName, Read, Run, Detach, Drain, Lost,
	// Counts, Hist, Close and the rest are its methods. Arguments and
	// return values are read as unsigned.
	*session.Tracer
	// Warnings says what the trace reads that may not mean what the user
	// thinks: C ABI registers at an offset into a Go function, values of a
	// Go function that are not read, an IFUNC resolver.
	Warnings []error

	// goProbes[id] is the layout of Go probe id's events, nil for others.
	goProbes []*goProbe
}

// Entry sites read the first six integer arguments of the C calling
// convention; return sites read the integer return register.
const (
	entryArgs  = 6
	returnArgs = 1
)

// siteArgs returns the fetches of an entry or return site of machine m.
func siteArgs(m elf.Machine, ret bool) ([]bpfgen.Fetch, error) {
	regs, r, err := uprobe.CRegisters(m)
	if err != nil {
		return nil, err
	}
	if ret {
		regs = []string{r}
	}
	fetches := make([]bpfgen.Fetch, len(regs))
	for i, name := range regs {
		off, err := bpfgen.PtRegs(m, name)
		if err != nil {
			return nil, err
		}
		fetches[i] = bpfgen.Fetch{Kind: bpfgen.FetchReg, Size: 8, Reg: bpfgen.Reg{Off: off, Width: 8}}
	}
	return fetches, nil
}

// Trace loads a program for opts and attaches it to every function site.
// An argument an option reads that a native site lacks (arg6, or arg1 of
// a return) is an error wrapping ErrNoArg.
// Native entry sites report arg0..arg5, the integer argument registers of
// the C ABI of the file's machine; native return sites report the return
// register as arg0. Go functions (Function.Go, no Delta) are probed after
// their stack check and at every RET, never with a uretprobe, and their
// events decode by name with DecodeGo (see the package doc).
// Errors wrap ebpf.ErrNotSupported when the kernel lacks a feature,
// os.ErrPermission without the privileges, and os.ErrNotExist when the
// process is gone.
func Trace(opts *TraceOptions) (*Tracer, error) {
	if opts == nil || len(opts.Functions) == 0 {
		return nil, fmt.Errorf("trace: %w", ErrNoFunctions)
	}
	t := &Tracer{Tracer: &session.Tracer{PID: opts.PID}}
	machine := opts.Functions[0].Machine
	cfg := bpfgen.Config{
		Machine: machine,
		Mode:    opts.Mode,
		StrLen:  opts.StrLen,
		Filters: append([]Filter(nil), opts.Filters...),
		CountBy: opts.CountBy,
		HistArg: opts.HistArg,
	}
	type objKey struct {
		path string
		ret  bool
	}
	objects := make(map[objKey]*session.Object)
	var order []objKey
	ids := make(map[string]uint32)
	gobins := make(map[string]*gofunc.Binary)
	gotypes := make(map[string]map[uint64]string)
	// Each file is opened once, as List opened it, and checked to be the
	// file listed; the kernel and gofunc read the open file, not a name.
	// The kernel holds the inode once attached, so the files are closed
	// when Trace returns, after the Go binaries read through them.
	files := make(map[fileKey]*os.File)
	defer func() {
		for _, f := range files {
			f.Close()
		}
	}()
	defer func() {
		for _, b := range gobins {
			b.Close()
		}
	}()
	goSites, cSites := 0, 0
	refs := &session.ArgRefs{
		Strings: opts.StringArgs, ProbeStrings: opts.ProbeStringArgs,
		Prints: opts.PrintArgs, ProbePrints: opts.ProbePrintArgs,
		Filters: opts.Filters, Hist: opts.HistArg, HistOn: opts.Mode == ModeHist && opts.GoHist == "",
	}
	for i := range opts.Functions {
		fn := &opts.Functions[i]
		name := fn.Name()
		if fn.Machine != machine {
			return nil, fmt.Errorf("trace %s in %s: machine %s, other functions are %s", name, fn.Path, fn.Machine, machine)
		}
		fk := fileKey{fn.PID, fn.Path, procfs.FileID{Dev: fn.Dev, Inode: fn.Inode}}
		file := files[fk]
		if file == nil {
			var err error
			if file, err = target.Reopen(fn.Path, fn.PID, fk.id); err != nil {
				return nil, fmt.Errorf("trace %s: %w", name, err)
			}
			files[fk] = file
		}
		fdPath := procfs.FDPath(file)
		if fn.Go && fn.Delta == 0 {
			// Go functions: the entry after the prologue, or every RET;
			// never a uretprobe (see package gofunc).
			b := gobins[fdPath]
			if b == nil {
				var err error
				if b, err = gofunc.Open(fdPath); err != nil {
					return nil, fmt.Errorf("trace %s: %w", name, err)
				}
				gobins[fdPath] = b
				gotypes[fdPath] = b.TypeNames()
			}
			gf, err := b.Func(fn.Symbol.Name)
			if err != nil {
				return nil, fmt.Errorf("trace %s: %w", name, err)
			}
			id, ok := ids[name]
			if !ok {
				id = uint32(len(t.Names))
				ids[name] = id
				t.Names = append(t.Names, name)
				for _, pr := range gf.Problems {
					t.Warnings = append(t.Warnings, fmt.Errorf("%s in %s: %s", name, fn.Path, pr))
				}
			}
			offs, site, err := t.goSites(fn, gf, b.GoidOffset, b.GReg, opts, id)
			if err != nil {
				return nil, fmt.Errorf("trace %w", err)
			}
			t.goProbes[id].types = gotypes[fdPath]
			k := objKey{fdPath, false}
			obj := objects[k]
			if obj == nil {
				obj = &session.Object{Path: fdPath, Name: fn.Path}
				objects[k] = obj
				order = append(order, k)
			}
			for _, off := range offs {
				obj.Offsets = append(obj.Offsets, off)
				obj.Cookies = append(obj.Cookies, uint64(len(cfg.Sites)))
				cfg.Sites = append(cfg.Sites, site)
				goSites++
			}
			continue
		}
		cSites++
		if fn.Return && fn.Delta != 0 {
			return nil, fmt.Errorf("trace %s in %s: a return probe must be at the function's start", name, fn.Path)
		}
		off, err := fn.FileOffset()
		if err != nil {
			return nil, fmt.Errorf("trace %w", err)
		}
		if err := fn.CheckBoundary(file); err != nil {
			return nil, fmt.Errorf("trace %w", err)
		}
		args, err := siteArgs(machine, fn.Return)
		if err != nil {
			return nil, fmt.Errorf("trace %s in %s: %w", name, fn.Path, err)
		}
		if err := refs.Check(name, len(args)); err != nil {
			return nil, err
		}
		id, ok := ids[name]
		if !ok {
			id = uint32(len(t.Names))
			ids[name] = id
			t.Names = append(t.Names, name)
			if fn.Go {
				t.Warnings = append(t.Warnings, fmt.Errorf("%s in %s: an offset into a Go function; arg0..arg5 are the C ABI's registers, not Go's arguments", name, fn.Path))
			}
			if fn.Symbol.Kind == uprobe.SymIFunc {
				t.Warnings = append(t.Warnings, fmt.Errorf("%s in %s: an IFUNC resolver, which runs at load time, not at each call", name, fn.Path))
			}
		}
		k := objKey{fdPath, fn.Return}
		obj := objects[k]
		if obj == nil {
			obj = &session.Object{Path: fdPath, Name: fn.Path, Return: fn.Return}
			objects[k] = obj
			order = append(order, k)
		}
		strs := opts.StringArgs | opts.ProbeStringArgs[name]
		obj.Offsets = append(obj.Offsets, off)
		obj.Cookies = append(obj.Cookies, uint64(len(cfg.Sites)))
		cfg.Sites = append(cfg.Sites, bpfgen.Site{Probe: id, Args: args, Strings: strs & (1<<len(args) - 1)})
	}
	if err := refs.CheckNames(t.Names); err != nil {
		return nil, err
	}
	if refs := opts.goRefs(); len(refs) > 0 {
		if cSites > 0 {
			return nil, fmt.Errorf("trace: filters and histograms by name need Go functions only (%s)", strings.Join(refs, ", "))
		}
		slot := make(map[string]int)
		for i, r := range refs {
			slot[r] = 1 + i
		}
		for _, f := range opts.GoFilters {
			bf := f.Filter
			bf.Arg = slot[f.Name]
			bf.Signed = t.Signed(cfg.Sites[0].Probe, bf.Arg) || bf.Signed
			cfg.Filters = append(cfg.Filters, bf)
		}
		if opts.GoHist != "" {
			cfg.HistArg = slot[opts.GoHist]
		}
	}
	if cfg.Mode == ModeLatency {
		var ok1, ok2 bool
		cfg.LatencyStart, ok1 = t.Lookup(opts.LatencyStart)
		cfg.LatencyDone, ok2 = t.Lookup(opts.LatencyDone)
		if !ok1 || !ok2 {
			return nil, fmt.Errorf("latency from %q to %q: both must be among the traced probes %v", opts.LatencyStart, opts.LatencyDone, t.Names)
		}
		if cSites == 0 && goSites > 0 {
			// Go: pair entries and returns by goroutine, not by thread.
			cfg.LatencyByArg, cfg.LatencyArg = true, 0
		}
	}
	sopts := &session.Options{Config: cfg, PID: opts.PID, Classic: opts.Classic}
	for _, k := range order {
		sopts.Objects = append(sopts.Objects, *objects[k])
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
