#include "textflag.h"

// Probe sites for the nop5 check and BenchmarkUprobeHit. Each starts with
// the instruction a uprobe is attached to and returns; neither touches the
// stack, so a call pushed below %rsp by an optimized uprobe is harmless.

// func nop5Site()
TEXT ·nop5Site(SB), NOSPLIT|NOFRAME, $0-0
	// nopl 0x0(%rax,%rax,1): x86_nops[5], the only instruction Linux 6.18
	// optimizes.
	BYTE $0x0f; BYTE $0x1f; BYTE $0x44; BYTE $0x00; BYTE $0x00
	RET

// func nop1Site()
TEXT ·nop1Site(SB), NOSPLIT|NOFRAME, $0-0
	// nop: the instruction sys/sdt.h puts at a USDT site; always an int3.
	BYTE $0x90
	RET

// The addresses of the ABI0 functions themselves, not of the ABIInternal
// wrappers a Go func value would point to.

// func nop5SiteAddr() uintptr
TEXT ·nop5SiteAddr(SB), NOSPLIT, $0-8
	LEAQ ·nop5Site(SB), AX
	MOVQ AX, ret+0(FP)
	RET

// func nop1SiteAddr() uintptr
TEXT ·nop1SiteAddr(SB), NOSPLIT, $0-8
	LEAQ ·nop1Site(SB), AX
	MOVQ AX, ret+0(FP)
	RET
