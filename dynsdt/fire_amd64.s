#include "go_asm.h"
#include "textflag.h"

// The trampoline that calls a probe stub with the System V AMD64 calling
// convention (see "Firing" in doc.go):
//
//   - arguments 1-6 in DI, SI, DX, CX, R8, R9; 7-12 in 8-byte stack slots,
//     the 7th at the callee's 8(%rsp), i.e. at 0(SP) just before the CALL;
//   - SP 16-byte aligned at the CALL;
//   - 192 bytes of this frame free below SP at the CALL. A stub hit by an
//     optimized uprobe (Linux 6.18+, nop5) calls the kernel's uprobe
//     trampoline, which pushes 32 bytes below the stub's return address;
//     the nop10 form first moves SP down by 128 (the red zone), then
//     calls it: 168 bytes in all. The space below SP is part of this
//     frame, so the linker's NOSPLIT check counts it and no stack guard is
//     needed at run time.
//
// Go does not keep SP 16-byte aligned, and a frame's size is fixed at
// assembly time, so fire picks one of two bodies by the alignment of SP at
// its entry: fire0 (SP ≡ 0 mod 16) and fire8 (SP ≡ 8 mod 16). Their frame
// sizes differ by 8, which makes SP aligned at the CALL in both. They move
// SP only with ADJSP, which the assembler records, so tracebacks taken in
// them (profiling signals) stay exact.
//
// A body runs, with E the SP at fire's entry (pointing at the return
// address) and F its frame size:
//
//	PUSHQ BP, ADJSP $F     (prologue)    SP = E - 8 - F
//	ADJSP $-192                          SP = E - 8 - F + 192 ≡ 0 mod 16
//	stack arguments at 0..47(SP), inside the frame (F ≥ 192 + 48)
//	CALL stub; ADJSP $192; epilogue

// FIRE_RET returns from a body of frame size F without RET: it restores
// BP and jumps to the return address, popped. After an int3 trap on the
// stub's 1-byte nop site (dynsdt.SiteNop), the first RET to a call made
// before the trap costs ~230 ns more than an indirect JMP (see "Probe
// sites" in doc.go). ADJSP records the moves, so tracebacks taken up to
// the JMP stay exact.
#define FIRE_RET(F) \
	MOVQ	F(SP), BP; \
	MOVQ	(F+8)(SP), R11; \
	ADJSP	$-(F+16); \
	JMP	R11

// FIRE_BODY loads min(n, 12) arguments (the compare chains treat any n > 12
// as 12) from args and calls stub. Missing
// register arguments are zero; when there are stack arguments, missing
// stack slots are zero too.
#define FIRE_BODY(F) \
	MOVQ	pr+0(FP), AX; \
	MOVQ	Probe_stub(AX), AX; \
	MOVQ	args+8(FP), R10; \
	MOVQ	n+16(FP), R11; \
	XORL	DI, DI; \
	XORL	SI, SI; \
	XORL	DX, DX; \
	XORL	CX, CX; \
	XORL	R8, R8; \
	XORL	R9, R9; \
	ADJSP	$-192; \
	CMPQ	R11, $6; \
	JLE	regs; \
	XORL	BX, BX; \
	MOVQ	BX, 8(SP); \
	MOVQ	BX, 16(SP); \
	MOVQ	BX, 24(SP); \
	MOVQ	BX, 32(SP); \
	MOVQ	BX, 40(SP); \
	MOVQ	48(R10), BX; \
	MOVQ	BX, 0(SP); \
	CMPQ	R11, $8; \
	JLT	regs; \
	MOVQ	56(R10), BX; \
	MOVQ	BX, 8(SP); \
	CMPQ	R11, $9; \
	JLT	regs; \
	MOVQ	64(R10), BX; \
	MOVQ	BX, 16(SP); \
	CMPQ	R11, $10; \
	JLT	regs; \
	MOVQ	72(R10), BX; \
	MOVQ	BX, 24(SP); \
	CMPQ	R11, $11; \
	JLT	regs; \
	MOVQ	80(R10), BX; \
	MOVQ	BX, 32(SP); \
	CMPQ	R11, $12; \
	JLT	regs; \
	MOVQ	88(R10), BX; \
	MOVQ	BX, 40(SP); \
regs: \
	TESTQ	R11, R11; \
	JEQ	call; \
	MOVQ	0(R10), DI; \
	CMPQ	R11, $2; \
	JLT	call; \
	MOVQ	8(R10), SI; \
	CMPQ	R11, $3; \
	JLT	call; \
	MOVQ	16(R10), DX; \
	CMPQ	R11, $4; \
	JLT	call; \
	MOVQ	24(R10), CX; \
	CMPQ	R11, $5; \
	JLT	call; \
	MOVQ	32(R10), R8; \
	CMPQ	R11, $6; \
	JLT	call; \
	MOVQ	40(R10), R9; \
call: \
	CALL	AX; \
	ADJSP	$192; \
	FIRE_RET(F)

// func fire(pr *Probe, args *uint64, n int)
TEXT ·fire(SB), NOSPLIT|NOFRAME, $0-24
	// Not TESTQ $8, SP: an instruction with SP as destination marks the
	// function as writing SP.
	MOVQ	SP, AX
	TESTQ	$8, AX
	JNZ	sp8
	JMP	·fire0(SB)
sp8:
	JMP	·fire8(SB)

// func fire0(pr *Probe, args *uint64, n int)
TEXT ·fire0(SB), NOSPLIT, $248-24
	FIRE_BODY(248)

// func fire8(pr *Probe, args *uint64, n int)
TEXT ·fire8(SB), NOSPLIT, $240-24
	FIRE_BODY(240)

// Stubs for tests and benchmarks, in the C calling convention.

// func nopStub()
TEXT ·nopStub(SB), NOSPLIT|NOFRAME, $0-0
	RET

// spStub stores its %rsp at entry at the address in its first argument.
// func spStub()
TEXT ·spStub(SB), NOSPLIT|NOFRAME, $0-0
	MOVQ	SP, (DI)
	RET

// argsStub stores its 12 arguments at the address in its first argument.
// func argsStub()
TEXT ·argsStub(SB), NOSPLIT|NOFRAME, $0-0
	MOVQ	DI, 0(DI)
	MOVQ	SI, 8(DI)
	MOVQ	DX, 16(DI)
	MOVQ	CX, 24(DI)
	MOVQ	R8, 32(DI)
	MOVQ	R9, 40(DI)
	MOVQ	8(SP), AX
	MOVQ	AX, 48(DI)
	MOVQ	16(SP), AX
	MOVQ	AX, 56(DI)
	MOVQ	24(SP), AX
	MOVQ	AX, 64(DI)
	MOVQ	32(SP), AX
	MOVQ	AX, 72(DI)
	MOVQ	40(SP), AX
	MOVQ	AX, 80(DI)
	MOVQ	48(SP), AX
	MOVQ	AX, 88(DI)
	RET

// The addresses of the ABI0 stubs themselves, not of the ABIInternal
// wrappers a Go func value would point to.

// func spStubAddr() uintptr
TEXT ·spStubAddr(SB), NOSPLIT, $0-8
	LEAQ	·spStub(SB), AX
	MOVQ	AX, ret+0(FP)
	RET

// func argsStubAddr() uintptr
TEXT ·argsStubAddr(SB), NOSPLIT, $0-8
	LEAQ	·argsStub(SB), AX
	MOVQ	AX, ret+0(FP)
	RET

// fireFrame24 and fireFrame32 call fire from frames whose sizes differ by
// 8, so that tests run both fire0 and fire8 whatever alignment Go's frames
// have.

// func fireFrame24(pr *Probe, args *uint64, n int)
TEXT ·fireFrame24(SB), NOSPLIT, $24-24
	MOVQ	pr+0(FP), AX
	MOVQ	AX, 0(SP)
	MOVQ	args+8(FP), AX
	MOVQ	AX, 8(SP)
	MOVQ	n+16(FP), AX
	MOVQ	AX, 16(SP)
	CALL	·fire(SB)
	RET

// func fireFrame32(pr *Probe, args *uint64, n int)
TEXT ·fireFrame32(SB), NOSPLIT, $32-24
	MOVQ	pr+0(FP), AX
	MOVQ	AX, 0(SP)
	MOVQ	args+8(FP), AX
	MOVQ	AX, 8(SP)
	MOVQ	n+16(FP), AX
	MOVQ	AX, 16(SP)
	CALL	·fire(SB)
	RET
