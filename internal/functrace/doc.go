// Package functrace is the trace command's tracer of functions for its
// flags (events, --count, --hist, --latency, --filter, --field): native
// functions read with the C ABI's registers and Go functions read by name
// with Go's register ABI, on the fixed-mode programs of internal/bpfgen and
// the sessions of internal/session.
//
// It was package uprobe's Trace; it lives here so that package uprobe,
// which lists symbols and functions, links neither cilium/ebpf nor
// go-delve/delve. Programs in bpftrace's language (package trace) are the
// tracing core; this package remains for what they do not read yet (Go
// values as a whole: slices, interfaces, fields through pointers) and
// retires when they do.
//
// # Go functions
//
// A Function of a Go binary (Function.Go) without an offset is traced as
// package internal/gofunc lays it out: the entry site is the first
// instruction after the stack check (a probe at the entry would fire again
// when morestack copies the stack and restarts the function), and a return
// is a uprobe on every RET instruction, never a uretprobe, whose rewritten
// return address the Go runtime finds when it copies the stack, and
// crashes on. Each site's event has the goroutine id (runtime.g.goid,
// through the g register) in slot 0, then the values that
// TraceOptions.GoFilters and GoHist name, so that they are in the same
// slot at every site, then the parameters (entry) or results (RETs), then
// TraceOptions.Fields. A string or byte slice takes two slots: its pointer,
// read as the bytes up to the length in the other; an interface two; a
// struct passed by value is one value per field ("p.X"). Tracer.DecodeGo
// turns an event back into named GoValues. Latency traces of Go functions
// pair start and done by goroutine id. A Go function with +OFFSET is a
// native site (C ABI registers, with a warning).
//
// Files are opened again as package uprobe listed them, checked against
// the listing's device and inode, and given to the kernel as
// /proc/self/fd/N; a site inside a function must start an instruction
// (uprobe.Function.CheckBoundary).
package functrace
