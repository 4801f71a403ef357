package sdt

// companions lists probes that fire only while another probe is traced
// too, by "provider:name". CPython 3.11's ceval fires function__entry and
// function__return only on its tracing path, which it takes while the line
// probe is enabled (or a Python-level tracer or profiler is set): traced
// alone they see only the calls CPython makes from C (at exit, for
// instance), with usdtkit as with bpftrace (cmd/usdtkit's
// TestTracePythonCompanionHint shows it).
var companions = map[string][]string{
	"python:function__entry":  {"python:line"},
	"python:function__return": {"python:line"},
}

// Companions returns the probes ("provider:name") that the probe named
// provider:name needs traced beside it to fire at all, in the programs
// known to work that way; nil for most probes. It is meant for a hint when
// the probe is traced without them.
func Companions(name string) []string {
	return companions[name]
}
