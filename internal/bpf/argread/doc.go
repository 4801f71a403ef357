// Package argread emits the BPF code that reads one probe argument at a
// site, for every program usdtkit generates (btgen, usdtlink).
//
//	sdt.Arg ──usdtargs.Fetch──► Fetch ──EmitFetch──► asm.Instructions
//	Go value (gofunc.Word) ──WordFetch──► Fetch
//
// A Fetch is plain data, compared with == so sites reading alike share
// code. EmitFetch's code expects pt_regs in R6, the slots' base in R7 and
// fault bits in R9; it clobbers R0..R5. A failed read gives 0 and sets the
// argument's fault bit. Programs using it must be licensed "GPL".
//
// EmitFetch returns a *ConfigError, wrapping ErrUnsupported when the
// argument cannot be read at all. Nothing keeps state.
// docs/architecture.md ("Argument reads") gives the semantics.
package argread
