package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/usdtkit/usdtkit/internal/escape"
	"github.com/usdtkit/usdtkit/internal/eventfmt"
	"github.com/usdtkit/usdtkit/internal/functrace"
	"github.com/usdtkit/usdtkit/internal/launch"
	"github.com/usdtkit/usdtkit/sdt"
	"github.com/usdtkit/usdtkit/trace"
	"github.com/usdtkit/usdtkit/uprobe"
)

type traceOptions struct {
	pid      int
	command  string
	output   string
	strs     []string
	strLen   int
	formats  []string
	filters  []string
	count    bool
	countBy  []string
	by       []string
	hist     string
	latency  string
	duration time.Duration
	classic  bool
	fields   []string
	program  string

	// Set by traceOptions: filters and the histogram of Go functions'
	// values by name.
	goFilters []functrace.GoFilter
	goHist    string
	// Set by runTrace: --field's paths and the ones formats print.
	goFields []string
}

func newTraceCmd() *cobra.Command {
	var o traceOptions
	cmd := &cobra.Command{
		Use:   "trace [-p PID | -c 'CMD ARGS'] {PROBE... | -e PROGRAM | FILE.bt} [flags]",
		Short: "Trace USDT probes and functions: print their arguments, or count and histogram them in the kernel",
		Long: `Attach to USDT probes and print each hit, or aggregate hits in the kernel.

PROBE is usdt:PATH:PROVIDER:NAME (or usdt:PATH:NAME, or PROVIDER:NAME), each part a
glob; PATH is a file or a library short name, and may be left empty with -p or -c.
Every location of every matching probe is traced. Ctrl-C, SIGTERM or -d ends the
trace: aggregates and the number of lost events are printed then.

A format (-F) is printf-style, as in bpftrace: '"%s %s:%d", str(arg0), str(arg1), arg2',
or just '%s %s:%d' (verbs take arg0, arg1, ... in order). -F FMT applies to every
probe, -F 'PROVIDER:NAME=FMT' to one.

Functions: uprobe:PATH:FUNC and uretprobe:PATH:FUNC (globs, FUNC+OFFSET, 0xADDR). For C
and C++, arg0..arg5 are the C ABI's argument registers and a uretprobe's arg0 is the
return value. For Go functions (main.(*Server).handle) arguments and results are read by
name from DWARF and Go's register ABI, events carry the goroutine id, and filters,
--hist and formats take names ('n > 3', --hist n, '"%s %d", path, n'); --field s.hits
reads a field through a pointer parameter. A Go uretprobe is a uprobe on every RET.

Programs: -e 'PROGRAM' or FILE.bt runs a program in bpftrace's language, compiled to
BPF in Go, and prints what bpftrace prints (-o json: bpftrace's -f json). Probes:
usdt:PATH:PROVIDER:NAME, usdt::PROVIDER:NAME (the -p process's objects, or the -c
command), uprobe:PATH:FUNC, uretprobe:PATH:FUNC (native functions: arg0..arg5, retval),
BEGIN, END, interval:s:N, interval:ms:N. Maps keyed by integers, strings and tuples,
count sum avg min max stats hist lhist, printf print delete clear zero time exit,
predicates, if/else, $variables, str(), comm pid tid nsecs elapsed probe... What
usdtkit does not compile yet fails at compile time with file:line:col and a sentence.
The flags --count, --hist, -F, --filter, --str, --latency, --field and --count-by
are for PROBE... and refused with a program.`,
		Example: `  usdtkit trace -p 1234 usdt::python:function__entry -F '%s %s:%d'
  usdtkit trace usdt:/usr/bin/python3.11:python:gc__start --count --count-by comm
  usdtkit trace -c './server' 'usdt::myapp:request__*' -o json --str 0
  usdtkit trace -p 1234 usdt::app:query__start usdt::app:query__done --latency query__start,query__done
  usdtkit trace -p 1234 'uprobe::main.(*Server).handle' 'uretprobe::main.(*Server).handle' -o json
  usdtkit trace -p 1234 uprobe:libc:malloc --hist arg0
  usdtkit trace -p 1234 -e 'usdt::python:function__entry { @[str(arg1)] = count(); }'
  usdtkit trace -c './server' -e 'uprobe::handle { @start[tid] = nsecs; } uretprobe::handle /@start[tid]/ { @ns = hist(nsecs - @start[tid]); delete(@start[tid]); }'
  usdtkit trace -p 1234 tools/latency.bt -o json`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if name, src, ok, err := programOf(cmd, &o, args); err != nil {
				return err
			} else if ok {
				return runProgram(cmd, &o, name, src)
			}
			if len(args) == 0 {
				return fmt.Errorf("trace: name a probe, or give a program with -e or FILE.bt")
			}
			return runTrace(cmd, &o, args)
		},
	}
	f := cmd.Flags()
	f.VarP(&pidFlag{pid: &o.pid}, "pid", "p", "trace only this process (and the objects it has mapped); a thread's ID means its process")
	f.StringVarP(&o.command, "command", "c", "", "run this command and trace it from its first instruction; when the trace ends first, it gets SIGTERM (SIGKILL 2s later); usdtkit exits with its status when it ends by itself")
	f.StringVarP(&o.output, "output", "o", "text", "output format: text or json (one object per event)")
	f.StringArrayVar(&o.strs, "str", nil, "read argument N as a string, of every probe (N) or of one (PROVIDER:NAME=N); repeatable")
	f.IntVar(&o.strLen, "strlen", 64, "bytes read per string argument, the NUL included")
	f.StringArrayVarP(&o.formats, "format", "F", nil, "printf-style format for every probe, or PROVIDER:NAME=FORMAT for one")
	f.StringArrayVar(&o.filters, "filter", nil, "keep hits where argN OP VALUE holds (==, !=, <, <=, >, >=); repeatable, ANDed")
	f.BoolVar(&o.count, "count", false, "count hits per probe in the kernel and print the counts at the end")
	f.StringSliceVar(&o.by, "by", nil, "with --count or --hist, also key by these: pid, tid, comm, argN, str(argN)")
	f.StringSliceVar(&o.countBy, "count-by", nil, "the same as --by")
	f.StringVar(&o.hist, "hist", "", "log2 histogram of this argument (argN) per probe, in the kernel")
	f.StringVar(&o.latency, "latency", "", "log2 histogram of nanoseconds from probe START to probe DONE on one thread: START,DONE as NAME or PROVIDER:NAME")
	f.DurationVarP(&o.duration, "duration", "d", 0, "stop after this long (e.g. 10s)")
	f.BoolVar(&o.classic, "classic", false, "use one classic uprobe link per site instead of uprobe_multi links")
	f.StringArrayVar(&o.fields, "field", nil, "Go functions: also read this field through a pointer parameter (PARAM.FIELD[.FIELD...]); repeatable")
	f.StringVarP(&o.program, "program", "e", "", "run this program in bpftrace's language instead of tracing PROBEs")
	return cmd
}

// commandGrace is how long a -c command has to exit after SIGTERM.
const commandGrace = 2 * time.Second

func runTrace(cmd *cobra.Command, o *traceOptions, args []string) error {
	if err := checkRun(cmd, o); err != nil {
		return err
	}
	stderr := cmd.ErrOrStderr()
	o.pid = processOf(o.pid, stderr, "tracing")
	if (o.count || o.hist != "" || o.latency != "" || len(o.formats) > 0) && len(o.fields) == 0 {
		// Go functions are traced by the flags alone (ErrGoFunction).
		err := runSource(cmd, o, "flags", func(copts *trace.CompileOptions) (string, error) {
			c := *copts
			c.Warn = nil // Compile warns
			return trace.FlagProgram(o.flags(args), &c)
		})
		if !errors.Is(err, trace.ErrGoFunction) {
			return err
		}
	}
	topts, err := o.traceOptions()
	if err != nil {
		return err
	}
	formats, err := parseFormats(o.formats)
	if err != nil {
		return err
	}
	o.goFields = fieldPaths(o.fields, formats)
	for probe, f := range formats {
		if probe == "" {
			topts.StringArgs |= f.StringArgs()
			topts.PrintArgs |= f.Args()
			continue
		}
		if topts.ProbeStringArgs == nil {
			topts.ProbeStringArgs = make(map[string]uint16)
			topts.ProbePrintArgs = make(map[string]uint16)
		}
		topts.ProbeStringArgs[probe] |= f.StringArgs()
		topts.ProbePrintArgs[probe] |= f.Args()
	}
	ctx := cmd.Context()
	if o.duration > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, o.duration)
		defer cancel()
	}

	topts.PID = o.pid
	st, err := startTracer(o, topts, args)
	if st.proc != nil {
		defer st.proc.Kill()
	}
	if err != nil {
		return err
	}
	t, proc := st.t, st.proc
	defer t.Close()
	for _, w := range st.warnings {
		fmt.Fprintln(stderr, "usdtkit: warning:", w)
	}
	kind := "uprobe_multi"
	if !t.Multi() {
		kind = "classic uprobe"
	}
	fmt.Fprintf(stderr, "Tracing %d probes at %d sites (%s links). Ctrl-C to end.\n", st.probes, t.Sites(), kind)

	if proc != nil {
		// Run ends when the command exits; proc reaps it.
		if err := proc.Resume(); err != nil {
			return err
		}
	}

	out := newEventWriter(cmd.OutOrStdout(), t, o.output, formats)
	var n uint64
	perProbe := make([]uint64, len(st.names))
	runErr := t.Run(ctx, func(ev *sdt.Event) error {
		n++
		if int(ev.Probe) < len(perProbe) {
			perProbe[ev.Probe]++
		}
		return out.write(ev)
	})
	status := endCommand(proc, stderr)
	if runErr != nil {
		return runErr
	}
	if err := out.flush(); err != nil {
		return err
	}
	if err := writeAggregates(cmd.OutOrStdout(), t, topts.Mode, o.output); err != nil {
		return err
	}
	lost, failed, err := t.Lost()
	if err != nil {
		return err
	}
	if topts.Mode == sdt.ModeEvents {
		fmt.Fprintf(stderr, "%d events, %d lost.\n", n, lost)
		if d := t.Discarded(); d > 0 {
			fmt.Fprintf(stderr, "%d events that came while the probes were being detached were not printed.\n", d)
		}
		// A companion's absence is the hint, not a count of zero: calls
		// the interpreter makes from C (at exit, say) still fire.
		for id, name := range st.names {
			for _, c := range sdt.Companions(name) {
				if !slices.Contains(st.names, c) {
					fmt.Fprintf(stderr, "usdtkit: hint: %s saw %d events; most of its hits happen only while %s is traced too: add usdt::%s\n", escape.Name(name), perProbe[id], c, c)
				}
			}
		}
	} else {
		fmt.Fprintf(stderr, "%d aggregation updates failed (map full).\n", failed)
	}
	return status
}

// flags returns the flags of a trace of PROBEs for trace.FlagProgram.
func (o *traceOptions) flags(probes []string) *trace.Flags {
	return &trace.Flags{
		Probes: probes, Count: o.count, Hist: o.hist, By: append(append([]string(nil), o.countBy...), o.by...),
		Latency: o.latency, Filters: o.filters, Formats: o.formats, Strings: o.strs, StrLen: o.strLen,
	}
}

// traceOptions validates the flags and turns them into sdt.TraceOptions
// (without probes).
func (o *traceOptions) traceOptions() (*sdt.TraceOptions, error) {
	if o.output != "text" && o.output != "json" {
		return nil, fmt.Errorf("--output %q: want text or json", o.output)
	}
	if o.pid != 0 && o.command != "" {
		return nil, fmt.Errorf("-p and -c exclude each other")
	}
	t := &sdt.TraceOptions{PID: o.pid, StrLen: o.strLen, Classic: o.classic}
	for _, s := range o.strs {
		probe, num, ok := strings.Cut(s, "=")
		if !ok {
			probe, num = "", s
		}
		n, err := strconv.Atoi(num)
		if err != nil || n < 0 || n >= 12 || (ok && !strings.Contains(probe, ":")) {
			return nil, fmt.Errorf("--str %s: want N or PROVIDER:NAME=N, N from 0 to 11", s)
		}
		if probe == "" {
			t.StringArgs |= 1 << n
			continue
		}
		if t.ProbeStringArgs == nil {
			t.ProbeStringArgs = make(map[string]uint16)
		}
		// Probe names print escaped; read them back.
		t.ProbeStringArgs[escape.Literal(probe)] |= 1 << n
	}
	o.goFilters, o.goHist = nil, ""
	for _, s := range o.filters {
		name, f, err := eventfmt.ParseNamedFilter(s)
		if err != nil {
			return nil, err
		}
		if name != "" {
			o.goFilters = append(o.goFilters, functrace.GoFilter{Name: name, Filter: f})
			continue
		}
		t.Filters = append(t.Filters, f)
	}
	modes := 0
	if o.count {
		modes++
		t.Mode = sdt.ModeCount
		for _, by := range append(append([]string(nil), o.countBy...), o.by...) {
			switch by {
			case "pid":
				t.CountBy |= sdt.CountPID
			case "comm":
				t.CountBy |= sdt.CountComm
			default:
				return nil, fmt.Errorf("--count-by %q: want pid or comm", by)
			}
		}
	} else if len(o.countBy)+len(o.by) > 0 {
		return nil, fmt.Errorf("--count-by needs --count")
	}
	if o.hist != "" {
		modes++
		t.Mode = sdt.ModeHist
		if eventfmt.IsName(o.hist) {
			o.goHist = o.hist
		} else {
			f, err := eventfmt.ParseFilter(o.hist + "==0")
			if err != nil {
				return nil, fmt.Errorf("--hist %q: want argN or the name of a Go function's value", o.hist)
			}
			t.HistArg = f.Arg
		}
	}
	if o.latency != "" {
		modes++
		t.Mode = sdt.ModeLatency
		start, done, ok := strings.Cut(o.latency, ",")
		if !ok || start == "" || done == "" {
			return nil, fmt.Errorf("--latency %q: want START,DONE", o.latency)
		}
		t.LatencyStart, t.LatencyDone = escape.Literal(start), escape.Literal(done)
	}
	if modes > 1 {
		return nil, fmt.Errorf("--count, --hist and --latency exclude each other")
	}
	if t.Mode != sdt.ModeEvents && len(o.formats) > 0 {
		return nil, fmt.Errorf("--format prints events; it does not go with --count, --hist or --latency")
	}
	return t, nil
}

// parseFormats returns the formats by probe ("" for every probe).
func parseFormats(specs []string) (map[string]*eventfmt.Format, error) {
	formats := make(map[string]*eventfmt.Format)
	for _, s := range specs {
		probe, text := "", s
		if i := strings.IndexByte(s, '='); i > 0 && !strings.ContainsAny(s[:i], "\"% ") && strings.Contains(s[:i], ":") {
			probe, text = escape.Literal(s[:i]), s[i+1:]
		}
		f, err := eventfmt.ParseFormat(text)
		if err != nil {
			return nil, err
		}
		if _, dup := formats[probe]; dup {
			return nil, fmt.Errorf("two formats for %s", or(probe, "every probe"))
		}
		formats[probe] = f
	}
	return formats, nil
}

// startCommand starts command stopped at its first instruction and returns
// it with the path of its executable.
func startCommand(command string) (*launch.Process, string, error) {
	argv, err := launch.SplitCommand(command)
	if err != nil {
		return nil, "", fmt.Errorf("-c: %w", err)
	}
	if len(argv) == 0 {
		return nil, "", fmt.Errorf("-c: an empty command (leave -c out to trace every process that maps the file)")
	}
	path, err := launch.LookPath(argv[0])
	if err != nil {
		return nil, "", fmt.Errorf("-c: %w", err)
	}
	c := exec.Command(path, argv[1:]...)
	c.Stdin, c.Stdout, c.Stderr = os.Stdin, os.Stdout, os.Stderr
	p, err := launch.Start(c)
	if err != nil {
		return nil, "", fmt.Errorf("-c %s: %w", argv[0], err)
	}
	return p, path, nil
}

// tracer is what runTrace uses of sdt.Tracer and functrace.Tracer.
type tracer interface {
	ProbeName(id uint32) string
	Signed(id uint32, arg int) bool
	Sites() int
	Multi() bool
	Run(ctx context.Context, fn func(*sdt.Event) error) error
	Lost() (events, updates uint64, err error)
	Discarded() uint64
	Counts() ([]sdt.CountEntry, error)
	Hist() (map[uint32][]uint64, error)
	Close() error
}

// startedTrace is an attached tracer, with the command it traces (-c,
// stopped until runTrace resumes it; set even on error, to be killed).
type startedTrace struct {
	t        tracer
	proc     *launch.Process
	warnings []error
	probes   int
	// names are the USDT probes' names by probe id (nil for functions).
	names []string
}

// isFuncSelector reports whether a selector is uprobe's rather than sdt's.
func isFuncSelector(s string) bool {
	kind, _, _ := strings.Cut(s, ":")
	return kind == "uprobe" || kind == "u" || kind == "uretprobe" || kind == "ur"
}

// startTracer lists what args select, starting -c's command first, and
// attaches: USDT probes, or with uprobe selectors functions.
func startTracer(o *traceOptions, topts *sdt.TraceOptions, args []string) (st startedTrace, err error) {
	funcs := 0
	for _, a := range args {
		if isFuncSelector(a) {
			funcs++
		}
	}
	if funcs != 0 && funcs != len(args) {
		return st, fmt.Errorf("uprobe and usdt selectors cannot be mixed in one trace (yet)")
	}
	if funcs == 0 && (len(o.goFilters) > 0 || o.goHist != "" || len(o.fields) > 0) {
		return st, fmt.Errorf("values by name (filters, --hist, --field) are for Go functions (uprobe:PATH:pkg.Func); USDT probes take argN")
	}
	var exe string
	if o.command != "" {
		if st.proc, exe, err = startCommand(o.command); err != nil {
			return st, err
		}
		topts.PID = st.proc.PID()
	}
	if funcs > 0 {
		return st, startFuncTrace(&st, o, exe, topts, args)
	}
	lopts := &sdt.ListOptions{PID: o.pid, Warn: func(err error) { st.warnings = append(st.warnings, err) }}
	for _, a := range args {
		sel, err := sdt.ParseSelector(a)
		if err != nil {
			return st, err
		}
		if exe != "" && (sel.Path == "" || sel.Path == "*") {
			sel.Path = exe
		}
		lopts.Selectors = append(lopts.Selectors, sel)
	}
	probes, err := sdt.List(lopts)
	if err != nil {
		return st, err
	}
	if len(probes) == 0 {
		return st, fmt.Errorf("no probe matches %s", strings.Join(args, " "))
	}
	topts.Probes = probes
	t, err := sdt.Trace(topts)
	if err != nil {
		return st, err
	}
	st.t, st.warnings, st.probes, st.names = t, append(st.warnings, t.Warnings...), countNames(probes), t.Names
	return st, nil
}

// startFuncTrace attaches to the functions args select. With -c (exe set)
// they are looked for in files, the command's executable for an empty
// PATH, since the stopped process has not mapped its libraries yet.
func startFuncTrace(st *startedTrace, o *traceOptions, exe string, topts *sdt.TraceOptions, args []string) error {
	lopts := &uprobe.ListOptions{PID: o.pid, Warn: func(err error) { st.warnings = append(st.warnings, err) }}
	for _, a := range args {
		sel, err := uprobe.ParseSelector(a)
		if err != nil {
			return err
		}
		if exe != "" && (sel.Path == "" || sel.Path == "*") {
			sel.Path = exe
		}
		lopts.Selectors = append(lopts.Selectors, sel)
	}
	fns, err := uprobe.Functions(lopts)
	if err != nil {
		return err
	}
	if len(fns) == 0 {
		return fmt.Errorf("no function matches %s", strings.Join(args, " "))
	}
	t, err := functrace.Trace(&functrace.TraceOptions{
		Functions: fns, PID: topts.PID, Mode: topts.Mode,
		StringArgs: topts.StringArgs, ProbeStringArgs: topts.ProbeStringArgs, StrLen: topts.StrLen,
		PrintArgs: topts.PrintArgs, ProbePrintArgs: topts.ProbePrintArgs,
		Filters: topts.Filters, CountBy: topts.CountBy, HistArg: topts.HistArg,
		LatencyStart: topts.LatencyStart, LatencyDone: topts.LatencyDone, Classic: topts.Classic,
		GoFilters: o.goFilters, GoHist: o.goHist, Fields: o.goFields,
	})
	if err != nil {
		return err
	}
	names := make(map[string]bool)
	for i := range fns {
		names[fns[i].Name()] = true
	}
	st.t, st.warnings, st.probes = t, append(st.warnings, t.Warnings...), len(names)
	return nil
}

// fieldPaths returns --field's paths and the dotted names formats print.
func fieldPaths(fields []string, formats map[string]*eventfmt.Format) []string {
	paths := append([]string(nil), fields...)
	for _, f := range formats {
		for _, n := range f.Names() {
			if strings.Contains(n, ".") && !slices.Contains(paths, n) {
				paths = append(paths, n)
			}
		}
	}
	return paths
}

func countNames(probes []sdt.Probe) int {
	seen := make(map[string]bool)
	for i := range probes {
		seen[probes[i].String()] = true
	}
	return len(seen)
}

func or(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// endCommand ends a -c command that is still running (saying so on stderr)
// and returns the exit status usdtkit passes on: that of a command that
// ended by itself with a non-zero status, else nil. proc may be nil.
func endCommand(proc *launch.Process, stderr io.Writer) error {
	if proc == nil {
		return nil
	}
	state, ended := proc.End(commandGrace)
	if ended {
		fmt.Fprintf(stderr, "usdtkit: ended the command (%v).\n", state)
	} else if code := launch.ExitCode(state); code != 0 {
		return exitStatus(code)
	}
	return nil
}
