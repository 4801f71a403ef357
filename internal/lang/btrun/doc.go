// Package btrun runs a program btgen generated. It loads and attaches it,
// reads the ring buffer's records, and at the end prints every map as
// bpftrace prints at exit.
//
// Start loads and attaches; on failure it releases what it acquired. Run
// runs BEGIN, then reads records until exit(), the traced processes exit
// or ctx ends; then it runs END, detaches and prints the maps. Close
// releases everything and is safe to call twice.
//
// Sites the kernel refuses are skipped and reported to Options.Warn as a
// *RefusedError; Start fails when it refuses every site. BEGIN, END and
// interval blocks work on x86-64 only; elsewhere Start wraps
// ebpf.ErrNotSupported.
//
// A Runner is not safe for concurrent use; Close must not race with Run.
// docs/architecture.md ("Running") describes links, stacks and output.
package btrun
