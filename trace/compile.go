package trace

import (
	"debug/elf"
	"errors"
	"fmt"
	"slices"

	"github.com/cilium/ebpf"

	"github.com/usdtkit/usdtkit/internal/bpf/argread"
	"github.com/usdtkit/usdtkit/internal/bpf/features"
	"github.com/usdtkit/usdtkit/internal/bpf/usdtargs"
	"github.com/usdtkit/usdtkit/internal/elf/symtab"
	"github.com/usdtkit/usdtkit/internal/lang/btgen"
	"github.com/usdtkit/usdtkit/internal/lang/btlang"
	"github.com/usdtkit/usdtkit/internal/proc/procfs"
	"github.com/usdtkit/usdtkit/internal/proc/target"
	"github.com/usdtkit/usdtkit/sdt"
	"github.com/usdtkit/usdtkit/uprobe"
)

// CompileOptions say where Compile looks for the program's probes. The
// zero value resolves probes in the files their paths name.
type CompileOptions struct {
	// PID is the process whose mapped objects usdt and uprobe probes are
	// looked for in; a probe with an empty path (usdt::PROVIDER:NAME)
	// means every object of it. 0: files only.
	PID int
	// PIDs are processes to look in as PID, each in turn: a probe's sites
	// are those of every one of them (PID, when not 0, is one more).
	PIDs []int
	// Executable is the file an empty path means without PID or PIDs: the
	// executable of a command started stopped (usdtkit trace -c), whose
	// libraries are not mapped yet.
	Executable string
	// Warn, when not nil, is called with what the program cannot read as
	// written: objects of the process skipped, damaged notes, USDT
	// arguments BPF cannot read (they read as 0), what a Go function's
	// DWARF does not say, Go assembly functions skipped.
	Warn func(error)
	// FramePointerStacks makes printf'd ustack the kernel's frame-pointer
	// walk, as bpftrace, instead of a copy of the stack unwound with the
	// objects' CFI (see docs/language.md).
	FramePointerStacks bool
	// FaultingStrings reads user strings as bpftrace does, with
	// bpf_probe_read_user_str in programs that may not sleep, even where
	// the kernel has bpf_copy_from_user_str (Linux 6.12+): a string in a
	// page the process has not touched yet then reads as "" (a fault).
	// By default such strings are read, faulting the page in (see
	// docs/language.md).
	FaultingStrings bool
	// Unwind is how ustack map keys are captured: UnwindCFIBPF (the
	// zero value), UnwindFP or UnwindCFI. printf'd stacks are captured
	// as FramePointerStacks says, whatever Unwind is.
	Unwind Unwind
	// Params are the program's positional parameters, $1, $2… and $#
	// (bpftrace's arguments after the program).
	Params []string
	// Unsafe allows what changes the traced processes, as bpftrace's
	// --unsafe: signal(), which sends a signal to the process that hit
	// the probe.
	Unsafe bool
	// StrLen is the bytes str(x) reads, the NUL included, as bpftrace's
	// BPFTRACE_STRLEN (BPFTRACE_MAX_STRLEN in bpftrace 0.2x): 0 means 64,
	// the most is MaxProgramStrLen; str(x, n) reads at most that too.
	StrLen int
}

// MaxProgramStrLen is the most CompileOptions.StrLen may be.
const MaxProgramStrLen = 1024

// Unwind is how the stacks of map keys (@[ustack] = count()) are
// captured.
type Unwind int

const (
	// UnwindCFIBPF, the default, walks each hit's stack in the BPF
	// program with the call frame information (.eh_frame, .debug_frame)
	// of the traced processes' objects, compiled into tables that Start
	// puts in BPF maps before attaching: equal stacks are counted in the
	// kernel, as with UnwindFP, and stacks keep their frames through
	// code without frame pointers, as with UnwindCFI. The processes of
	// Options.PIDs (and Command) have tables; the stacks of other
	// processes, and of objects without CFI, are walked by frame
	// pointer, as with UnwindFP. Needs bpf_loop (Linux 5.17) and x86-64:
	// elsewhere Compile uses UnwindFP, and says so through
	// CompileOptions.Warn when the kernel lacks bpf_loop.
	UnwindCFIBPF Unwind = iota
	// UnwindFP keys a map by the frame-pointer walk (bpf_get_stackid
	// off x86-64), as bpftrace: equal stacks are counted in the kernel,
	// and a stack ends at the first function built without frame
	// pointers (Debian's C library, most -O2 C code).
	UnwindFP
	// UnwindCFI captures each hit's stack as a printf'd stack is, a
	// copy of the top of the user stack with the registers, sent in a
	// ring buffer record and unwound in user space with each object's
	// CFI, where it is counted: stacks keep their frames through code
	// without frame pointers, in every process. Each hit costs a copy
	// of 8 KiB of stack into the ring and an unwinding in user space; a
	// hit the full ring refuses is counted as a lost event. Only count()
	// and sum() maps with one ustack in their key are supported, and not
	// delete() of them: Compile refuses the rest (CompileError).
	UnwindCFI
)

// String returns "cfi-bpf", "fp" or "cfi", the names of usdtkit trace
// --unwind.
func (u Unwind) String() string {
	switch u {
	case UnwindCFIBPF:
		return "cfi-bpf"
	case UnwindFP:
		return "fp"
	case UnwindCFI:
		return "cfi"
	}
	return fmt.Sprintf("Unwind(%d)", int(u))
}

// Program is a compiled program: the generated BPF and, per probe block,
// the sites its probes resolved to. It is plain data holding no files:
// Start opens each object again and checks it is the one Compile read.
// A Program is safe for concurrent use and may be started several times.
type Program struct {
	gen *btgen.Program
	// files[b][i] is the object of site i of block b.
	files  [][]object
	probes int
	// btProbes is AttachedProbes.
	btProbes int
	// names are the short names and paths of the probes, by full name
	// (btgen.Site.Probe).
	names map[string]probeName
	// goLayouts are where the values of Go functions' events are, by
	// full name.
	goLayouts map[string]*goLayout
	// ast is the checked program (Dump).
	ast *btlang.Program
}

// siteKey is a place a program attaches to.
type siteKey struct {
	obj object
	off uint64
	ret bool
}

// object is a file as sdt.List or uprobe.Functions found it.
type object struct {
	path       string
	pid        int
	dev, inode uint64
}

// Probes returns how many probes (usdt probes, functions and profile
// probes) the program attaches to, counting each name once.
func (p *Program) Probes() int { return p.probes }

// AttachedProbes returns how many probes bpftrace 0.17 says it attaches
// for this program ("Attaching N probes..."): one per block and attach
// point, each location of a USDT probe counted, a function once however
// many sites it has, and BEGIN, END, interval and profile probes.
func (p *Program) AttachedProbes() int { return p.btProbes }

// Sites returns how many places in objects the program attaches to.
func (p *Program) Sites() int {
	n := 0
	for _, f := range p.files {
		n += len(f)
	}
	return n
}

// Compile parses and checks src, a program in bpftrace's language (name
// is its file name in errors), resolves every probe of every block to its
// sites, and generates BPF for it. Errors in the program, a probe that
// matches nothing among them, are CompileErrors ("file:line:col:
// sentence"); one about a probe's sites has the cause in its Err. Errors
// listing the objects (a process gone, a file
// that is not ELF, permissions) are returned wrapped behind the probe's
// position, for errors.Is.
func Compile(name, src string, opts *CompileOptions) (*Program, error) {
	return compile(&compilation{name: name, src: src, opts: opts})
}

// compile runs the passes on c, whose name, src or prog, opts, events,
// fields and extraCheck say what to compile.
func compile(c *compilation) (*Program, error) {
	opts := c.opts
	pids, err := compilePIDs(opts)
	if err != nil {
		return nil, err
	}
	r := &resolver{pids: pids, names: make(map[string]probeName), sites: make(map[*btlang.Probe]*resolved), causes: make(map[btlang.Pos]error),
		usdtLists: make(map[listKey]usdtList), symbolLists: make(map[listKey]symbolList)}
	if opts != nil {
		r.opts = *opts
	}
	r.commandLibs = commandLibs{exe: r.opts.Executable, warn: r.opts.Warn}
	defer r.closeGo()
	c.r = r
	for _, pass := range passes {
		if err := pass.run(c); err != nil {
			return nil, err
		}
	}
	return c.out, nil
}

// compilation is what Compile's passes read and write.
type compilation struct {
	// name is the source's file name; src the source, or prog the
	// program when it was built as a tree (the flags), not parsed.
	name, src string
	opts      *CompileOptions
	// events are, per block, the events it sends (see
	// btgen.Options.Events); fields the field paths of Go functions
	// they carry (EventProbe.Fields).
	events []*btgen.Event
	fields [][]string
	// extraCheck checks the checked program further.
	extraCheck func(*btlang.Program) error
	r          *resolver
	prog       *btlang.Program
	args       probeTable
	plan       *btgen.Plan // the support pass's result, which generate builds
	out        *Program
}

// passes are Compile's stages in the order they run; each reads what the
// ones before it left in the compilation.
var passes = []struct {
	name string
	run  func(*compilation) error
}{
	// parse: the source to an AST (btlang).
	{"parse", (*compilation).parse},
	// resolve: every usdt and uprobe probe to its sites and arguments;
	// all the file I/O of compiling (sdt, uprobe, Go binaries).
	{"resolve", (*compilation).resolve},
	// check: types and bpftrace's rules (btlang), on the arguments the
	// resolve pass found; probes that match nothing are skipped when
	// others match.
	{"check", (*compilation).check},
	// support: what the checked program asks that cannot be generated
	// (btgen.Support), on the sites the resolve pass found.
	{"support", (*compilation).support},
	// generate: BPF for the checked program and its sites (btgen).
	{"generate", (*compilation).generate},
}

func (c *compilation) parse() error {
	if c.prog != nil {
		// Built as a tree.
		return nil
	}
	prog, err := btlang.ParseWith(c.name, []byte(c.src), &btlang.ParseOptions{Params: c.r.opts.Params})
	if err != nil {
		return c.programErrors(err)
	}
	c.prog = prog
	return nil
}

func (c *compilation) resolve() error {
	c.r.prescan(c.prog, c.events, c.fields)
	c.r.noteFunctionNames(c.prog)
	c.args = c.r.resolveAll(c.prog)
	return c.r.fatal
}

func (c *compilation) check() error {
	copts := &btlang.CheckOptions{Probes: c.args, Unsafe: c.r.opts.Unsafe, StrLen: c.r.opts.StrLen}
	err := btlang.Check(c.prog, copts)
	if err != nil && c.r.skipUnmatched(c.prog, err) {
		// The checker fills in the program (map types, prog.Maps) only
		// when it finds no error: check what is left.
		err = btlang.Check(c.prog, copts)
	}
	if err == nil && c.extraCheck != nil {
		err = c.extraCheck(c.prog)
	}
	if err != nil {
		return c.programErrors(err)
	}
	return nil
}

// programErrors returns a parse or check error as CompileErrors, each
// with the cause the resolver recorded at its position.
func (c *compilation) programErrors(err error) error {
	err = compileErrors(err)
	var list CompileErrors
	if errors.As(err, &list) {
		for _, e := range list {
			e.Err = c.r.causes[btlang.Pos{File: e.File, Line: e.Line, Col: e.Col}]
		}
	}
	return err
}

// support lays out the sites of each block and asks btgen.Support whether
// the program can be generated for them.
func (c *compilation) support() error {
	r, prog, opts, events := c.r, c.prog, c.opts, c.events
	out := &Program{names: r.names, goLayouts: r.goLayouts, ast: prog}
	var all [][]btgen.Site
	names := make(map[string]bool)
	for _, b := range prog.Blocks {
		var sites []btgen.Site
		var files []object
		seen := make(map[siteKey]bool)
		// bpftrace 0.17 counts a probe per block and attach point:
		// each location of a USDT probe, each function (not its
		// sites), and BEGIN, END, interval and profile probes.
		funcs := make(map[string]bool)
		for _, p := range b.Probes {
			if p.Kind == btlang.ProbeProfile {
				names[p.String()] = true
			}
			res := r.sites[p]
			if res == nil {
				if p.Kind != btlang.ProbeUSDT && p.Kind != btlang.ProbeUprobe && p.Kind != btlang.ProbeUretprobe {
					out.btProbes++
				}
				continue
			}
			for i, s := range res.sites {
				// Two probes of a block naming one site (a glob and a
				// name, aliases) attach once: a hit runs the block once.
				k := siteKey{res.files[i], s.Offset, s.Return}
				if seen[k] {
					continue
				}
				seen[k] = true
				sites = append(sites, s)
				files = append(files, res.files[i])
				names[s.Probe] = true
				if p.Kind == btlang.ProbeUSDT {
					out.btProbes++
				} else if !funcs[s.Probe] {
					funcs[s.Probe] = true
					out.btProbes++
				}
			}
		}
		all = append(all, sites)
		out.files = append(out.files, files)
	}
	out.probes = len(names)
	gopts := &btgen.Options{Machine: r.machine, Sites: all, Events: events}
	if opts != nil && opts.FramePointerStacks {
		gopts.StackCopy = -1
	}
	unwind := UnwindCFIBPF
	if opts != nil {
		unwind = opts.Unwind
	}
	switch unwind {
	case UnwindCFIBPF:
		if err := features.HaveBPFLoop(); errors.Is(err, ebpf.ErrNotSupported) && hasStackKeys(prog) {
			// Without the privileges to find out, the program is
			// generated for a kernel that has it (--dump).
			gopts.StackKeys = btgen.StackKeysFP
			if r.opts.Warn != nil {
				r.opts.Warn(fmt.Errorf("ustack map keys are walked with frame pointers: the walk with call frame information needs bpf_loop (Linux 5.17+): %w", err))
			}
		}
	case UnwindFP:
		gopts.StackKeys = btgen.StackKeysFP
	case UnwindCFI:
		gopts.StackKeys = btgen.StackKeysCopy
	default:
		return fmt.Errorf("compile: field Unwind is %v, want UnwindCFIBPF, UnwindFP or UnwindCFI", unwind)
	}
	if events != nil {
		// Room for bursts of events between reads.
		gopts.RingSize = argread.DefaultRingSize
	}
	c.out = out
	var err error
	c.plan, err = btgen.Support(prog, gopts)
	return compileErrors(err)
}

func (c *compilation) generate() error {
	opts, out := c.opts, c.out
	var err error
	out.gen, err = c.plan.Generate()
	if err != nil {
		return compileErrors(err)
	}
	if (opts == nil || !opts.FaultingStrings) && slices.ContainsFunc(out.gen.Blocks, func(b btgen.Block) bool { return b.CouldSleep }) {
		// The program reads strings: with the kfunc they are read
		// faulting pages in. Without it (or without the privileges to
		// find out), they are read as bpftrace reads them.
		if id, err := features.SleepableCopyStr(); err == nil {
			if out.gen, err = c.plan.WithCopyStr(id).Generate(); err != nil {
				return compileErrors(err)
			}
		}
	}
	c.out = out
	return nil
}

// hasStackKeys reports whether a map of prog has a ustack key.
func hasStackKeys(prog *btlang.Program) bool {
	for _, m := range prog.Maps {
		for _, k := range m.Keys {
			if k.Kind == btlang.KindStack {
				return true
			}
		}
	}
	return false
}

// probeTable is what the resolve pass found of each probe's arguments:
// the check pass's btlang.ProbeInfo, so that checking reads no file.
type probeTable struct {
	r    *resolver
	args map[*btlang.Probe]probeArgs
}

type probeArgs struct {
	args btlang.ProbeArgs
	err  error
}

// Args returns what the resolve pass found of p; a probe skipUnmatched
// left out has any arguments.
func (t probeTable) Args(p *btlang.Probe) (btlang.ProbeArgs, error) {
	if t.r.skipped[p] {
		return btlang.ProbeArgs{Count: -1}, nil
	}
	a, ok := t.args[p]
	if !ok {
		return btlang.ProbeArgs{}, fmt.Errorf("internal error: probe %s was not resolved", p)
	}
	return a.args, a.err
}

// resolveAll resolves each usdt, uprobe and uretprobe probe of prog, in
// source order, once.
func (r *resolver) resolveAll(prog *btlang.Program) probeTable {
	t := probeTable{r: r, args: make(map[*btlang.Probe]probeArgs)}
	for _, b := range prog.Blocks {
		for _, p := range b.Probes {
			switch p.Kind {
			case btlang.ProbeUSDT, btlang.ProbeUprobe, btlang.ProbeUretprobe:
			default:
				continue
			}
			if _, ok := t.args[p]; !ok {
				a, err := r.resolveProbe(p)
				t.args[p] = probeArgs{a, err}
			}
		}
	}
	return t
}

// skipUnmatched marks the usdt and uprobe attach points of prog that
// match nothing as skipped, with a warning each, when err (Check's) holds
// no other error and another such attach point has sites: a tool that
// names a function some builds lack still runs, as in bpftrace (0.17
// skips them silently, later versions warn). A skipped attach point has
// no sites and any arguments; its block stays, so the maps it writes
// exist (empty) for the other blocks. It reports whether it did, and the
// program must then be checked again; when nothing matches, the errors
// stand.
func (r *resolver) skipUnmatched(prog *btlang.Program, err error) bool {
	var list btlang.ErrorList
	if !errors.As(err, &list) {
		return false
	}
	for _, e := range list {
		if !errors.Is(r.causes[e.Pos], ErrNoMatch) {
			return false
		}
	}
	matched := slices.ContainsFunc(prog.Blocks, func(b *btlang.ProbeBlock) bool {
		return slices.ContainsFunc(b.Probes, func(p *btlang.Probe) bool { return r.sites[p] != nil })
	})
	if !matched {
		return false
	}
	for _, b := range prog.Blocks {
		for _, p := range b.Probes {
			if r.sites[p] != nil || !errors.Is(r.causes[p.At], ErrNoMatch) {
				continue
			}
			if r.skipped == nil {
				r.skipped = make(map[*btlang.Probe]bool)
			}
			r.skipped[p] = true
			if r.opts.Warn != nil {
				r.opts.Warn(fmt.Errorf("%s: %s: matches nothing; skipped", p.At, p))
			}
		}
	}
	return true
}

// resolver answers btlang's questions about probes, resolving each to
// its sites once.
type resolver struct {
	// pids are the processes to look in; [0] for files only.
	pids []int
	// names are the probes' names for events, by full name.
	names   map[string]probeName
	opts    CompileOptions
	sites   map[*btlang.Probe]*resolved
	machine elf.Machine
	fatal   error
	// causes are the errors of probes, by position, for CompileError.Err.
	causes map[btlang.Pos]error
	// skipped are the attach points that match nothing, left out (see
	// skipUnmatched).
	skipped map[*btlang.Probe]bool
	symbols symtab.Resolvers
	// gobins are the Go binaries read, by object.
	gobins map[object]goBinary
	// fieldPaths are the args.NAME.FIELD paths the program reads.
	fieldPaths []string
	// events are, for the probes of blocks that send events, what the
	// events of Go functions carry (see goEventLayout).
	events    map[*btlang.Probe]*goEventSpec
	goLayouts map[string]*goLayout
	// usdtLists and symbolLists are the listings done (see listUSDT and
	// listFunctions).
	usdtLists   map[listKey]usdtList
	symbolLists map[listKey]symbolList
	// funcNames are, per path, the functions the program names in it
	// when it names them all by name (see noteFunctionNames).
	funcNames map[string][]string
	// commandLibs resolves library short names for a command started
	// stopped.
	commandLibs commandLibs
}

type resolved struct {
	sites []btgen.Site
	files []object
}

// ErrNoMatch is the cause (CompileError.Err) of the error about a probe
// without a site among the objects Compile looked in: it may have some
// in another process or object.
var ErrNoMatch = errors.New("matches nothing")

// listError is an error listing objects, as opposed to one of the
// program's: Compile returns it as it is, behind the probe's position.
type listError struct{ err error }

func (e listError) Error() string { return e.err.Error() }
func (e listError) Unwrap() error { return e.err }

// resolveProbe resolves p and returns how many arguments every site of it
// has.
func (r *resolver) resolveProbe(p *btlang.Probe) (btlang.ProbeArgs, error) {
	res, args, err := r.resolve(p)
	if err != nil {
		var le listError
		if errors.As(err, &le) {
			if r.fatal == nil {
				r.fatal = fmt.Errorf("%s: %s: %w", p.At, p, le.err)
			}
		} else {
			r.causes[p.At] = err
		}
		return btlang.ProbeArgs{}, err
	}
	r.sites[p] = res
	return args, nil
}

func (r *resolver) resolve(p *btlang.Probe) (*resolved, btlang.ProbeArgs, error) {
	fail := func(err error) (*resolved, btlang.ProbeArgs, error) { return nil, btlang.ProbeArgs{}, err }
	path := r.probePath(p)
	if path == "" && r.noProcess() {
		return fail(fmt.Errorf("an empty path needs a process: trace one with -p or -c (CompileOptions.PID or Executable)"))
	}
	warn := r.opts.Warn
	if warn == nil {
		warn = func(error) {}
	}
	if p.Kind == btlang.ProbeUSDT {
		probes, err := r.listUSDT(sdt.Selector{Path: path, Provider: p.Provider, Name: p.Name}, warn)
		if err != nil {
			return fail(listError{err})
		}
		res, count, err := r.usdt(probes, warn)
		return res, btlang.ProbeArgs{Count: count}, err
	}
	fns, err := r.listFunctions(uprobe.Selector{Path: path, Func: p.Name, Offset: p.Offset, Return: p.Kind == btlang.ProbeUretprobe}, warn)
	if err != nil {
		return fail(listError{err})
	}
	return r.functions(fns, warn, p)
}

// probePath is the path p's objects are looked for in: its own, or
// without a process the executable, if any. A library short name of a
// command's probe is resolved as a file the command may map later (see
// commandLibs).
func (r *resolver) probePath(p *btlang.Probe) string {
	if p.Path == "" && r.noProcess() {
		return r.opts.Executable
	}
	if r.noProcess() {
		if lib, ok := r.commandLibs.path(p.Path); ok {
			return lib
		}
	}
	return p.Path
}

// setMachine checks that every object is of one machine.
func (r *resolver) setMachine(m elf.Machine, path string) error {
	if r.machine == 0 {
		r.machine = m
	}
	if m != r.machine {
		return fmt.Errorf("%s is for %s, other objects are for %s", path, m, r.machine)
	}
	return nil
}

// usdt turns probes into sites; the count of arguments is the least any
// location has.
func (r *resolver) usdt(probes []sdt.Probe, warn func(error)) (*resolved, int, error) {
	res := &resolved{}
	count := -1
	for i := range probes {
		p := &probes[i]
		if err := r.setMachine(p.Machine, p.Path); err != nil {
			return nil, 0, err
		}
		name := (&btlang.Probe{Kind: btlang.ProbeUSDT, Path: p.Path, Provider: p.Provider, Name: p.Name}).FullName()
		r.names[name] = probeName{name: p.Provider + ":" + p.Name, path: p.Path}
		for j := range p.Locations {
			loc := &p.Locations[j]
			if loc.OffsetErr != nil {
				return nil, 0, fmt.Errorf("%s at %#x: %w", name, loc.Address, loc.OffsetErr)
			}
			s := btgen.Site{Path: p.Path, Offset: loc.Offset, Probe: name}
			if loc.Semaphore != 0 && loc.SemaphoreErr == nil {
				s.RefCtrOffset = loc.SemaphoreOffset
			}
			for k := range loc.Args {
				f, err := usdtargs.Fetch(loc.Args[k], loc.Address, r.symbols.For(p.OpenPath))
				if err != nil {
					warn(fmt.Errorf("%s at %#x: arg%d reads as 0: %w", name, loc.Address, k, err))
					f = argread.Fetch{Kind: argread.FetchConst, Size: 8}
				}
				s.Args = append(s.Args, f)
			}
			if count < 0 || len(loc.Args) < count {
				count = len(loc.Args)
			}
			res.sites = append(res.sites, s)
			res.files = append(res.files, object{p.Path, p.PID, p.Dev, p.Inode})
		}
	}
	if len(res.sites) == 0 {
		return nil, 0, ErrNoMatch
	}
	return res, count, nil
}

// functions turns native functions into sites that read the C ABI's
// argument registers at entry, the return register at return, and Go
// functions into sites that read their values by name (see goFunction).
// functionProbe is the probe of function fn's site, by its displayed
// (demangled) name: its FullName is the probe builtin's value there.
func functionProbe(fn *uprobe.Function) *btlang.Probe {
	p := &btlang.Probe{Kind: btlang.ProbeUprobe, Path: fn.Path, Name: fn.Symbol.DisplayName(), Offset: fn.Delta}
	if fn.Return {
		p.Kind = btlang.ProbeUretprobe
	}
	return p
}

func (r *resolver) functions(fns []uprobe.Function, warn func(error), p *btlang.Probe) (*resolved, btlang.ProbeArgs, error) {
	res := &resolved{}
	count := 0
	var goArgs *btlang.ProbeArgs
	goName, cName := "", ""
	fail := func(err error) (*resolved, btlang.ProbeArgs, error) { return nil, btlang.ProbeArgs{}, err }
	for i := range fns {
		fn := &fns[i]
		if err := r.setMachine(fn.Machine, fn.Path); err != nil {
			return fail(err)
		}
		if fn.Go {
			sites, args, err := r.goFunction(fn, warn, p)
			if err != nil {
				return fail(err)
			}
			if len(sites) == 0 {
				continue
			}
			if goArgs == nil {
				goArgs, goName = &args, fn.Symbol.DisplayName()
			} else {
				*goArgs = mergeGoArgs(*goArgs, args, goName, fn.Symbol.DisplayName())
			}
			for _, s := range sites {
				res.sites = append(res.sites, s)
				res.files = append(res.files, object{fn.Path, fn.PID, fn.Dev, fn.Inode})
			}
			continue
		}
		cName = fn.Symbol.DisplayName()
		if fn.Return && fn.Delta != 0 {
			return fail(fmt.Errorf("%s in %s: a return probe must be at the function's start", fn.Name(), fn.Path))
		}
		off, err := fn.FileOffset()
		if err != nil {
			return fail(err)
		}
		if err := checkBoundary(fn); err != nil {
			return fail(err)
		}
		regs, ret, err := uprobe.CRegisters(fn.Machine)
		if err != nil {
			return fail(err)
		}
		short := fn.Symbol.DisplayName()
		if fn.Delta != 0 {
			short += fmt.Sprintf("+%d", fn.Delta)
		}
		name := functionProbe(fn).FullName()
		r.names[name] = probeName{name: short, path: fn.Path}
		s := btgen.Site{Path: fn.Path, Offset: off, Return: fn.Return, Probe: name, Func: fn.Symbol.DisplayName(), Entry: fn.Delta == 0 && !fn.Return}
		if fn.Return {
			if s.Ret, err = regFetch(fn.Machine, ret); err != nil {
				return fail(err)
			}
		} else {
			for _, reg := range regs {
				f, err := regFetch(fn.Machine, reg)
				if err != nil {
					return fail(err)
				}
				s.Args = append(s.Args, f)
			}
			count = len(regs)
		}
		res.sites = append(res.sites, s)
		res.files = append(res.files, object{fn.Path, fn.PID, fn.Dev, fn.Inode})
	}
	if len(res.sites) == 0 {
		return fail(ErrNoMatch)
	}
	if goArgs != nil {
		if cName != "" {
			return fail(fmt.Errorf("matches Go function %s and native function %s, whose arguments are read differently; name them in two probes", goName, cName))
		}
		return res, *goArgs, nil
	}
	return res, btlang.ProbeArgs{Count: count}, nil
}

// checkBoundary refuses a site inside a function (FUNC+OFFSET, 0xADDR)
// that does not start an instruction, reading the function's code from
// the file Functions listed (see uprobe.Function.CheckBoundary).
func checkBoundary(fn *uprobe.Function) error {
	if fn.Delta == 0 {
		return nil
	}
	f, err := target.Reopen(fn.Path, fn.PID, procfs.FileID{Dev: fn.Dev, Inode: fn.Inode})
	if err != nil {
		return err
	}
	defer f.Close()
	return fn.CheckBoundary(f)
}

func regFetch(m elf.Machine, name string) (argread.Fetch, error) {
	off, err := argread.PtRegs(m, name)
	if err != nil {
		return argread.Fetch{}, err
	}
	return argread.Fetch{Kind: argread.FetchReg, Size: 8, Reg: argread.Reg{Off: off, Width: 8}}, nil
}
