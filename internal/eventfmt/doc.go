// Package eventfmt turns what users write on the command line into what a
// trace session needs, and trace results into text: filters ("arg0 > 100"),
// printf-style formats with str(argN), and bpftrace-style histograms.
//
// It knows nothing of probes or BPF beyond the bpfgen types it fills in, so
// USDT and function tracing (packages sdt and uprobe) share it.
//
// Formats follow bpftrace's printf: a quoted format string, then the
// arguments it prints, each argN or str(argN):
//
//	"%s %s:%d", str(arg0), str(arg1), arg2
//
// or, shorter, an unquoted format whose verbs take arg0, arg1, … in order,
// %s reading its argument as a string:
//
//	%s %s:%d
//
// Verbs: %d %i (signed decimal), %u (unsigned), %x %X %o, %p (0x-prefixed
// hex), %c, %s and %%, with the flags, width and precision of package fmt.
// Escapes \n \t \\ and \" work in quoted formats.
package eventfmt
