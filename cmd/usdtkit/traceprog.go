package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/usdtkit/usdtkit/internal/launch"
	"github.com/usdtkit/usdtkit/trace"
)

// paramRE finds a positional parameter in a program's text.
var paramRE = regexp.MustCompile(`\$([0-9]|#)`)

// programOf returns the program -e or a FILE.bt argument gives, with the
// name its errors use, and sets o.params to the arguments after it (the
// positional parameters $1, $2…); ok is false when the command traces
// PROBEs.
func programOf(cmd *cobra.Command, o *traceOptions, args []string) (name, src string, ok bool, err error) {
	fl := cmd.Flags()
	switch {
	case fl.Changed("program"):
		name, src, o.params = "-e", o.program, args
	case len(args) >= 1 && strings.HasSuffix(args[0], ".bt") && !strings.Contains(args[0], ":"):
		b, err := trace.ReadProgram(args[0])
		if err != nil {
			return "", "", false, fmt.Errorf("program file: %w", err)
		}
		name, src, o.params = args[0], b, args[1:]
	default:
		return "", "", false, nil
	}
	if len(o.params) > 0 && !paramRE.MatchString(src) {
		return "", "", false, fmt.Errorf("%s takes the whole program: the arguments after it are its positional parameters, and it uses none ($1, $#): %s", name, strings.Join(o.params, " "))
	}
	// The flags of probe tracing that a program replaces, with what to
	// write in the program instead.
	programFlags := []struct{ name, instead string }{
		{"count", "write @[probe] = count() in the program"},
		{"stacks", "write @[probe, ustack] = count() in the program"},
		{"count-by", "write @[probe, pid, comm] = count() in the program"},
		{"by", "write @[probe, pid, comm] = count() in the program"},
		{"hist", "write @[probe] = hist(arg0) in the program"},
		{"format", `write printf("%d\n", arg0) in the program`},
		{"filter", "write a predicate such as /arg0 > 10/ in the program"},
		{"str", "write str(arg0) in the program"},
		{"strlen", "write str(arg0, 32) in the program"},
		{"latency", "write @start[tid] = nsecs at the start and hist(nsecs - @start[tid]) at the end in the program"},
		{"field", "programs read Go parameters as args.NAME and fields through pointers as args.s.hits"},
	}
	for _, f := range programFlags {
		if fl.Changed(f.name) {
			return "", "", false, fmt.Errorf("%s and --%s exclude each other: %s", name, f.name, f.instead)
		}
	}
	return name, src, true, nil
}

// checkRun validates the flags every trace takes.
func checkRun(cmd *cobra.Command, o *traceOptions) error {
	fl := cmd.Flags()
	fo, err := parseOutput(o.output)
	if err != nil {
		return err
	}
	o.flame = fo
	if len(o.pids) > 0 && o.command != "" {
		return fmt.Errorf("-p and -c exclude each other")
	}
	if fl.Changed("command") && strings.TrimSpace(o.command) == "" {
		return fmt.Errorf("-c: an empty command (leave -c out to trace every process that maps the file)")
	}
	if _, err := unwindOf(o.unwind); err != nil {
		return err
	}
	if fl.Changed("duration") && o.duration <= 0 {
		return fmt.Errorf("-d %v: want a positive duration, such as 10s", o.duration)
	}
	if fl.Changed("dump") && !slices.Contains(trace.Stages, trace.Stage(o.dump)) {
		return fmt.Errorf("--dump %q: want one of %v", o.dump, trace.Stages)
	}
	return nil
}

// runProgram compiles a program, starts -c's command stopped if there is
// one, attaches, resumes the command and prints until the program exits,
// the process exits, -d passes or a signal comes.
func runProgram(cmd *cobra.Command, o *traceOptions, name, src string) error {
	if err := checkRun(cmd, o); err != nil {
		return err
	}
	for i, pid := range o.pids {
		o.pids[i] = processOf(pid, cmd.ErrOrStderr(), "tracing")
	}
	o.flameTitle = flameTitle(name, src, nil)
	return runSource(cmd, o, func(copts *trace.CompileOptions) (*trace.Program, error) {
		return trace.Compile(name, src, copts)
	})
}

// runSource is runProgram once the flags are checked: compile compiles
// the program given where its probes are looked for (-p's processes, or
// -c's executable). A program that sends events has them printed.
func runSource(cmd *cobra.Command, o *traceOptions, compile func(*trace.CompileOptions) (*trace.Program, error)) error {
	ctx := cmd.Context()
	if o.duration > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, o.duration)
		defer cancel()
	}
	stderr := cmd.ErrOrStderr()
	warn := func(err error) { fmt.Fprintln(stderr, "usdtkit: warning:", err) }
	copts := &trace.CompileOptions{PIDs: o.pids, Params: o.params, Unsafe: o.unsafe, Warn: warn}
	unwind, err := unwindOf(o.unwind)
	if err != nil {
		return err
	}
	copts.Unwind = unwind
	topts := &trace.Options{PIDs: o.pids, Stdout: cmd.OutOrStdout(), Classic: o.classic, CommandGrace: commandGrace, Warn: warn}
	output := o.output
	if o.flame != nil {
		// A flame graph on stdout keeps stdout to itself.
		output = "text"
		if o.flame.path == "" {
			topts.Stdout = stderr
		}
	}
	if output == "json" {
		topts.Output = trace.OutputJSON
	}
	if o.command != "" {
		// Structured output keeps stdout to itself: the command's lines
		// would corrupt the JSON, gzip or HTML a reader parses.
		cmdOut := os.Stdout
		if output == "json" || o.flame != nil && o.flame.path == "" {
			cmdOut = os.Stderr
		}
		c, err := commandOf(o.command, cmdOut)
		if err != nil {
			return err
		}
		copts.Executable, topts.Command = c.Path, c
	}
	prog, err := compile(copts)
	if err != nil {
		return err
	}
	if o.dump != "" {
		return prog.Dump(cmd.OutOrStdout(), trace.Stage(o.dump))
	}
	if o.flame != nil && !prog.CountsStacks() {
		return noStacksError(o.output)
	}
	goMaps := o.goMaps && prog.GoFunctions() && o.flame == nil
	if goMaps {
		topts.Stdout = io.Discard
	}
	var events *eventCounter
	if prog.SendsEvents() {
		events = &eventCounter{out: newEventWriter(topts.Stdout, output), perName: make(map[string]uint64)}
		topts.OnEvent = events.event
		stop := make(chan struct{})
		defer close(stop)
		events.endAt(ctx, stop)
	}
	t, err := trace.Start(prog, topts)
	if err != nil {
		return err
	}
	defer t.Close()
	fmt.Fprintln(stderr, tracingLine(prog, o.classic))
	if err := t.Run(ctx); err != nil {
		return err
	}
	if events != nil {
		if err := events.summary(stderr, t, prog); err != nil {
			return err
		}
	}
	if goMaps {
		if err := writeGoMaps(cmd.OutOrStdout(), stderr, t, prog, output, append(append([]string(nil), o.countBy...), o.by...)); err != nil {
			return err
		}
	}
	if output == "json" && prog.CountsStacks() {
		if err := writeStacksJSON(topts.Stdout, t); err != nil {
			return err
		}
	}
	if o.flame != nil {
		if err := writeFlame(cmd.OutOrStdout(), stderr, t, o.flame, o.flameTitle); err != nil {
			return err
		}
	}
	return commandStatus(t, stderr)
}

// unwindOf returns the trace.Unwind --unwind names ("": the default).
func unwindOf(name string) (trace.Unwind, error) {
	for _, u := range []trace.Unwind{trace.UnwindCFIBPF, trace.UnwindFP, trace.UnwindCFI} {
		if name == u.String() || name == "" && u == trace.UnwindCFIBPF {
			return u, nil
		}
	}
	return 0, fmt.Errorf("--unwind %q: want cfi-bpf, fp or cfi", name)
}

// commandOf returns -c's command, not started, with usdtkit's stdin and
// stderr and the given stdout.
func commandOf(command string, stdout *os.File) (*exec.Cmd, error) {
	argv, err := launch.SplitCommand(command)
	if err != nil {
		return nil, fmt.Errorf("-c: %w", err)
	}
	if len(argv) == 0 {
		return nil, fmt.Errorf("-c: an empty command (leave -c out to trace every process that maps the file)")
	}
	path, err := launch.LookPath(argv[0])
	if err != nil {
		return nil, fmt.Errorf("-c: %w", err)
	}
	c := exec.Command(path, argv[1:]...)
	c.Stdin, c.Stdout, c.Stderr = os.Stdin, stdout, os.Stderr
	return c, nil
}

// commandStatus says on stderr when the trace ended -c's command, and
// returns its non-zero exit status as usdtkit's.
func commandStatus(t *trace.Tracer, stderr io.Writer) error {
	state, ended := t.CommandState()
	if state == nil && !ended {
		return nil
	}
	if ended {
		fmt.Fprintf(stderr, "usdtkit: ended the command (%v).\n", state)
	} else if code := launch.ExitCode(state); code != 0 {
		return exitStatus(code)
	}
	return nil
}
