#include "textflag.h"

// func fire(token uint64)
// The uprobe of BEGIN, END and interval blocks: its program reads token
// at 8(SP) on entry (btgen.StubFetch) and runs when it is its block's.
TEXT ·fire(SB), NOSPLIT|NOFRAME, $0-8
	MOVQ token+0(FP), AX
	RET

// func fireAddr() uintptr
// fire's ABI0 entry, where the uprobe goes (a func value would give the
// ABIInternal wrapper).
TEXT ·fireAddr(SB), NOSPLIT, $0-8
	LEAQ ·fire(SB), AX
	MOVQ AX, ret+0(FP)
	RET
