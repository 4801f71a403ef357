package trace

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"time"

	"github.com/usdtkit/usdtkit/internal/lang/btgen"
	"github.com/usdtkit/usdtkit/internal/lang/btprint"
	"github.com/usdtkit/usdtkit/internal/lang/btrun"
	"github.com/usdtkit/usdtkit/internal/proc/procfs"
	"github.com/usdtkit/usdtkit/internal/proc/target"
)

// ErrChanged is wrapped by Start's error when an object is no longer the
// file Compile read (replaced or renamed since): compile again.
var ErrChanged = procfs.ErrChanged

// Output is how a program's output is printed.
type Output int

const (
	// OutputText is bpftrace's text.
	OutputText Output = iota
	// OutputJSON is bpftrace's -f json: one JSON object per line.
	OutputJSON
)

// Options tune Start. The zero value traces every process that maps the
// program's objects and prints text to os.Stdout.
type Options struct {
	// PID restricts the probes to one process; Run also ends when it
	// exits. It may be a process started stopped (see Start).
	PID int
	// PIDs restrict the probes to these processes (with PID, when not
	// 0); Run also ends when all of them have exited. A site Compile
	// found in a process is then attached for that process only. None:
	// every process that maps the objects.
	PIDs []int
	// OnEvent receives the events of a program of CompileEvents, in the
	// order they were sent, on Run's goroutine. The Event and its Args
	// are reused after the call returns (Event.Clone keeps one). An error
	// ends Run, which returns it. Required for such a program, whose Run
	// writes to Stdout only what was lost (a full ring buffer), at the
	// end; Tracer.Lost counts it too.
	OnEvent func(*Event) error
	// Command, when not nil, is started by Start stopped before its first
	// instruction (its Stdin, Stdout and Stderr as the caller set them),
	// traced as one more of PIDs and resumed once every probe is
	// attached: nothing it does escapes the trace. Compile against it
	// with CompileOptions.Executable set to its Path. Run ends when it
	// (and every other of PIDs) has exited; when Run ends first (ctx,
	// exit(), an error) it ends the command: SIGTERM, then SIGKILL after
	// CommandGrace. Close kills it if it still runs. Command must not
	// have been started; Start sets its SysProcAttr.Ptrace and
	// Pdeathsig.
	Command *exec.Cmd
	// CommandGrace is how long Run waits for Command to exit after
	// SIGTERM; 0 means DefaultCommandGrace.
	CommandGrace time.Duration
	// Output selects text or JSON.
	Output Output
	// Stdout receives printf lines, print() output and the maps at exit;
	// nil means os.Stdout.
	Stdout io.Writer
	// Stderr receives the errors of cat() (a file it cannot read), as
	// bpftrace prints them; nil means os.Stderr.
	Stderr io.Writer
	// CatBytesMax is the most bytes cat() prints of a file, as
	// bpftrace's BPFTRACE_CAT_BYTES_MAX; 0 means 10240, bpftrace's
	// default.
	CatBytesMax int
	// Classic forces classic uprobe links, one per site; by default one
	// uprobe_multi link per object and kind is used where the kernel has
	// it (6.6+).
	Classic bool
	// Warn, when not nil, is called once by Start with a *RefusedError
	// when the kernel refused some sites of the program's probes; Start
	// attaches the others. (When it refuses every site, Start returns
	// the *RefusedError.)
	Warn func(error)
	// PrintMaps, when not nil, is read by Run: each value received (a
	// SIGUSR1 the caller relays with signal.Notify) prints every map to
	// Stdout as bpftrace prints them on SIGUSR1, and the trace goes on.
	PrintMaps <-chan os.Signal
	// Attached makes Run print bpftrace's "Attaching N probes..." line
	// (its JSON form with OutputJSON) to Stdout before the BEGIN blocks
	// run, N as Program.AttachedProbes counts; bpftrace's -q leaves it
	// out.
	Attached bool
}

// Tracer is a started program: loaded and attached. Run it, then Close
// it. A Tracer is not safe for concurrent use; Close must not race with
// Run.
type Tracer struct {
	r   *btrun.Runner
	cmd *command
}

// Start opens the program's objects again, checks each is the file
// Compile read (same device and inode), loads the program and attaches
// it; the files are closed before Start returns (the kernel holds them
// once attached). It does not run BEGIN blocks: Run does. A process
// started stopped may be resumed once Start returns, and every probe of
// it is then traced from its first instruction.
//
// Errors wrap ebpf.ErrNotSupported when the kernel lacks what the program
// needs, os.ErrPermission without the privileges (root, or CAP_BPF and
// CAP_PERFMON), os.ErrNotExist when an object or the process is gone, and
// ErrChanged when an object is another file than the one Compile read.
// A site the kernel refuses to probe is skipped with one warning for the
// program (Options.Warn); when it refuses every site, the error is a
// *RefusedError listing them.
func Start(prog *Program, opts *Options) (*Tracer, error) {
	return start(prog, opts, true)
}

// DryRun loads and attaches the program as Start does, then detaches it,
// as bpftrace's --dry-run: no block runs, nothing is printed, and
// Options.Command is started stopped and killed before its first
// instruction. It returns Start's errors: nil means the kernel took every
// program and attached them.
func DryRun(prog *Program, opts *Options) error {
	t, err := start(prog, opts, false)
	if err != nil {
		return err
	}
	return t.Close()
}

// start is Start; resume false leaves Options.Command stopped.
func start(prog *Program, opts *Options, resume bool) (*Tracer, error) {
	if prog == nil || prog.gen == nil {
		return nil, fmt.Errorf("start: no program (use Compile)")
	}
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Output != OutputText && o.Output != OutputJSON {
		return nil, fmt.Errorf("start: field Output is %d, want OutputText or OutputJSON", o.Output)
	}
	pids, err := pidList("start: Options", o.PID, o.PIDs)
	if err != nil {
		return nil, err
	}
	if pids[0] == 0 {
		pids = nil
	}
	if len(prog.gen.Events) > 0 && o.OnEvent == nil {
		return nil, fmt.Errorf("start: the program sends events: field OnEvent is nil")
	}
	files := make(map[object]*os.File)
	defer func() {
		for _, f := range files {
			f.Close()
		}
	}()
	gen := *prog.gen
	gen.Blocks = append([]btgen.Block(nil), prog.gen.Blocks...)
	for i := range gen.Blocks {
		b := &gen.Blocks[i]
		if len(b.Sites) == 0 {
			continue
		}
		if i >= len(prog.files) || len(prog.files[i]) != len(b.Sites) {
			return nil, fmt.Errorf("start: block %d: sites and objects differ in number", i)
		}
		b.Sites = append([]btgen.Site(nil), b.Sites...)
		for j := range b.Sites {
			obj := prog.files[i][j]
			f := files[obj]
			if f == nil {
				var err error
				f, err = target.Reopen(obj.path, obj.pid, procfs.FileID{Dev: obj.dev, Inode: obj.inode})
				if err != nil {
					return nil, fmt.Errorf("start %s: %w", b.Sites[j].Probe, err)
				}
				files[obj] = f
			}
			b.Sites[j].Path, b.Sites[j].Object = procfs.FDPath(f), obj.path
			if len(pids) > 0 {
				// Found in one of the traced processes: traced there.
				b.Sites[j].PID = obj.pid
			}
		}
	}
	out := o.Stdout
	if out == nil {
		out = os.Stdout
	}
	format := btprint.OutputText
	if o.Output == OutputJSON {
		format = btprint.OutputJSON
	}
	bo := &btrun.Options{PIDs: pids, Out: out, Output: format, Classic: o.Classic, PrintMaps: o.PrintMaps, Stderr: o.Stderr, CatBytesMax: o.CatBytesMax}
	if o.Attached {
		bo.Attached = prog.AttachedProbes()
	}
	if o.Warn != nil {
		bo.Warn = func(err error) { o.Warn(refusedError(err)) }
	}
	if o.OnEvent != nil {
		bo.OnEvent = newEventDecoder(prog, o.OnEvent).record
	}
	var cmd *command
	if o.Command != nil {
		if cmd, err = startCommand(o.Command, o.CommandGrace); err != nil {
			return nil, err
		}
		bo.PIDs = append(bo.PIDs, cmd.pid())
		bo.CPID = cmd.pid()
	}
	r, err := btrun.Start(&gen, bo)
	if err != nil {
		if cmd != nil {
			cmd.kill()
		}
		return nil, refusedError(err)
	}
	t := &Tracer{r: r, cmd: cmd}
	if cmd != nil && resume {
		if err := cmd.resume(); err != nil {
			t.Close()
			return nil, err
		}
	}
	return t, nil
}

// Run runs the BEGIN blocks, then prints what the program prints until
// it calls exit(), the process of Options.PID exits, or ctx is done; then
// it runs the END blocks, detaches, prints the maps as bpftrace prints
// them at exit and what was lost, and returns. It returns the first
// error writing to Options.Stdout or reading the kernel's maps.
//
// With Options.Command, Run also ends when the command exits, and ends
// the command if Run ends first (see Options.Command); CommandState then
// says how it ended.
func (t *Tracer) Run(ctx context.Context) error {
	if t.r == nil {
		return fmt.Errorf("run: tracer closed")
	}
	err := t.r.Run(ctx)
	if t.cmd != nil {
		t.cmd.end()
	}
	return err
}

// Lost returns how many records the ring buffer refused (events, printf
// lines: it was full) and how many map updates failed (a map was full).
// Run prints them at the end too.
func (t *Tracer) Lost() (records, updates uint64, err error) {
	if t.r == nil {
		return 0, 0, fmt.Errorf("lost: tracer closed")
	}
	return t.r.Lost()
}

// Close detaches and releases everything, and kills Options.Command if it
// still runs; a second call returns nil.
func (t *Tracer) Close() error {
	if t.cmd != nil {
		t.cmd.kill()
	}
	if t.r == nil {
		return nil
	}
	err := t.r.Close()
	t.r = nil
	return err
}
