#include "go_asm.h"
#include "textflag.h"

// The trampoline that calls a probe stub with the AAPCS64 calling
// convention (see "Firing" in doc.go): arguments 1-8 in R0-R7, 9-12 in
// 8-byte slots at [sp], [sp, 8], ... at the BL; SP is always 16-byte
// aligned on arm64. The frame keeps 128 bytes free below SP at the BL, as
// on amd64 (an arm64 uprobe traps on BRK and pushes nothing, but the stub
// is called like C code, which may use the stack).
//
// Frame: the declared 160 bytes plus the saved LR and FP make 176, a
// multiple of 16 (cmd/internal/obj/arm64 preprocess). After the prologue
// 0(RSP) holds the saved LR; ADD $128, RSP (recorded by the assembler as
// an SP adjustment, so tracebacks stay exact) leaves the saved LR 128
// bytes below SP and puts the 4 stack slots at 128..159 of the frame.
// R9-R12 are scratch; R18 (platform), R26-R28 (closure, REGTMP, g) are not
// touched, and the stub, as C code, preserves R19-R29.

// func fire(pr *Probe, args *uint64, n int)
TEXT ·fire(SB), NOSPLIT, $160-24
	MOVD	pr+0(FP), R9
	MOVD	Probe_stub(R9), R9
	MOVD	args+8(FP), R10
	MOVD	n+16(FP), R11
	MOVD	ZR, R0
	MOVD	ZR, R1
	MOVD	ZR, R2
	MOVD	ZR, R3
	MOVD	ZR, R4
	MOVD	ZR, R5
	MOVD	ZR, R6
	MOVD	ZR, R7
	ADD	$128, RSP
	CMP	$8, R11
	BLE	regs
	MOVD	ZR, 8(RSP)
	MOVD	ZR, 16(RSP)
	MOVD	ZR, 24(RSP)
	MOVD	64(R10), R12
	MOVD	R12, 0(RSP)
	CMP	$10, R11
	BLT	regs
	MOVD	72(R10), R12
	MOVD	R12, 8(RSP)
	CMP	$11, R11
	BLT	regs
	MOVD	80(R10), R12
	MOVD	R12, 16(RSP)
	CMP	$12, R11
	BLT	regs
	MOVD	88(R10), R12
	MOVD	R12, 24(RSP)
regs:
	CBZ	R11, call
	MOVD	0(R10), R0
	CMP	$2, R11
	BLT	call
	MOVD	8(R10), R1
	CMP	$3, R11
	BLT	call
	MOVD	16(R10), R2
	CMP	$4, R11
	BLT	call
	MOVD	24(R10), R3
	CMP	$5, R11
	BLT	call
	MOVD	32(R10), R4
	CMP	$6, R11
	BLT	call
	MOVD	40(R10), R5
	CMP	$7, R11
	BLT	call
	MOVD	48(R10), R6
	CMP	$8, R11
	BLT	call
	MOVD	56(R10), R7
call:
	CALL	(R9)
	SUB	$128, RSP
	RET

// Stubs for tests and benchmarks, in the C calling convention.

// func nopStub()
TEXT ·nopStub(SB), NOSPLIT|NOFRAME, $0-0
	RET

// spStub stores its SP at entry at the address in its first argument.
// func spStub()
TEXT ·spStub(SB), NOSPLIT|NOFRAME, $0-0
	MOVD	RSP, R9
	MOVD	R9, (R0)
	RET

// argsStub stores its 12 arguments at the address in its first argument.
// func argsStub()
TEXT ·argsStub(SB), NOSPLIT|NOFRAME, $0-0
	MOVD	R0, 0(R0)
	MOVD	R1, 8(R0)
	MOVD	R2, 16(R0)
	MOVD	R3, 24(R0)
	MOVD	R4, 32(R0)
	MOVD	R5, 40(R0)
	MOVD	R6, 48(R0)
	MOVD	R7, 56(R0)
	MOVD	0(RSP), R9
	MOVD	R9, 64(R0)
	MOVD	8(RSP), R9
	MOVD	R9, 72(R0)
	MOVD	16(RSP), R9
	MOVD	R9, 80(R0)
	MOVD	24(RSP), R9
	MOVD	R9, 88(R0)
	RET

// The addresses of the ABI0 stubs themselves, not of the ABIInternal
// wrappers a Go func value would point to.

// func spStubAddr() uintptr
TEXT ·spStubAddr(SB), NOSPLIT, $0-8
	MOVD	$·spStub(SB), R0
	MOVD	R0, ret+0(FP)
	RET

// func argsStubAddr() uintptr
TEXT ·argsStubAddr(SB), NOSPLIT, $0-8
	MOVD	$·argsStub(SB), R0
	MOVD	R0, ret+0(FP)
	RET
