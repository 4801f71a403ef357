// Package trace compiles programs in bpftrace's language to BPF and runs
// them on user-space probes. It needs no clang, LLVM or kernel headers,
// and prints what bpftrace 0.17 prints.
//
//	source ──Compile──► *Program ──Start──► *Tracer ──Run──► output
//
// Entry points:
//   - Compile parses, checks and resolves a program to BPF and sites.
//   - CompileEvents builds a program that hands each hit to
//     Options.OnEvent as an Event.
//   - CompileFlags and FlagProgram turn the trace command's flags into a
//     program.
//   - Start loads and attaches; Tracer.Run prints until the context ends,
//     exit() runs or the traced processes exit.
//   - Warm, called before Compile, overlaps the kernel's wait at the first
//     uprobe with compiling.
//
// Probes: usdt, uprobe and uretprobe (also on Go functions, whose values
// are read by name), BEGIN, END, interval and profile.
//
// To trace running processes, set CompileOptions.PIDs and Options.PIDs;
// Run ends when all have exited. To trace a command from its first
// instruction, set Options.Command to an unstarted *exec.Cmd and
// CompileOptions.Executable to its path. Start starts it stopped,
// attaches, then resumes it.
//
// Errors in the program's text are CompileErrors, each with its file,
// line and column. Errors reading objects keep their cause for errors.Is
// (os.ErrPermission, sdt.ErrNotFound). Start's errors wrap
// ebpf.ErrNotSupported when the kernel lacks a feature.
//
// A Program holds no descriptors and may be started many times, also
// concurrently. A Tracer owns its BPF objects until Close. It is not safe
// for concurrent use; an Event passed to OnEvent is reused (Clone keeps it).
//
// docs/trace.md and docs/language.md describe the probes, Go functions,
// stacks and strings; docs/architecture.md the passes.
package trace
