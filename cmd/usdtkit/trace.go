package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/sys/unix"

	"github.com/usdtkit/usdtkit/internal/escape"
	"github.com/usdtkit/usdtkit/sdt"
	"github.com/usdtkit/usdtkit/trace"
)

type traceOptions struct {
	dump     string
	pids     []int
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
	// params are a program's positional parameters ($1, $2…): the
	// arguments after -e PROGRAM or FILE.bt.
	params []string
	// unsafe allows signal(), as bpftrace's --unsafe.
	unsafe bool
	stacks bool
	unwind string

	// format is -f, bpftrace's output format.
	format string
	// dryRun loads and attaches, then ends, as bpftrace's --dry-run.
	dryRun bool
	// list and verbose are bpftrace's -l and -v: list probes, with
	// their arguments.
	list, verbose bool
	// quiet is bpftrace's -q: no "Attaching N probes..." line.
	quiet bool
	// fileActivation is bpftrace's --usdt-file-activation, which is
	// what usdtkit always does.
	fileActivation bool

	// Set by checkRun: what -o and -f ask for; the flame graph's title.
	out        outputSpec
	flameTitle string
}

func newTraceCmd() *cobra.Command {
	var o traceOptions
	cmd := &cobra.Command{
		Use:   "trace [-p PID | -c 'CMD ARGS'] {PROBE... | -e PROGRAM [ARG...] | FILE.bt [ARG...] | - [ARG...]} [flags]",
		Short: "Trace USDT probes and functions: print their arguments, or count and histogram them in the kernel",
		Long: `Attach to USDT probes and print each hit, or aggregate hits in the kernel.

PROBE is usdt:PATH:PROVIDER:NAME (or usdt:PATH:NAME, or PROVIDER:NAME), each part a
glob; PATH is a file or a library short name, and may be left empty with -p or -c.
Every location of every matching probe is traced. Ctrl-C, SIGTERM or -d ends the
trace: aggregates and the number of lost events are printed then. A second Ctrl-C
or SIGTERM ends usdtkit at once, without them.

The flags are shorthands for programs (below): --count is @[probe] = count(), --hist
arg1 --by pid is @[probe, pid] = hist(arg1), --filter 'arg0 > 3' or 'str(arg1) == "GET"'
a predicate (PROVIDER:NAME=EXPR for one probe), --latency START,DONE the @start[tid] pair,
and -F a printf: '"%s %s:%d", str(arg0), str(arg1), arg2', or just '%s %s:%d' (verbs
take arg0, arg1, ... in order); -F FMT applies to every probe, -F 'PROVIDER:NAME=FMT'
to one. They print what the program prints: bpftrace's maps and lines. Without them,
each hit prints as one line (or JSON object) with all its arguments.

Functions: uprobe:PATH:FUNC and uretprobe:PATH:FUNC (globs, FUNC+OFFSET, 0xADDR). For C
and C++, arg0..arg5 are the C ABI's argument registers and a uretprobe's arg0 is the
return value. For Go functions (main.(*Server).handle) arguments and results are read by
name from DWARF and Go's register ABI, events carry the goroutine id, and filters,
--hist and formats take names ('n > 3', --hist n, '"%s %d", path, n'); --field s.hits
reads a field through a pointer parameter. A Go uretprobe is a uprobe on every RET.

Programs: -e 'PROGRAM', FILE.bt (a first argument without a colon is a program file,
.bt or not, as bpftrace's FILENAME) or - (the program on stdin, as bpftrace's -) runs
a program in bpftrace's language, compiled to BPF in Go, and prints what bpftrace prints
(-f json or -o json: bpftrace's -f json; -o FILE, a path with a dot or a slash, writes it
to FILE, as bpftrace's -o). Probes:
usdt:PATH:PROVIDER:NAME, usdt::PROVIDER:NAME (the -p process's objects, or the -c
command), uprobe:PATH:FUNC, uretprobe:PATH:FUNC (native functions: arg0..arg5, retval;
Go functions: parameters and results by name as args.NAME, retval, and goid, the
goroutine id, for latency pairs; a Go uretprobe is a probe on every RET), BEGIN, END,
interval:s:N, interval:ms:N, profile:hz:N and profile:s|ms|us:N (CPU samples of the
traced processes, or of every process without -p or -c). Maps keyed by integers, strings and tuples,
count sum avg min max stats hist lhist, printf print delete clear zero time exit,
predicates, if/else, $variables, str(), comm pid tid nsecs elapsed probe... The
arguments after the program are its positional parameters, $1, $2... and $#. What
usdtkit does not compile yet fails at compile time with file:line:col and a sentence.
The flags --count, --stacks, --by, --hist, -F, --filter, --str, --latency and --field
are for PROBE... and refused with a program.

Stacks: --stacks counts hits per probe and user stack (@[probe, ustack] = count()), and
programs key maps by ustack. With -o json, a printf line with ustack arguments also has
"stacks": each stack's frames as objects (address, object, object_offset, symbol,
offset, file, line, inlined); and after the maps, each entry of a map keyed by a
stack is a "stack" line with its frames, other keys and value. -o folded, -o pprof and -o html write those counts, after
the trace, to stdout as folded stacks (flamegraph.pl, inferno, speedscope), a gzipped
pprof profile (go tool pprof -http=: FILE) or a self-contained HTML flame graph; what
the trace prints then goes to stderr. -o FILE.folded, FILE.pb.gz or FILE.html writes the
file instead and prints as -o text. Each stack's root frame is its map's other keys (the
probe with --stacks), after the map's name when it is not @. Map keys are walked by the BPF
program with each object's CFI (--unwind cfi-bpf, the default: tables of the -p and -c
processes' objects in BPF maps), so stacks keep the frames of code built without frame
pointers (Debian's libc, most -O2 C code) and are still counted in the kernel; other
processes' stacks (no -p or -c), the first stacks of a -c command before usdtkit reads its
libraries, and kernels without bpf_loop (5.17; see usdtkit doctor) use frame pointers.
--unwind fp is the frame-pointer walk (as bpftrace), so a stack ends at the first function
built without frame pointers; --unwind cfi copies 8 KiB of stack per hit into the ring
buffer and unwinds it with each object's CFI in usdtkit, as printf'd stacks always are,
for every process: each hit costs more, and hits are lost (and counted) when the ring is
full; it supports count() and sum() maps keyed by one ustack, not delete() of them.

Environment: BPFTRACE_MAX_STRLEN (bpftrace 0.2x), or else BPFTRACE_STRLEN (0.17), sets the
bytes a program's str() reads, the NUL included (default 64, at most 1024);
BPFTRACE_CAT_BYTES_MAX the most bytes cat() prints of a file (default 10240); the other
BPFTRACE_* variables are ignored.`,
		Example: `  usdtkit trace -p 1234 usdt::python:function__entry -F '%s %s:%d'
  usdtkit trace usdt:/usr/bin/python3.11:python:gc__start --count --by comm
  usdtkit trace -p 1234 -p 5678 uprobe:libc:malloc --hist arg0 --by pid
  usdtkit trace -p 1234 usdt::python:function__entry usdt::python:line --count --filter 'python:function__entry=str(arg1) == "handle"' 
  usdtkit trace -c './server' 'usdt::myapp:request__*' -o json --str 0
  usdtkit trace -p 1234 usdt::app:query__start usdt::app:query__done --latency query__start,query__done
  usdtkit trace -p 1234 'uprobe::main.(*Server).handle' 'uretprobe::main.(*Server).handle' -o json
  usdtkit trace -p 1234 uprobe:libc:malloc --hist arg0
  usdtkit trace -p 1234 -e 'usdt::python:function__entry { @[str(arg1)] = count(); }'
  usdtkit trace -c './server' -e 'uprobe::handle { @start[tid] = nsecs; } uretprobe::handle /@start[tid]/ { @ns = hist(nsecs - @start[tid]); delete(@start[tid]); }'
  usdtkit trace -p 1234 tools/latency.bt -o json
  usdtkit trace -p 1234 uprobe:libc:malloc --stacks -o flame.html
  usdtkit trace -c './server' -e 'uprobe::handle { @[ustack] = count(); }' -o pprof > server.pb.gz
  usdtkit trace -l 'usdt:/usr/bin/python3.11:*'
  usdtkit trace -p 1234 -lv 'usdt:*:python:function__*'
  usdtkit trace -f json -o trace.out tools/latency.bt
  echo 'BEGIN { printf("hi\n"); exit(); }' | usdtkit trace --dry-run -`,
		RunE: func(cmd *cobra.Command, args []string) error {
			// The kernel's wait at the first uprobe runs while the
			// probes are looked up and the program compiled.
			if o.list {
				return runTraceList(cmd, &o, args)
			}
			trace.Warm()
			if name, src, ok, err := programOf(cmd, &o, args); err != nil {
				return err
			} else if ok {
				return runProgram(cmd, &o, name, src)
			}
			if len(args) == 0 {
				return fmt.Errorf("trace: name a probe, or give a program with -e or FILE.bt (or - for stdin)")
			}
			return runTrace(cmd, &o, args)
		},
	}
	f := cmd.Flags()
	f.VarP(&pidsFlag{pids: &o.pids}, "pid", "p", "trace only this process (and the objects it has mapped); a thread's ID means its process; repeatable")
	f.StringVarP(&o.command, "command", "c", "", "run this command and trace it from its first instruction; when the trace ends first, it gets SIGTERM (SIGKILL 2s later); usdtkit exits with its status when it ends by itself. With -o json, folded, pprof or html on stdout, the command's stdout goes to stderr")
	f.StringVarP(&o.output, "output", "o", "text", "output format: text or json (one object per event); or the counts of stacks (--stacks, @[ustack] = count()) as a flame graph: folded, pprof or html on stdout (what the trace prints goes to stderr), or a file FILE.folded, FILE.pb.gz or FILE.html; or, as bpftrace's -o FILE, any other path with a dot or a slash (out.txt, ./json), which gets what would go to stdout, in -f's format. A format name is always a format: -o json is JSON on stdout, -o ./json a file")
	f.StringVarP(&o.format, "output-format", "f", "", "bpftrace's -f: the format of what goes to stdout (or to -o FILE): text, json (one object per line, as bpftrace's -f json), or a flame graph, folded, pprof or html (as -o FORMAT)")
	f.StringArrayVar(&o.strs, "str", nil, "read argument N as a string, of every probe (N) or of one (PROVIDER:NAME=N); repeatable")
	f.IntVar(&o.strLen, "strlen", 64, "bytes read per string argument, the NUL included")
	f.StringArrayVarP(&o.formats, "format", "F", nil, "printf at every hit of every probe, or of one (PROVIDER:NAME=FORMAT)")
	f.StringArrayVar(&o.filters, "filter", nil, "keep hits where argN OP VALUE or str(argN) OP \"TEXT\" holds (==, !=, <, <=, >, >=), of every probe or of one (PROVIDER:NAME=EXPR); repeatable, ANDed")
	f.BoolVar(&o.stacks, "stacks", false, "count hits per probe and user stack in the kernel: @[probe, ustack] = count(); with -o folded, pprof or FILE.html a flame graph")
	f.StringVar(&o.unwind, "unwind", "cfi-bpf", "how ustack map keys (--stacks, @[ustack] = count()) are captured: cfi-bpf, walked in the BPF program with the CFI of each process's objects and counted in the kernel (a process not named by -p or -c gets its tables after its first hits, which follow frame pointers; frame pointers too where the kernel lacks bpf_loop); fp, the frame-pointer walk (stacks end in code without frame pointers, such as libc); or cfi, a copy of 8 KiB of stack per hit sent through the ring buffer and unwound with each object's CFI in usdtkit, for every process, which costs more per hit and loses hits when the ring is full (counted as lost events); cfi counts only count() and sum() maps")
	f.BoolVar(&o.count, "count", false, "count hits per probe in the kernel and print the counts at the end: @[probe] = count()")
	f.StringSliceVar(&o.by, "by", nil, "with --count or --hist, also key by these: pid, tid, comm, argN, str(argN)")
	f.StringSliceVar(&o.countBy, "count-by", nil, "the same as --by")
	f.StringVar(&o.hist, "hist", "", "log2 histogram of this argument (argN) per probe, in the kernel: @[probe] = hist(argN)")
	f.StringVar(&o.latency, "latency", "", "log2 histogram of nanoseconds from probe START to probe DONE on one thread (one goroutine for Go functions): START,DONE as NAME, PROVIDER:NAME or uprobe:FUNC")
	f.DurationVarP(&o.duration, "duration", "d", 0, "stop after this long (e.g. 10s)")
	f.BoolVar(&o.unsafe, "unsafe", false, "allow what changes the traced processes: signal(), as bpftrace's --unsafe")
	f.BoolVar(&o.classic, "classic", false, "use one classic uprobe link per site instead of uprobe_multi links")
	f.StringArrayVar(&o.fields, "field", nil, "Go functions: also read this field through a pointer parameter (PARAM.FIELD[.FIELD...]); repeatable")
	f.StringVarP(&o.program, "program", "e", "", "run this program in bpftrace's language instead of tracing PROBEs")
	f.BoolVarP(&o.list, "list", "l", false, "as bpftrace's -l [SEARCH]: list the probes that match SEARCH (usdt:PATH:PROVIDER:NAME, uprobe:PATH:FUNC, uretprobe:PATH:FUNC, aliases, globs also in the type, several comma-separated; PATH * with -p) as bpftrace prints them, and exit; with -p and no SEARCH, every USDT probe of the process and the functions of its executable")
	f.BoolVarP(&o.verbose, "verbose", "v", false, "with -l (-lv): also print each USDT argument's type and specs, and Go functions' parameters and results; when tracing, also say on stderr how many probes and sites are attached")
	f.BoolVar(&o.fileActivation, "usdt-file-activation", false, "as bpftrace's --usdt-file-activation, which usdtkit always does: a USDT probe's semaphore is raised in every process that maps the file, now or later (the kernel's uprobe reference counter)")
	f.BoolVarP(&o.quiet, "quiet", "q", false, "as bpftrace's -q: leave out the \"Attaching N probes...\" line printed before BEGIN runs (on stdout, in -f's format; on stderr when a flame graph takes stdout)")
	f.BoolVar(&o.dryRun, "dry-run", false, "as bpftrace's --dry-run: compile, load into the kernel and attach every probe, then detach and exit 0 without running anything (no BEGIN, no output; a -c command is killed before its first instruction)")
	f.StringVar(&o.dump, "dump", "", "print one stage of the compilation on stdout and exit without tracing: ast (the program as parsed), types (maps' and variables' types) or bpf (the generated maps and instructions)")
	// bpftrace's heading, which scripts and bpftrace's own tests look for.
	cmd.SetUsageTemplate(strings.Replace(cmd.UsageTemplate(), "Usage:", "USAGE:", 1))
	return cmd
}

// commandGrace is how long a -c command has to exit after SIGTERM.
const commandGrace = 2 * time.Second

// runTrace traces PROBEs: the flags become a program or events
// (trace.CompileFlags).
func runTrace(cmd *cobra.Command, o *traceOptions, args []string) error {
	if err := checkRun(cmd, o); err != nil {
		return err
	}
	for i, pid := range o.pids {
		o.pids[i] = processOf(pid, cmd.ErrOrStderr(), "tracing")
	}
	o.flameTitle = flameTitle("", "", args)
	flags := o.flags(args)
	return runSource(cmd, o, func(copts *trace.CompileOptions) (*trace.Program, error) {
		return trace.CompileFlags(flags, copts)
	})
}

// flags returns the flags of a trace of PROBEs for package trace.
func (o *traceOptions) flags(probes []string) *trace.Flags {
	return &trace.Flags{
		Probes: probes, Count: o.count, Stacks: o.stacks, Hist: o.hist, By: append(append([]string(nil), o.countBy...), o.by...),
		Latency: o.latency, Filters: o.filters, Formats: o.formats, Strings: o.strs, StrLen: o.strLen, Fields: o.fields,
	}
}

// eventCounter prints events and counts them, by name too.
type eventCounter struct {
	out     *eventWriter
	n       uint64
	perName map[string]uint64
	// end is when the trace was told to end (CLOCK_MONOTONIC ns, the
	// events' clock), 0 before: the hits that come while the probes are
	// detached, which takes long with classic links, are counted in late,
	// not printed.
	end  atomic.Uint64
	late uint64
}

func (c *eventCounter) event(ev *trace.Event) error {
	if end := c.end.Load(); end != 0 && ev.Time > end {
		c.late++
		return nil
	}
	c.n++
	c.perName[ev.Name]++
	return c.out.writeEvent(ev)
}

// endAt sets end when ctx is done (at its deadline, if it has one),
// until stop is closed.
func (c *eventCounter) endAt(ctx context.Context, stop <-chan struct{}) {
	if d, ok := ctx.Deadline(); ok {
		c.end.Store(clockMonotonic() + uint64(max(time.Until(d), 0)))
		return
	}
	go func() {
		select {
		case <-ctx.Done():
			c.end.Store(clockMonotonic())
		case <-stop:
		}
	}()
}

// clockMonotonic is CLOCK_MONOTONIC in nanoseconds, the clock of events.
func clockMonotonic() uint64 {
	var ts unix.Timespec
	if unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts) != nil {
		return 0
	}
	return uint64(ts.Nano())
}

// summary says on stderr how many events came and were lost, and hints
// at the companions of probes CPython fires only together.
func (c *eventCounter) summary(stderr io.Writer, t *trace.Tracer, prog *trace.Program) error {
	if err := c.out.flush(); err != nil {
		return err
	}
	lost, _, err := t.Lost()
	if err != nil {
		return err
	}
	fmt.Fprintf(stderr, "%d events, %d lost.\n", c.n, lost)
	if c.late > 0 {
		fmt.Fprintf(stderr, "%d events that came while the probes were being detached were not printed.\n", c.late)
	}
	// A companion's absence is the hint, not a count of zero: calls the
	// interpreter makes from C (at exit, say) still fire.
	names := prog.ProbeNames()
	for _, name := range names {
		for _, comp := range sdt.Companions(name) {
			if !slices.Contains(names, comp) {
				fmt.Fprintf(stderr, "usdtkit: hint: %s saw %d events; most of its hits happen only while %s is traced too: add usdt::%s\n", escape.Name(name), c.perName[name], comp, comp)
			}
		}
	}
	return nil
}

// tracingLine is what stderr says with -v once every probe is attached.
func tracingLine(prog *trace.Program, classic bool) string {
	links := ""
	if classic {
		links = " (classic uprobe links)"
	}
	return fmt.Sprintf("Tracing %d probes at %d sites%s. Ctrl-C to end.", prog.Probes(), prog.Sites(), links)
}
