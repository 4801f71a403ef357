package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/usdtkit/usdtkit/internal/escape"
	"github.com/usdtkit/usdtkit/internal/eventfmt"
	"github.com/usdtkit/usdtkit/internal/functrace"
	"github.com/usdtkit/usdtkit/internal/launch"
	"github.com/usdtkit/usdtkit/trace"
	"github.com/usdtkit/usdtkit/uprobe"
)

// runGoFuncTrace traces Go functions by the flags alone (trace.ErrGoFlags):
// the flags read their values by name, which the flags' programs do not
// yet. Aggregates print in this path's own format (writeAggregates).
func runGoFuncTrace(cmd *cobra.Command, o *traceOptions, args []string) error {
	if len(o.pids) > 1 {
		return fmt.Errorf("-p is given %d times: Go functions are traced in one process", len(o.pids))
	}
	topts, err := o.goTraceOptions()
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

	stderr := cmd.ErrOrStderr()
	if len(o.pids) == 1 {
		topts.PID = o.pids[0]
	}
	st, err := startFuncTrace(o, topts, args)
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
	runErr := t.Run(ctx, func(ev *functrace.Event) error {
		n++
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
	if topts.Mode == functrace.ModeEvents {
		fmt.Fprintf(stderr, "%d events, %d lost.\n", n, lost)
		if d := t.Discarded(); d > 0 {
			fmt.Fprintf(stderr, "%d events that came while the probes were being detached were not printed.\n", d)
		}
	} else {
		fmt.Fprintf(stderr, "%d aggregation updates failed (map full).\n", failed)
	}
	return status
}

// goTraceOptions validates the flags and turns them into
// functrace.TraceOptions (without functions).
func (o *traceOptions) goTraceOptions() (*functrace.TraceOptions, error) {
	t := &functrace.TraceOptions{StrLen: o.strLen, Classic: o.classic}
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
	by := append(append([]string(nil), o.countBy...), o.by...)
	if o.count {
		modes++
		t.Mode = functrace.ModeCount
		for _, b := range by {
			switch b {
			case "pid":
				t.CountBy |= functrace.CountPID
			case "comm":
				t.CountBy |= functrace.CountComm
			default:
				return nil, fmt.Errorf("--by %q: Go functions are counted by pid or comm", b)
			}
		}
	} else if len(by) > 0 {
		return nil, fmt.Errorf("--by: Go functions are keyed by pid or comm, with --count only")
	}
	if o.hist != "" {
		modes++
		t.Mode = functrace.ModeHist
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
		t.Mode = functrace.ModeLatency
		start, done, ok := strings.Cut(o.latency, ",")
		if !ok || start == "" || done == "" {
			return nil, fmt.Errorf("--latency %q: want START,DONE", o.latency)
		}
		t.LatencyStart, t.LatencyDone = escape.Literal(start), escape.Literal(done)
	}
	if modes > 1 {
		return nil, fmt.Errorf("--count, --hist and --latency exclude each other")
	}
	if t.Mode != functrace.ModeEvents && len(o.formats) > 0 {
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
	c, err := commandOf(command)
	if err != nil {
		return nil, "", err
	}
	p, err := launch.Start(c)
	if err != nil {
		return nil, "", fmt.Errorf("-c %s: %w", c.Args[0], err)
	}
	return p, c.Path, nil
}

// tracer is what runGoFuncTrace uses of functrace.Tracer.
type tracer interface {
	ProbeName(id uint32) string
	Signed(id uint32, arg int) bool
	Sites() int
	Multi() bool
	Run(ctx context.Context, fn func(*functrace.Event) error) error
	Lost() (events, updates uint64, err error)
	Discarded() uint64
	Counts() ([]functrace.CountEntry, error)
	Hist() (map[uint32][]uint64, error)
	Close() error
}

// startedTrace is an attached tracer, with the command it traces (-c,
// stopped until runGoFuncTrace resumes it; set even on error, to be killed).
type startedTrace struct {
	t        tracer
	proc     *launch.Process
	warnings []error
	probes   int
}

// startFuncTrace starts -c's command, and attaches to the functions args
// select. With -c they are looked for in files, the command's executable
// for an empty PATH, since the stopped process has not mapped its
// libraries yet.
func startFuncTrace(o *traceOptions, topts *functrace.TraceOptions, args []string) (st startedTrace, err error) {
	for _, a := range args {
		if !trace.IsFunctionSelector(a) {
			return st, fmt.Errorf("%s: Go functions and USDT probes cannot be traced together (yet)", a)
		}
	}
	var exe string
	if o.command != "" {
		if st.proc, exe, err = startCommand(o.command); err != nil {
			return st, err
		}
		topts.PID = st.proc.PID()
	}
	lopts := &uprobe.ListOptions{PID: topts.PID, Warn: func(err error) { st.warnings = append(st.warnings, err) }}
	if o.command != "" {
		lopts.PID = 0
	}
	for _, a := range args {
		sel, err := uprobe.ParseSelector(a)
		if err != nil {
			return st, err
		}
		if exe != "" && (sel.Path == "" || sel.Path == "*") {
			sel.Path = exe
		}
		lopts.Selectors = append(lopts.Selectors, sel)
	}
	fns, err := uprobe.Functions(lopts)
	if err != nil {
		return st, err
	}
	if len(fns) == 0 {
		return st, fmt.Errorf("no function matches %s", strings.Join(args, " "))
	}
	topts.Functions = fns
	topts.GoFilters, topts.GoHist, topts.Fields = o.goFilters, o.goHist, o.goFields
	t, err := functrace.Trace(topts)
	if err != nil {
		return st, err
	}
	names := make(map[string]bool)
	for i := range fns {
		names[fns[i].Name()] = true
	}
	st.t, st.warnings, st.probes = t, append(st.warnings, t.Warnings...), len(names)
	return st, nil
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
