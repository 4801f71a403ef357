package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"os/signal"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/usdtkit/usdtkit/internal/proc/launch"
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
	case len(args) >= 1 && args[0] == "-":
		// bpftrace's program file "-"; "stdin" is the name bpftrace's
		// errors give it too.
		b, err := trace.ReadProgramFrom(cmd.InOrStdin())
		if err != nil {
			return "", "", false, fmt.Errorf("program on stdin: %w", err)
		}
		name, src, o.params = "stdin", b, args[1:]
	case len(args) >= 1 && args[0] != "" && !strings.Contains(args[0], ":"):
		// Every PROBE has a colon: a first argument without one is a
		// program file, .bt or not, as bpftrace's FILENAME.
		b, err := trace.ReadProgram(args[0])
		if err != nil {
			return "", "", false, programFileError(args[0], err)
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
	output := ""
	if fl.Changed("output") {
		output = o.output
	}
	out, err := parseOutput(output, o.format)
	if err != nil {
		return err
	}
	o.out = out
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
	strLen, err := envStrLen(os.Getenv)
	if err != nil {
		return err
	}
	return runSource(cmd, o, func(copts *trace.CompileOptions) (*trace.Program, error) {
		copts.StrLen = strLen
		return trace.Compile(name, src, copts)
	})
}

// programFileError is the error for a program file that cannot be read.
// One that cannot be opened is bpftrace's line, "ERROR: failed to open
// file 'NAME': " and C's strerror text, which scripts look for.
func programFileError(name string, err error) error {
	var errno syscall.Errno
	if !errors.As(err, &errno) {
		return fmt.Errorf("program file: %w", err)
	}
	text := errno.Error()
	if text != "" {
		// Go's texts are C's with a lower-case first letter.
		text = strings.ToUpper(text[:1]) + text[1:]
	}
	msg := fmt.Sprintf("ERROR: failed to open file '%s': %s", name, text)
	if errors.Is(err, fs.ErrNotExist) && !strings.HasSuffix(name, ".bt") {
		msg += " (a PROBE has colons: usdt:PATH:PROVIDER:NAME, uprobe:PATH:FUNC)"
	}
	return &bpftraceError{msg: msg, err: err}
}

// envStrLen reads bpftrace's variables for the bytes str() reads:
// BPFTRACE_MAX_STRLEN (bpftrace 0.2x), else BPFTRACE_STRLEN (0.17); 0
// when neither is set.
func envStrLen(getenv func(string) string) (int, error) {
	for _, name := range []string{"BPFTRACE_MAX_STRLEN", "BPFTRACE_STRLEN"} {
		v := getenv(name)
		if v == "" {
			continue
		}
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > trace.MaxProgramStrLen {
			return 0, fmt.Errorf("%s=%s: want the bytes str() reads, the NUL included, from 1 to %d", name, v, trace.MaxProgramStrLen)
		}
		return n, nil
	}
	return 0, nil
}

// envCatBytesMax reads BPFTRACE_CAT_BYTES_MAX, the most bytes cat()
// prints of a file; 0 when it is not set.
func envCatBytesMax(getenv func(string) string) (int, error) {
	v := getenv("BPFTRACE_CAT_BYTES_MAX")
	if v == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		return 0, fmt.Errorf("BPFTRACE_CAT_BYTES_MAX=%s: want the most bytes cat() prints of a file, 1 or more", v)
	}
	return n, nil
}

// runSource is runProgram once the flags are checked: compile compiles
// the program given where its probes are looked for (-p's processes, or
// -c's executable). A program that sends events has them printed.
func runSource(cmd *cobra.Command, o *traceOptions, compile func(*trace.CompileOptions) (*trace.Program, error)) (err error) {
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
	topts := &trace.Options{PIDs: o.pids, Classic: o.classic, CommandGrace: commandGrace, Warn: warn, Stderr: stderr}
	if topts.CatBytesMax, err = envCatBytesMax(os.Getenv); err != nil {
		return err
	}
	output, fo := o.out.format, o.out.flame
	if output == "json" {
		topts.Output = trace.OutputJSON
	}
	if o.command != "" {
		// Structured output on stdout keeps stdout to itself: the
		// command's lines would corrupt the JSON, gzip or HTML a reader
		// parses. (-o FILE does not take them, as bpftrace's.)
		cmdOut := os.Stdout
		if o.out.file == "" && (output == "json" || fo != nil && fo.path == "") {
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
	stdout := cmd.OutOrStdout()
	if o.out.file != "" {
		f, err := os.Create(o.out.file)
		if err != nil {
			return fmt.Errorf("-o: %w", err)
		}
		defer func() {
			if cerr := f.Close(); cerr != nil && err == nil {
				err = fmt.Errorf("-o: %w", cerr)
			}
		}()
		stdout = f
	}
	topts.Stdout = stdout
	if fo != nil && fo.path == "" {
		// A flame graph on stdout keeps stdout to itself.
		topts.Stdout = stderr
	}
	if o.dump != "" {
		return prog.Dump(stdout, trace.Stage(o.dump))
	}
	if fo != nil && !prog.CountsStacks() {
		return noStacksError(o.out.flag)
	}
	var events *eventCounter
	if prog.SendsEvents() {
		events = &eventCounter{out: newEventWriter(topts.Stdout, output), perName: make(map[string]uint64)}
		topts.OnEvent = events.event
		stop := make(chan struct{})
		defer close(stop)
		events.endAt(ctx, stop)
	}
	if o.dryRun {
		if err := trace.DryRun(prog, topts); err != nil {
			return err
		}
		fmt.Fprintf(stderr, "Dry run: %d probes at %d sites loaded and attached; nothing ran.\n", prog.Probes(), prog.Sites())
		return nil
	}
	// SIGUSR1 prints the maps and the trace goes on, as bpftrace's.
	usr1 := make(chan os.Signal, 1)
	signal.Notify(usr1, syscall.SIGUSR1)
	defer signal.Stop(usr1)
	topts.PrintMaps = usr1
	// bpftrace's "Attaching N probes..." goes where the trace prints
	// (stderr when a flame graph takes stdout), in -f's format.
	topts.Attached = !o.quiet
	t, err := trace.Start(prog, topts)
	if err != nil {
		return err
	}
	defer t.Close()
	if o.verbose {
		fmt.Fprintln(stderr, tracingLine(prog, o.classic))
	}
	if err := t.Run(ctx); err != nil {
		return err
	}
	if events != nil {
		if err := events.summary(stderr, t, prog); err != nil {
			return err
		}
	}
	if output == "json" && prog.CountsStacks() {
		if err := writeStacksJSON(topts.Stdout, t); err != nil {
			return err
		}
	}
	if fo != nil {
		if err := writeFlame(stdout, stderr, t, fo, o.flameTitle); err != nil {
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
