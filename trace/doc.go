// Package trace compiles and runs programs in bpftrace's language against
// user-space probes: USDT probes, native functions and their returns,
// BEGIN, END, interval and profile blocks. It compiles to BPF in Go (no clang, no
// LLVM, no kernel headers) and prints what bpftrace prints.
//
// # Model and data flow
//
//	source ──Compile──► *Program (BPF + sites, plain data) ──Start──► *Tracer ──Run──► output
//
// Compile parses and type-checks the program, resolves every probe of
// every block to its sites, and generates BPF:
//
//   - usdt:PATH:PROVIDER:NAME and usdt:PATH:NAME (parts may be globs, PATH
//     a library short name such as "libc") are looked up with package
//     sdt: every location of every matching probe is a site, reading its
//     arguments as its note's specs say. A probe's arg count (arg0…) is
//     the least any of its locations has. An empty PATH (usdt::P:N) means
//     every object of CompileOptions.PID, or CompileOptions.Executable.
//   - uprobe:PATH:FUNC, uprobe:PATH:FUNC+OFFSET and uretprobe:PATH:FUNC
//     name native functions (package uprobe): arg0…arg5 are the C ABI's
//     integer argument registers, retval the return register. An empty
//     PATH means what it means for usdt.
//   - The same probes on Go functions (uprobe:PATH:main.(*Server).handle)
//     read values by name, as the binary's DWARF places them for Go's
//     register ABI (package gofunc): args.NAME (or args->NAME) is a
//     parameter at the entry site, the first instruction after the stack
//     check. Integers, bools and pointers are integers (signed as their
//     type); a Go string is a string of its first 63 bytes (read by its
//     length, not up to a NUL), usable in printf %s, keys, == and str().
//     args.s.hits (or args.s->next->hits) is an integer, bool or pointer
//     field reached through a pointer parameter in a register, through
//     at most five pointers. Structs passed by value, slices, interfaces
//     and floats fail to
//     compile with a sentence naming the parameter and its type; arg0…
//     are refused (they are C ABI registers). A uretprobe on a Go
//     function is never a uretprobe, which would write a return address
//     on a goroutine stack the runtime moves and crash the program: it is
//     a probe on every RET instruction of the function, where args.NAME
//     are the results (unnamed ones r0, r1…) and retval is the first
//     result when it is an integer (unsigned, as bpftrace's). goid, a
//     usdtkit builtin, is the goroutine id (through the g register and
//     runtime.g's goid offset from DWARF): key latency pairs by it, as a
//     goroutine may change threads between its entry and its return.
//     Without DWARF, Go functions are probed but args, retval and goid
//     are refused. Assembly functions of the stack ABI (ABI0, "NAME.abi0"
//     in the symbol table) are skipped with a warning: no register holds
//     their goroutine; Go code calls their wrapper NAME. Calls the
//     compiler inlined into their callers are not seen (mark the function
//     //go:noinline, or build with -gcflags=-l).
//   - BEGIN, END and interval:s:N / interval:ms:N run in the tracer's own
//     process, as bpftrace runs them.
//   - profile:hz:N, profile:s:N, profile:ms:N and profile:us:N sample
//     every CPU (a software CPU clock event per CPU) and run their block
//     for the task that was running; ustack is its user stack even when
//     the sample is in a system call. With Options.PIDs (PID, Command)
//     only those processes' samples count; without, every process's.
//
// CompileEvents writes such a program itself from a list of
// EventProbes (a probe name, a filter in the language, which arguments
// are strings): each hit that passes a probe's filter sends an Event —
// probe, process, thread, CPU, comm, time and arguments, each Value
// saying whether it is signed, a string, or could not be read — built in
// place in the ring buffer and handed to Options.OnEvent. This is what
// usdtkit trace PROBE prints one line per hit for. An event of a Go
// function carries its values whole and by name instead of arg0…: the
// parameters at the entry (and the EventProbe.Fields paths), the results
// at a RET, each Value with its Name, Go type and decoded Go value
// (integers, bools, pointers, strings by their length, a slice's length
// and first bytes or elements, an interface's dynamic type and data
// word), and the goroutine id (see goevents.go for the layout).
//
// Start opens each object again, checks its identity (device and inode)
// against what Compile read, attaches through /proc/self/fd/N so that a
// file renamed or replaced meanwhile is never traced by mistake, loads
// and attaches. The kernel makes the first uprobe registration wait for an
// RCU grace period; Warm, called before Compile, starts that wait in the
// background so that it runs while the program compiles. Compile lists
// the objects of one path (in one process) once, however many probes of
// the program name them. Run prints printf and print output as records arrive and
// the maps at the end, byte for byte as bpftrace 0.17 prints them in text
// or -f json (see the README for the differences). In JSON, a printf
// line with ustack arguments also has "stacks": per stack argument its
// frames, as Frame's MarshalJSON writes them.
//
// # Errors
//
// Errors in the program's text are CompileErrors, each a *CompileError
// {File, Line, Col, Msg} printing as "file:line:col: sentence": syntax,
// types, what is not supported yet (never compiled to something else),
// and a probe that matches nothing. Errors reading objects keep their
// cause for errors.Is (os.ErrPermission, sdt.ErrNotFound) behind the
// probe's position. Start's errors wrap ebpf.ErrNotSupported when the
// kernel lacks a feature and os.ErrPermission without the privileges.
//
// # Lifetime and concurrency
//
// A Program holds no files or descriptors and may be started several
// times, concurrently. A Tracer owns its BPF objects and links until
// Close; it is not safe for concurrent use.
//
// # Processes
//
// CompileOptions.PIDs and Options.PIDs name the processes traced (PID is
// one more): probes with an empty path are looked for in every object of
// each, a site found in one process is attached for that process only,
// and Run ends when all of them have exited. To trace a command from its
// first instruction, set Options.Command to an unstarted *exec.Cmd and
// CompileOptions.Executable to its Path: Start starts it stopped,
// attaches, then resumes it; Run ends when it exits (or ends it when the
// trace ends first) and Tracer.CommandState says how it ended.
//
// # Flags
//
// The trace command's flags are shorthands for programs, built in one
// place: CompileFlags compiles the program Flags stand for (--count is
// @[probe] = count(), --hist argN --by pid is @[probe, pid] =
// hist(argN), --filter a predicate, -F a printf, --latency the
// @start[tid] pair, @start[pid, goid] for Go functions), or for flags
// that only print hits the EventProbes of FlagEvents. FlagProgram prints
// that program. Filters and formats are fragments of the language (a
// filter is one comparison, a format a string and its arguments); Go
// functions' values are named in the flags ('n > 3', --hist n, --field
// s.hits) and read as args.NAME. The flags list the probes first, to
// check each argument a flag reads and to build per-probe flags
// (PROVIDER:NAME=…) as blocks of their own. The program is built as a
// syntax tree, so no flag adds program text; a probe whose name no
// program can hold (a '"' or a newline) is refused (FlagError), so that
// FlagProgram's text is what CompileFlags compiles.
//
// # Stacks
//
// ustack, ustack(N), ustack(perf[, N]) and ustack(bpftrace, N) are user
// stacks (kstack is refused: usdtkit traces user space only), printed as
// bpftrace 0.17 prints them: "sym+off" lines indented by 4 in a map key
// and 8 in printf, ustack(perf) as "\tADDR sym+off (object)"; a function
// that is not known shows its object and offset ("[libfoo.so+0x1234]"),
// a bare address only outside any known object. Frames are symbolized
// when printed (package internal/stacks/symbolize: symbol tables, separate debug
// files, demangled C++, Go, perf maps), with the mappings each process
// had when the trace first saw it (at Start for Options.PIDs, at its
// first stack, read again then for a command started stopped): a process
// that has exited still symbolizes, where bpftrace prints bare addresses.
// The first stack is read asynchronously (its record wakes the reader at
// once): a process that exits before that, within a few milliseconds on
// a busy machine, keeps only what was seen at Start, if anything.
// Capturing build IDs and file offsets in the kernel (bpf_get_stack's
// BPF_F_USER_BUILD_ID) would close that gap; it is not done yet.
//
// How each stack is captured:
//
//   - A map key (@[ustack] = count()) is, by default (CompileOptions.
//     Unwind UnwindCFIBPF), the hash of the frames the BPF program found
//     walking the stack with each object's CFI, compiled into tables that
//     Start loads into BPF maps for the processes of Options.PIDs (and
//     Command; a command's libraries are added at its first stack), so
//     that equal stacks aggregate in the kernel and code built without
//     frame pointers keeps every frame. Other processes' stacks, and
//     frames in objects without CFI (JIT code, Go), are walked by frame
//     pointer. With UnwindFP (and where the kernel lacks bpf_loop, or
//     off x86-64) it is the frame-pointer walk bpftrace uses: code
//     without frame pointers ends the walk early, as in bpftrace. At a
//     function's first instruction the kernel's walk misses the
//     immediate caller (bpftrace prints leaf, level2, level1 for leaf
//     called by level3); usdtkit's walks read the return address at the
//     stack pointer there and keep the caller.
//     With UnwindCFI, a count() or sum() map key
//   - A printf argument is a copy of the top of the stack (8 KiB) with
//     the registers, unwound in user space (internal/stacks/unwind) with each
//     object's CFI (.eh_frame, .debug_frame), and its frame pointers where
//     an object has none (JIT code): code built -O2
//     -fomit-frame-pointer, Debian's C library included, keeps every
//     frame. Frames beyond the copy are not seen. CompileOptions.
//     FramePointerStacks uses the kernel's frame-pointer walk instead, as
//     bpftrace does. Tracer.UnwindMethods says, per object, which method
//     unwound how many frames.
//
// Tracer.Stacks returns, after Run, every entry of the maps keyed by a
// stack with its frames symbolized and its value: the input of flame
// graphs and profiles. Program.CountsStacks says before Start whether
// there will be any; Flags.Stacks is the flags' shorthand for them,
// @[probe, ustack] = count().
//
// # Strings
//
// str(), Go strings (args.NAME) and events' string arguments read user
// memory. On Linux 6.12+ (`usdtkit doctor`: sleepable-strings) a block
// that reads strings, and no ustack, is a sleepable program: where the
// usual read faults, it reads again with bpf_copy_from_user_str (or
// bpf_copy_from_user), which faults in a page the process has not
// touched yet (a file mapped and never read, memory swapped out), so the
// string is read where bpftrace's str() gives "". Reads of present pages
// cost what they did (bench: BenchmarkStrRead).
// CompileOptions.FaultingStrings reads as bpftrace does. While such a
// program sleeps on a fault, hits of other threads on its CPU are skipped
// and counted as lost, as for a preempted program.
//
// # Usage
//
//	trace.Warm() // first: the kernel's wait at the first uprobe overlaps Compile
//	prog, err := trace.Compile("-e", `usdt::python:function__entry { @[str(arg1)] = count(); }`, &trace.CompileOptions{PID: pid})
//	t, err := trace.Start(prog, &trace.Options{PID: pid})
//	defer t.Close()
//	err = t.Run(ctx) // until ctx ends, exit() or the process exits
//
// Events, from Go:
//
//	prog, err := trace.CompileEvents([]trace.EventProbe{{Probe: "usdt::python:function__entry", Strings: []int{0, 1}}},
//		&trace.CompileOptions{PID: pid})
//	t, err := trace.Start(prog, &trace.Options{PID: pid, OnEvent: func(ev *trace.Event) error {
//		fmt.Println(ev.Name, ev.Args) // ev is reused: ev.Clone() keeps it
//		return nil
//	}})
package trace
