package trace

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/usdtkit/usdtkit/internal/escape"
	"github.com/usdtkit/usdtkit/internal/golang/gofunc"
	"github.com/usdtkit/usdtkit/internal/lang/btlang"
	"github.com/usdtkit/usdtkit/internal/proc/procfs"
	"github.com/usdtkit/usdtkit/internal/proc/target"
	"github.com/usdtkit/usdtkit/sdt"
	"github.com/usdtkit/usdtkit/uprobe"
)

// Flags are the trace command's shorthands for a program: probes as
// selectors and what to do at each hit. FlagProgram turns them into the
// program they stand for, FlagEvents (flags that only print hits) into
// EventProbes, CompileFlags compiles either. The zero value of every
// field but Probes is the default. Flags is plain data; the functions
// taking it do not modify it and are safe for concurrent use.
type Flags struct {
	// Probes are selectors as the trace command takes them:
	// usdt:PATH:PROVIDER:NAME, usdt:PATH:NAME, PROVIDER:NAME (U: for
	// usdt:), uprobe:PATH:FUNC[+OFFSET], uretprobe:PATH:FUNC (u:, ur:).
	// Parts are globs and may hold package escape's \xNN escapes; a
	// PATH of "*" or "" means every object of CompileOptions.PID and
	// PIDs, or CompileOptions.Executable.
	Probes []string
	// Count counts hits: @[probe] = count().
	Count bool
	// Stacks counts hits per user stack: @[probe, ustack] = count(), By's
	// keys between probe and ustack. Tracer.Stacks returns the counts
	// for flame graphs.
	Stacks bool
	// Hist is "argN": @[probe] = hist(argN).
	Hist string
	// By adds keys after probe to Count's or Hist's map, in order: pid,
	// tid, comm, argN or str(argN).
	By []string
	// Latency is "START,DONE", each NAME or PROVIDER:NAME of a USDT
	// probe, or uprobe:FUNC / uretprobe:FUNC: a histogram of the
	// nanoseconds from START to DONE on one thread, @latency_ns[probe].
	Latency string
	// Filters are predicates, ANDed: "argN OP VALUE" (OP one of == != <
	// <= > >=, VALUE an integer), "str(argN) OP \"TEXT\"" (== or !=), or
	// "argN OP \"TEXT\"" for an argument Strings reads as a string. With
	// a "PROVIDER:NAME=" prefix a filter applies to that probe only.
	//
	// Go functions' values are named instead of argN, in filters, Hist
	// and Formats: a parameter (at the entry), a result (at a RET) or a
	// field through a pointer parameter ("n > 3", "s.hits >= 40",
	// "path == \"/x\"", --hist n, '"%s %d", path, n'); they compare
	// integers, bools and pointers with integers, strings with TEXT.
	Filters []string
	// Formats are printf formats, printed at each hit with a newline
	// appended when missing: '"TEXT", argN, str(argN)...' or just
	// 'TEXT' whose verbs take arg0, arg1... in order (%s as str(argN)).
	// Verbs: d i u x X o p c s with the flag -, a width and a precision.
	// With a "PROVIDER:NAME=" prefix a format is that probe's only.
	Formats []string
	// Strings are the arguments read as strings: "N" for every probe,
	// "PROVIDER:NAME=N" for one, N from 0 to 11.
	Strings []string
	// StrLen is the bytes read per string, the NUL included; 0 means 64.
	StrLen int
	// Fields are paths through pointer parameters of Go functions
	// ("s.hits", "s.next.hits") that events carry after the parameters
	// (EventProbe.Fields).
	Fields []string
}

// FlagError is an error in Flags: which flag, as the trace command names
// it, and one sentence.
type FlagError struct {
	Flag string
	Msg  string
}

func (e *FlagError) Error() string { return e.Flag + ": " + e.Msg }

func flagErrorf(flag, format string, args ...any) error {
	return &FlagError{Flag: flag, Msg: fmt.Sprintf(format, args...)}
}

// ErrNoProgram is returned by FlagProgram for Flags without Count,
// Stacks, Hist, Latency or Formats: printing each event with all its arguments is not
// a program.
var ErrNoProgram = errors.New("events without a format have no program")

// CompileFlags compiles what f stands for: FlagProgram's program, or
// for Flags without Count, Hist, Latency or Formats the events of
// FlagEvents (start it with Options.OnEvent). The errors are theirs and
// Compile's, those about the written program without its positions,
// which the caller never wrote.
func CompileFlags(f *Flags, opts *CompileOptions) (*Program, error) {
	if f == nil {
		return nil, fmt.Errorf("compile flags: no Flags")
	}
	var o CompileOptions
	if opts != nil {
		o = *opts
	}
	quiet := o
	quiet.Warn = nil // Compile warns
	var prog *Program
	if !f.Count && !f.Stacks && f.Hist == "" && f.Latency == "" && len(f.Formats) == 0 {
		eps, err := FlagEvents(f, &quiet)
		if err != nil {
			return nil, err
		}
		prog, err = CompileEvents(eps, &o)
		if err != nil {
			return nil, unplaced(err)
		}
		return prog, nil
	}
	tree, err := flagTree(f, &quiet)
	if err != nil {
		return nil, err
	}
	if prog, err = compile(&compilation{name: flagsFile, prog: tree, opts: &o}); err != nil {
		return nil, unplaced(err)
	}
	return prog, nil
}

// flagsFile is the file of the positions of a flag program's nodes.
const flagsFile = "flags"

// unplacedErrors are CompileErrors without their positions.
type unplacedErrors struct{ list CompileErrors }

func (e unplacedErrors) Error() string {
	msgs := make([]string, len(e.list))
	for i, c := range e.list {
		msgs[i] = c.Msg
	}
	return strings.Join(msgs, "\n")
}

func (e unplacedErrors) Unwrap() []error { return e.list.Unwrap() }

// unplaced drops the positions of CompileErrors.
func unplaced(err error) error {
	var list CompileErrors
	if errors.As(err, &list) {
		return unplacedErrors{list}
	}
	return err
}

// FlagEvents returns what CompileEvents takes for Flags without Count,
// Hist, Latency or Formats: an EventProbe per group of probes the same
// flags apply to, with the filters and the string arguments that apply
// to them. It lists the probes, checks and errs as FlagProgram.
func FlagEvents(f *Flags, opts *CompileOptions) ([]EventProbe, error) {
	sp, sels, err := prepareFlags(f, opts, true)
	if err != nil {
		return nil, err
	}
	return sp.events(sels)
}

// FlagProgram returns the program in bpftrace's language that f stands
// for: it lists the probes (as Compile does, with opts) to check every
// argument the flags read against every probe, to resolve per-probe
// flags and Latency's names, and builds one block per group of probes
// the same flags apply to, printed in canonical form (as usdtkit trace
// --dump ast prints it). Filters and formats are read as fragments of
// the language; a probe name no program can hold (with a '"' or a
// newline) is refused, so that the program parses back to what
// CompileFlags compiles.
//
// A function selected by its address (uprobe:PATH:0xADDR) is written as
// its symbol and offset (uprobe:PATH:FUNC+OFFSET). Go functions' values
// named in the flags are written args.NAME; latency pairs of Go
// functions are by goroutine (pid, goid), not by thread.
//
// Errors: *FlagError for a malformed flag or a value by name a probe
// does not have; ErrNoProgram; errors listing the objects
// (os.ErrPermission, sdt.ErrNotFound) wrapped.
func FlagProgram(f *Flags, opts *CompileOptions) (string, error) {
	tree, err := flagTree(f, opts)
	if err != nil {
		return "", err
	}
	return tree.String(), nil
}

// flagTree is FlagProgram's program as a syntax tree.
func flagTree(f *Flags, opts *CompileOptions) (*btlang.Program, error) {
	sp, sels, err := prepareFlags(f, opts, false)
	if err != nil {
		return nil, err
	}
	return sp.program(sels)
}

// prepareFlags parses f, and lists its probes.
func prepareFlags(f *Flags, opts *CompileOptions, events bool) (*flagSpec, []*flagSelector, error) {
	if f == nil {
		return nil, nil, fmt.Errorf("flags: no Flags")
	}
	spec, err := parseFlags(f, events)
	if err != nil {
		return nil, nil, err
	}
	var o CompileOptions
	if opts != nil {
		o = *opts
	}
	sels, err := parseSelectors(f.Probes)
	if err != nil {
		return nil, nil, err
	}
	if spec.names != "" && !slices.ContainsFunc(sels, func(s *flagSelector) bool { return s.kind != kindUSDT }) {
		return nil, nil, flagErrorf(spec.names, "values by name are for Go functions (uprobe:PATH:pkg.Func); USDT probes take argN")
	}
	if err := listSelectors(sels, &o, spec.names != ""); err != nil {
		return nil, nil, err
	}
	if len(spec.fields) > 0 && !slices.ContainsFunc(sels, func(s *flagSelector) bool {
		return slices.ContainsFunc(s.found, func(p flagProbe) bool { return p.goVals != nil })
	}) {
		return nil, nil, flagErrorf("--field", "fields are read through pointer parameters of Go functions, and no Go function is traced")
	}
	return spec, sels, nil
}

// Probe kinds of selectors.
const (
	kindUSDT = iota
	kindUprobe
	kindUretprobe
)

// flagSelector is one of Flags.Probes with what it lists.
type flagSelector struct {
	text string
	kind int
	// probe is the selector as a program's probe; nil for a function
	// by its address, named by what it lists.
	probe *btlang.Probe
	sdt   sdt.Selector
	fn    uprobe.Selector
	found []flagProbe
}

// flagProbe is one probe a selector lists: a USDT probe (all its
// locations in one object) or a function.
type flagProbe struct {
	// name is as the trace command shows it: PROVIDER:NAME, uprobe:FUNC.
	name string
	// probe names just this probe in a program.
	probe *btlang.Probe
	// probeErr is why no program can name just this probe (a '"' in
	// its name): an error only when probe is needed.
	probeErr error
	args     int
	ret      bool
	// goVals are, for a Go function at its entry or return, the names
	// and kinds of its parameters (entry) or results (return) when
	// flags name values (else empty, not nil); nil for other probes.
	goVals []goVal
}

// goVal is a Go function's parameter or result, for the flags' checks.
type goVal struct {
	name, typ string
	kind      gofunc.Kind
}

// IsFunctionSelector reports whether s selects functions (uprobe:,
// uretprobe:, u:, ur:) rather than USDT probes.
func IsFunctionSelector(s string) bool {
	name, _, ok := strings.Cut(s, ":")
	kind, _ := btlang.LookupProbeKind(name)
	return ok && (kind == btlang.ProbeUprobe || kind == btlang.ProbeUretprobe)
}

func parseSelectors(probes []string) ([]*flagSelector, error) {
	if len(probes) == 0 {
		return nil, flagErrorf("PROBE", "name a probe")
	}
	var sels []*flagSelector
	for _, p := range probes {
		s := &flagSelector{text: p}
		if IsFunctionSelector(p) {
			sel, err := uprobe.ParseSelector(p)
			if err != nil {
				return nil, err
			}
			s.kind, s.fn = kindUprobe, sel
			s.probe = &btlang.Probe{Kind: btlang.ProbeUprobe, Path: anyPath(sel.Path), Name: sel.Func, Offset: sel.Offset}
			if sel.Return {
				s.kind, s.probe.Kind = kindUretprobe, btlang.ProbeUretprobe
			}
		} else {
			sel, err := sdt.ParseSelector(p)
			if err != nil {
				return nil, err
			}
			s.kind, s.sdt = kindUSDT, sel
			s.probe = &btlang.Probe{Kind: btlang.ProbeUSDT, Path: anyPath(sel.Path), Provider: or(sel.Provider, "*"), Name: or(sel.Name, "*")}
		}
		if err := s.probe.Printable(); err != nil {
			return nil, flagErrorf(escape.Name(p), "%v", err)
		}
		if s.kind != kindUSDT && s.fn.Address != 0 {
			// Named by the functions it lists: FUNC+OFFSET.
			s.probe = nil
		}
		sels = append(sels, s)
	}
	return sels, nil
}

// anyPath is "" for "*": every object of the process, or the command's
// executable.
func anyPath(p string) string {
	if p == "*" {
		return ""
	}
	return p
}

func or(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// listSelectors lists each selector's probes as Compile will: a selector
// that lists nothing is dropped (others may), none listing anything is an
// error. With goNames, the values of Go functions are read from their
// DWARF, for the flags that name them.
func listSelectors(sels []*flagSelector, o *CompileOptions, goNames bool) error {
	warn := o.Warn
	if warn == nil {
		warn = func(error) {}
	}
	pids, err := o.pids()
	if err != nil {
		return err
	}
	var usdtSels, fnSels []string
	gobins := make(map[object]*gofunc.Binary)
	defer func() {
		for _, b := range gobins {
			b.Close()
		}
	}()
	libs := commandLibs{exe: o.Executable, warn: warn}
	for _, s := range sels {
		path := anyPath(s.sdt.Path)
		if s.kind != kindUSDT {
			path = anyPath(s.fn.Path)
		}
		if path == "" && pids[0] == 0 {
			if o.Executable == "" {
				return fmt.Errorf("%s: an empty path needs a process: trace one with -p or -c (CompileOptions.PID or Executable)", escape.Name(s.text))
			}
			path = o.Executable
		}
		if pids[0] == 0 {
			if lib, ok := libs.path(path); ok {
				path = lib
			}
		}
		if s.kind == kindUSDT {
			usdtSels = append(usdtSels, s.text)
			sel := s.sdt
			sel.Path = path
			var probes []sdt.Probe
			for _, pid := range pids {
				some, err := sdt.List(&sdt.ListOptions{PID: pid, Warn: warn, Selectors: []sdt.Selector{sel}})
				if err != nil {
					return err
				}
				probes = append(probes, some...)
			}
			for i := range probes {
				p := &probes[i]
				n := -1
				for j := range p.Locations {
					if k := len(p.Locations[j].Args); n < 0 || k < n {
						n = k
					}
				}
				pr := &btlang.Probe{Kind: btlang.ProbeUSDT, Path: p.Path, Provider: btlang.QuoteGlob(p.Provider), Name: btlang.QuoteGlob(p.Name)}
				s.found = append(s.found, flagProbe{name: p.String(), probe: pr, probeErr: nameError(p.String(), pr), args: max(n, 0)})
			}
			continue
		}
		fnSels = append(fnSels, s.text)
		sel := s.fn
		sel.Path = path
		var fns []uprobe.Function
		for _, pid := range pids {
			some, err := uprobe.Functions(&uprobe.ListOptions{PID: pid, Warn: warn, Selectors: []uprobe.Selector{sel}})
			if err != nil {
				return err
			}
			fns = append(fns, some...)
		}
		for i := range fns {
			fn := &fns[i]
			kind := btlang.ProbeUprobe
			args := 6
			if fn.Return {
				kind, args = btlang.ProbeUretprobe, 1
			}
			var vals []goVal
			if fn.Go && fn.Delta == 0 {
				args, vals = 0, []goVal{}
				if goNames {
					if vals, err = goValsOf(fn, gobins); err != nil {
						return err
					}
				}
			}
			pr := &btlang.Probe{Kind: kind, Path: fn.Path, Name: btlang.QuoteGlob(fn.Symbol.Name), Offset: fn.Delta}
			if !slices.ContainsFunc(s.found, func(p flagProbe) bool { return *p.probe == *pr }) {
				s.found = append(s.found, flagProbe{name: fn.Name(), probe: pr, probeErr: nameError(fn.Name(), pr), args: args, ret: fn.Return, goVals: vals})
			}
		}
	}
	if slices.ContainsFunc(sels, func(s *flagSelector) bool { return len(s.found) > 0 }) {
		return nil
	}
	if len(usdtSels) == 0 {
		return fmt.Errorf("no function matches %s", strings.Join(fnSels, " "))
	}
	return fmt.Errorf("no probe matches %s", strings.Join(append(usdtSels, fnSels...), " "))
}

// nameError is why no program can name probe p, which a listing calls
// name, as a FlagError; nil if one can.
func nameError(name string, p *btlang.Probe) error {
	if err := p.Printable(); err != nil {
		return flagErrorf(escape.Name(name), "%v", err)
	}
	return nil
}

// goValsOf returns the parameters (entry) or results (return) of Go
// function fn, opening its binary once per listing.
func goValsOf(fn *uprobe.Function, gobins map[object]*gofunc.Binary) ([]goVal, error) {
	k := object{fn.Path, fn.PID, fn.Dev, fn.Inode}
	b := gobins[k]
	if b == nil {
		f, err := target.Reopen(fn.Path, fn.PID, procfs.FileID{Dev: fn.Dev, Inode: fn.Inode})
		if err != nil {
			return nil, err
		}
		// gofunc reads through its own descriptor of the file.
		b, err = gofunc.Open(procfs.FDPath(f))
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", fn.Name(), err)
		}
		gobins[k] = b
	}
	gf, err := b.Func(fn.Symbol.Name)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", fn.Name(), err)
	}
	ps := gf.Params
	if fn.Return {
		ps = gf.Results
	}
	vals := []goVal{}
	for _, p := range ps {
		vals = append(vals, goVal{p.Name, p.Type, p.Kind})
	}
	return vals, nil
}

// ProbeNames returns the names of the probes the program attaches to, as
// Event.Name gives them (PROVIDER:NAME for USDT probes, the function for
// functions), sorted, each once.
func (p *Program) ProbeNames() []string {
	var names []string
	for _, n := range p.names {
		if !slices.Contains(names, n.name) {
			names = append(names, n.name)
		}
	}
	slices.Sort(names)
	return names
}

// SendsEvents reports whether the program sends Events (CompileEvents,
// CompileFlags): Start then needs Options.OnEvent.
func (p *Program) SendsEvents() bool { return p.gen != nil && len(p.gen.Events) > 0 }
