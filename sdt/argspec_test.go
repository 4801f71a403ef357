package sdt

import (
	"debug/elf"
	"errors"
	"reflect"
	"testing"
)

const (
	x86   = elf.EM_X86_64
	arm64 = elf.EM_AARCH64
)

// errInvalid marks table cases that must fail with an *ArgError that wraps no
// sentinel.
var errInvalid = errors.New("invalid (no sentinel)")

type parseArgTest struct {
	name string
	m    elf.Machine
	have string
	// want is the whole expected Arg except Spec, Machine and Err, which the
	// test fills in. A want.Kind of ArgInvalid means ParseArg must fail.
	want Arg
	// wantErr is the sentinel the *ArgError must wrap (errInvalid: none).
	wantErr error
}

var parseArgTests = []parseArgTest{
	// x86-64 registers: every alias width of every register family.
	{"x86/rax", x86, "8@%rax", Arg{Size: 8, Kind: ArgReg, Reg: "rax"}, nil},
	{"x86/eax", x86, "-4@%eax", Arg{Size: 4, Signed: true, Kind: ArgReg, Reg: "eax"}, nil},
	{"x86/ax", x86, "2@%ax", Arg{Size: 2, Kind: ArgReg, Reg: "ax"}, nil},
	{"x86/al", x86, "1@%al", Arg{Size: 1, Kind: ArgReg, Reg: "al"}, nil},
	{"x86/ah", x86, "1@%ah", Arg{Size: 1, Kind: ArgReg, Reg: "ah"}, nil},
	{"x86/bh", x86, "-1@%bh", Arg{Size: 1, Signed: true, Kind: ArgReg, Reg: "bh"}, nil},
	{"x86/ch", x86, "1@%ch", Arg{Size: 1, Kind: ArgReg, Reg: "ch"}, nil},
	{"x86/dh", x86, "1@%dh", Arg{Size: 1, Kind: ArgReg, Reg: "dh"}, nil},
	{"x86/rbx", x86, "8@%rbx", Arg{Size: 8, Kind: ArgReg, Reg: "rbx"}, nil},
	{"x86/ecx", x86, "-4@%ecx", Arg{Size: 4, Signed: true, Kind: ArgReg, Reg: "ecx"}, nil},
	{"x86/dl", x86, "1@%dl", Arg{Size: 1, Kind: ArgReg, Reg: "dl"}, nil},
	{"x86/rsi", x86, "8@%rsi", Arg{Size: 8, Kind: ArgReg, Reg: "rsi"}, nil},
	{"x86/esi", x86, "-4@%esi", Arg{Size: 4, Signed: true, Kind: ArgReg, Reg: "esi"}, nil},
	{"x86/si", x86, "2@%si", Arg{Size: 2, Kind: ArgReg, Reg: "si"}, nil},
	{"x86/sil", x86, "1@%sil", Arg{Size: 1, Kind: ArgReg, Reg: "sil"}, nil},
	{"x86/rdi", x86, "8@%rdi", Arg{Size: 8, Kind: ArgReg, Reg: "rdi"}, nil},
	{"x86/dil", x86, "-1@%dil", Arg{Size: 1, Signed: true, Kind: ArgReg, Reg: "dil"}, nil},
	{"x86/rbp", x86, "8@%rbp", Arg{Size: 8, Kind: ArgReg, Reg: "rbp"}, nil},
	{"x86/bpl", x86, "1@%bpl", Arg{Size: 1, Kind: ArgReg, Reg: "bpl"}, nil},
	{"x86/rsp", x86, "8@%rsp", Arg{Size: 8, Kind: ArgReg, Reg: "rsp"}, nil},
	{"x86/spl", x86, "1@%spl", Arg{Size: 1, Kind: ArgReg, Reg: "spl"}, nil},
	{"x86/r8", x86, "8@%r8", Arg{Size: 8, Kind: ArgReg, Reg: "r8"}, nil},
	{"x86/r8d", x86, "-4@%r8d", Arg{Size: 4, Signed: true, Kind: ArgReg, Reg: "r8d"}, nil},
	{"x86/r8w", x86, "-2@%r8w", Arg{Size: 2, Signed: true, Kind: ArgReg, Reg: "r8w"}, nil},
	{"x86/r8b", x86, "1@%r8b", Arg{Size: 1, Kind: ArgReg, Reg: "r8b"}, nil},
	{"x86/r15", x86, "8@%r15", Arg{Size: 8, Kind: ArgReg, Reg: "r15"}, nil},
	{"x86/r15d", x86, "4@%r15d", Arg{Size: 4, Kind: ArgReg, Reg: "r15d"}, nil},
	{"x86/r12w", x86, "2@%r12w", Arg{Size: 2, Kind: ArgReg, Reg: "r12w"}, nil},
	{"x86/r11b", x86, "1@%r11b", Arg{Size: 1, Kind: ArgReg, Reg: "r11b"}, nil},
	{"x86/rip", x86, "8@%rip", Arg{Size: 8, Kind: ArgReg, Reg: "rip"}, nil},
	{"x86/xmm0 double", x86, "8f@%xmm0", Arg{Size: 8, Float: true, Kind: ArgReg, Reg: "xmm0"}, nil},
	{"x86/xmm15 float", x86, "4f@%xmm15", Arg{Size: 4, Float: true, Kind: ArgReg, Reg: "xmm15"}, nil},
	{"x86/float in gpr", x86, "4f@%edi", Arg{Size: 4, Float: true, Kind: ArgReg, Reg: "edi"}, nil},
	{"x86/long double reg", x86, "16f@%rax", Arg{Size: 16, Float: true, Kind: ArgReg, Reg: "rax"}, nil},
	{"x86/int128", x86, "-16@%rcx", Arg{Size: 16, Signed: true, Kind: ArgReg, Reg: "rcx"}, nil},
	{"x86/upper case", x86, "8@%RAX", Arg{Size: 8, Kind: ArgReg, Reg: "rax"}, nil},
	{"x86/no size", x86, "%rax", Arg{Kind: ArgReg, Reg: "rax"}, nil},
	{"x86/surrounding blanks", x86, " 8@%rax\t", Arg{Size: 8, Kind: ArgReg, Reg: "rax"}, nil},

	// x86-64 constants: the literal truncated to Size, then extended.
	{"x86/const", x86, "8@$123", Arg{Size: 8, Kind: ArgConst, Value: 123}, nil},
	{"x86/const u8 255", x86, "1@$255", Arg{Size: 1, Kind: ArgConst, Value: 255}, nil},
	{"x86/const s8 255", x86, "-1@$255", Arg{Size: 1, Signed: true, Kind: ArgConst, Value: -1}, nil},
	{"x86/const u8 -56", x86, "1@$-56", Arg{Size: 1, Kind: ArgConst, Value: 200}, nil},
	{"x86/const s8 -3", x86, "-1@$-3", Arg{Size: 1, Signed: true, Kind: ArgConst, Value: -3}, nil},
	{"x86/const u16 hex", x86, "2@$0x12345", Arg{Size: 2, Kind: ArgConst, Value: 0x2345}, nil},
	{"x86/const s16 min", x86, "-2@$0x8000", Arg{Size: 2, Signed: true, Kind: ArgConst, Value: -32768}, nil},
	{"x86/const s32 -1", x86, "-4@$-1", Arg{Size: 4, Signed: true, Kind: ArgConst, Value: -1}, nil},
	{"x86/const u32 -1", x86, "4@$-1", Arg{Size: 4, Kind: ArgConst, Value: 0xffffffff}, nil},
	{"x86/const s32 255", x86, "-4@$255", Arg{Size: 4, Signed: true, Kind: ArgConst, Value: 255}, nil},
	{"x86/const u64 max hex", x86, "8@$0xffffffffffffffff", Arg{Size: 8, Kind: ArgConst, Value: -1}, nil},
	{"x86/const u64 max dec", x86, "8@$18446744073709551615", Arg{Size: 8, Kind: ArgConst, Value: -1}, nil},
	{"x86/const u64 -1", x86, "8@$-1", Arg{Size: 8, Kind: ArgConst, Value: -1}, nil},
	{"x86/const s64 max", x86, "-8@$0x7fffffffffffffff", Arg{Size: 8, Signed: true, Kind: ArgConst, Value: 1<<63 - 1}, nil},
	{"x86/const negative hex", x86, "-4@$-0x10", Arg{Size: 4, Signed: true, Kind: ArgConst, Value: -16}, nil},
	{"x86/const size 16", x86, "16@$-1", Arg{Size: 16, Kind: ArgConst, Value: -1}, nil},
	{"x86/const no size", x86, "$5", Arg{Kind: ArgConst, Value: 5}, nil},

	// x86-64 memory: base + displacement.
	{"x86/mem neg", x86, "-4@-20(%rbp)", Arg{Size: 4, Signed: true, Kind: ArgMem, Reg: "rbp", Offset: -20}, nil},
	{"x86/mem neg large", x86, "-4@-1148(%rbp)", Arg{Size: 4, Signed: true, Kind: ArgMem, Reg: "rbp", Offset: -1148}, nil},
	{"x86/mem neg hex", x86, "8@-0x10(%rbp)", Arg{Size: 8, Kind: ArgMem, Reg: "rbp", Offset: -16}, nil},
	{"x86/mem pos", x86, "8@16(%rsp)", Arg{Size: 8, Kind: ArgMem, Reg: "rsp", Offset: 16}, nil},
	{"x86/mem pos hex", x86, "8@0x10(%rsp)", Arg{Size: 8, Kind: ArgMem, Reg: "rsp", Offset: 16}, nil},
	{"x86/mem no disp", x86, "8@(%rax)", Arg{Size: 8, Kind: ArgMem, Reg: "rax"}, nil},
	{"x86/mem r12", x86, "-4@(%r12)", Arg{Size: 4, Signed: true, Kind: ArgMem, Reg: "r12"}, nil},
	{"x86/mem 32-bit base", x86, "-4@8(%eax)", Arg{Size: 4, Signed: true, Kind: ArgMem, Reg: "eax", Offset: 8}, nil},
	{"x86/mem float", x86, "16f@-24(%rsp)", Arg{Size: 16, Float: true, Kind: ArgMem, Reg: "rsp", Offset: -24}, nil},
	{"x86/mem wrapping hex", x86, "8@0xfffffffffffffff0(%rbp)", Arg{Size: 8, Kind: ArgMem, Reg: "rbp", Offset: -16}, nil},
	{"x86/mem no size", x86, "-20(%rbp)", Arg{Kind: ArgMem, Reg: "rbp", Offset: -20}, nil},

	// x86-64 memory: SIB.
	{"x86/sib", x86, "-8@8(%rdx,%rax,8)", Arg{Size: 8, Signed: true, Kind: ArgMem, Reg: "rdx", Offset: 8, Index: "rax", Scale: 8}, nil},
	{"x86/sib neg", x86, "-1@-96(%rbp,%rax,8)", Arg{Size: 1, Signed: true, Kind: ArgMem, Reg: "rbp", Offset: -96, Index: "rax", Scale: 8}, nil},
	{"x86/sib no disp", x86, "-4@(%r9,%rax,4)", Arg{Size: 4, Signed: true, Kind: ArgMem, Reg: "r9", Index: "rax", Scale: 4}, nil},
	{"x86/sib zero disp", x86, "-4@0(%rbp,%rbx,4)", Arg{Size: 4, Signed: true, Kind: ArgMem, Reg: "rbp", Index: "rbx", Scale: 4}, nil},
	{"x86/sib no scale", x86, "1@(%rbp,%rax)", Arg{Size: 1, Kind: ArgMem, Reg: "rbp", Index: "rax", Scale: 1}, nil},
	{"x86/sib scale 2", x86, "2@4(%rsi,%r10,2)", Arg{Size: 2, Kind: ArgMem, Reg: "rsi", Offset: 4, Index: "r10", Scale: 2}, nil},
	{"x86/sib no base", x86, "4@(,%rax,4)", Arg{Size: 4, Kind: ArgMem, Index: "rax", Scale: 4}, nil},
	{"x86/sib blanks", x86, "8@-4(%rbp, %rax, 2)", Arg{Size: 8, Kind: ArgMem, Reg: "rbp", Offset: -4, Index: "rax", Scale: 2}, nil},

	// x86-64 memory: %rip-relative symbols in both orders.
	{"x86/rip off+sym", x86, "-8@24+gs(%rip)", Arg{Size: 8, Signed: true, Kind: ArgMem, Reg: "rip", Offset: 24, Symbol: "gs"}, nil},
	{"x86/rip sym+off", x86, "-8@gs+24(%rip)", Arg{Size: 8, Signed: true, Kind: ArgMem, Reg: "rip", Offset: 24, Symbol: "gs"}, nil},
	{"x86/rip sym", x86, "-4@gs(%rip)", Arg{Size: 4, Signed: true, Kind: ArgMem, Reg: "rip", Symbol: "gs"}, nil},
	{"x86/rip sym-off", x86, "-4@gs-8(%rip)", Arg{Size: 4, Signed: true, Kind: ArgMem, Reg: "rip", Offset: -8, Symbol: "gs"}, nil},
	{"x86/rip hex off", x86, "8@_ZN3foo3barE+0x10(%rip)", Arg{Size: 8, Kind: ArgMem, Reg: "rip", Offset: 16, Symbol: "_ZN3foo3barE"}, nil},
	{"x86/rip local label", x86, "8@.LC0(%rip)", Arg{Size: 8, Kind: ArgMem, Reg: "rip", Symbol: ".LC0"}, nil},
	{"x86/rip number", x86, "8@8(%rip)", Arg{Size: 8, Kind: ArgMem, Reg: "rip", Offset: 8}, nil},
	{"x86/rip long double", x86, "16f@gld(%rip)", Arg{Size: 16, Float: true, Kind: ArgMem, Reg: "rip", Symbol: "gld"}, nil},

	// x86-64 memory: absolute, no base register.
	{"x86/abs sym index", x86, "-4@earr(,%rax,4)", Arg{Size: 4, Signed: true, Kind: ArgMem, Index: "rax", Scale: 4, Symbol: "earr"}, nil},
	{"x86/abs sym+off index", x86, "-4@earr+12(,%rax,4)", Arg{Size: 4, Signed: true, Kind: ArgMem, Offset: 12, Index: "rax", Scale: 4, Symbol: "earr"}, nil},
	{"x86/abs number", x86, "-8@4096", Arg{Size: 8, Signed: true, Kind: ArgMem, Offset: 4096}, nil},
	{"x86/abs negative", x86, "-8@-8", Arg{Size: 8, Signed: true, Kind: ArgMem, Offset: -8}, nil},
	{"x86/abs hex", x86, "8@0x1000", Arg{Size: 8, Kind: ArgMem, Offset: 4096}, nil},
	{"x86/abs sym", x86, "8@counter", Arg{Size: 8, Kind: ArgMem, Symbol: "counter"}, nil},
	{"x86/abs sym+off", x86, "8@counter+8", Arg{Size: 8, Kind: ArgMem, Offset: 8, Symbol: "counter"}, nil},

	// x86-64 errors.
	{"x86/err unknown reg", x86, "8@%foo", Arg{Size: 8}, errInvalid},
	{"x86/err empty reg", x86, "8@%", Arg{Size: 8}, errInvalid},
	{"x86/err r16", x86, "8@%r16", Arg{Size: 8}, errInvalid},
	{"x86/err r7d", x86, "4@%r7d", Arg{Size: 4}, errInvalid},
	{"x86/err xmm32", x86, "8@%xmm32", Arg{Size: 8}, errInvalid},
	{"x86/err empty", x86, "", Arg{}, errInvalid},
	{"x86/err blank", x86, "  ", Arg{}, errInvalid},
	{"x86/err no operand", x86, "8@", Arg{Size: 8}, errInvalid},
	{"x86/err no size", x86, "@%rax", Arg{}, errInvalid},
	{"x86/err sign only", x86, "-@%rax", Arg{Signed: true}, errInvalid},
	{"x86/err size 0", x86, "0@%rax", Arg{}, errInvalid},
	{"x86/err size huge", x86, "99999999@%rax", Arg{}, errInvalid},
	{"x86/err size f-", x86, "4f-@%rax", Arg{}, errInvalid},
	{"x86/err const empty", x86, "8@$", Arg{Size: 8}, errInvalid},
	{"x86/err const bad hex", x86, "8@$0x", Arg{Size: 8}, errInvalid},
	{"x86/err const overflow", x86, "8@$18446744073709551616", Arg{Size: 8}, errInvalid},
	{"x86/err unclosed", x86, "8@(%rax", Arg{Size: 8}, errInvalid},
	{"x86/err nested", x86, "8@((%rax))", Arg{Size: 8}, errInvalid},
	{"x86/err trailing", x86, "8@8(%rax)x", Arg{Size: 8}, errInvalid},
	{"x86/err empty parens", x86, "8@()", Arg{Size: 8}, errInvalid},
	{"x86/err bad scale", x86, "8@8(%rax,%rbx,3)", Arg{Size: 8}, errInvalid},
	{"x86/err empty scale", x86, "8@(%rax,%rbx,)", Arg{Size: 8}, errInvalid},
	{"x86/err empty index", x86, "8@(%rax,)", Arg{Size: 8}, errInvalid},
	{"x86/err too many", x86, "8@(%rax,%rbx,4,5)", Arg{Size: 8}, errInvalid},
	{"x86/err rsp index", x86, "8@(%rax,%rsp,2)", Arg{Size: 8}, errInvalid},
	{"x86/err 8-bit base", x86, "8@(%al)", Arg{Size: 8}, errInvalid},
	{"x86/err xmm base", x86, "8@(%xmm0)", Arg{Size: 8}, errInvalid},
	{"x86/err base without %", x86, "8@(rax)", Arg{Size: 8}, errInvalid},
	{"x86/err rip index", x86, "8@8(%rip,%rax,1)", Arg{Size: 8}, errInvalid},
	{"x86/err two symbols", x86, "8@a+b(%rip)", Arg{Size: 8}, errInvalid},
	{"x86/err negated symbol", x86, "8@-sym(%rip)", Arg{Size: 8}, errInvalid},
	{"x86/err bad disp", x86, "8@12abc(%rax)", Arg{Size: 8}, errInvalid},
	{"x86/err double sign", x86, "8@--8(%rax)", Arg{Size: 8}, errInvalid},
	{"x86/err stray comma", x86, "8@8,%rax", Arg{Size: 8}, errInvalid},
	{"x86/err arm64 operand", x86, "-4@[sp, 36]", Arg{Size: 4, Signed: true}, errInvalid},
	{"x86/err bad colon", x86, "8@foo:bar", Arg{Size: 8}, errInvalid},

	// x86-64 well-formed but unsupported operands.
	{"x86/unsupported tls", x86, "-4@%fs:tv@tpoff", Arg{Size: 4, Signed: true}, ErrUnsupportedOperand},
	{"x86/unsupported tls mem", x86, "-8@%fs:(%rdx)", Arg{Size: 8, Signed: true}, ErrUnsupportedOperand},
	{"x86/unsupported reloc", x86, "8@sym@GOTPCREL(%rip)", Arg{Size: 8}, ErrUnsupportedOperand},
	{"x86/unsupported symbolic const", x86, "8@$sym", Arg{Size: 8}, ErrUnsupportedOperand},

	// arm64 registers.
	{"arm64/x0", arm64, "8@x0", Arg{Size: 8, Kind: ArgReg, Reg: "x0"}, nil},
	{"arm64/x30", arm64, "-8@x30", Arg{Size: 8, Signed: true, Kind: ArgReg, Reg: "x30"}, nil},
	{"arm64/w0", arm64, "-4@w0", Arg{Size: 4, Signed: true, Kind: ArgReg, Reg: "w0"}, nil},
	{"arm64/w30", arm64, "4@w30", Arg{Size: 4, Kind: ArgReg, Reg: "w30"}, nil},
	{"arm64/narrow from x", arm64, "1@x3", Arg{Size: 1, Kind: ArgReg, Reg: "x3"}, nil},
	{"arm64/sp", arm64, "8@sp", Arg{Size: 8, Kind: ArgReg, Reg: "sp"}, nil},
	{"arm64/xzr", arm64, "8@xzr", Arg{Size: 8, Kind: ArgReg, Reg: "xzr"}, nil},
	{"arm64/v0", arm64, "-8@v0", Arg{Size: 8, Signed: true, Kind: ArgReg, Reg: "v0"}, nil},
	{"arm64/d1", arm64, "8f@d1", Arg{Size: 8, Float: true, Kind: ArgReg, Reg: "d1"}, nil},
	{"arm64/s31", arm64, "4f@s31", Arg{Size: 4, Float: true, Kind: ArgReg, Reg: "s31"}, nil},
	{"arm64/upper case", arm64, "8@X1", Arg{Size: 8, Kind: ArgReg, Reg: "x1"}, nil},

	// arm64 constants: plain decimals, "#" accepted.
	{"arm64/const", arm64, "4@5", Arg{Size: 4, Kind: ArgConst, Value: 5}, nil},
	{"arm64/const s32 -1", arm64, "-4@-1", Arg{Size: 4, Signed: true, Kind: ArgConst, Value: -1}, nil},
	{"arm64/const u8 -56", arm64, "1@-56", Arg{Size: 1, Kind: ArgConst, Value: 200}, nil},
	{"arm64/const u16 -1", arm64, "2@-1", Arg{Size: 2, Kind: ArgConst, Value: 0xffff}, nil},
	{"arm64/const u64 -1", arm64, "8@-1", Arg{Size: 8, Kind: ArgConst, Value: -1}, nil},
	{"arm64/const hash", arm64, "-4@#16", Arg{Size: 4, Signed: true, Kind: ArgConst, Value: 16}, nil},
	{"arm64/const hex", arm64, "8@0x10", Arg{Size: 8, Kind: ArgConst, Value: 16}, nil},
	{"arm64/const zero", arm64, "4@0", Arg{Size: 4, Kind: ArgConst}, nil},

	// arm64 memory.
	{"arm64/mem", arm64, "8@[x0]", Arg{Size: 8, Kind: ArgMem, Reg: "x0"}, nil},
	{"arm64/mem sp", arm64, "-4@[sp]", Arg{Size: 4, Signed: true, Kind: ArgMem, Reg: "sp"}, nil},
	{"arm64/mem sp off", arm64, "-4@[sp, 12]", Arg{Size: 4, Signed: true, Kind: ArgMem, Reg: "sp", Offset: 12}, nil},
	{"arm64/mem no blank", arm64, "-4@[sp,36]", Arg{Size: 4, Signed: true, Kind: ArgMem, Reg: "sp", Offset: 36}, nil},
	{"arm64/mem neg", arm64, "8@[x0, -8]", Arg{Size: 8, Kind: ArgMem, Reg: "x0", Offset: -8}, nil},
	{"arm64/mem hash", arm64, "8@[x29, #-24]", Arg{Size: 8, Kind: ArgMem, Reg: "x29", Offset: -24}, nil},
	{"arm64/mem index", arm64, "8@[x0, x1]", Arg{Size: 8, Kind: ArgMem, Reg: "x0", Index: "x1", Scale: 1}, nil},
	{"arm64/mem index lsl", arm64, "8@[x0, x1, lsl 3]", Arg{Size: 8, Kind: ArgMem, Reg: "x0", Index: "x1", Scale: 8}, nil},
	{"arm64/mem index lsl hash", arm64, "2@[x2, x3, lsl #1]", Arg{Size: 2, Kind: ArgMem, Reg: "x2", Index: "x3", Scale: 2}, nil},
	{"arm64/mem index lsl 0", arm64, "1@[sp, x3, lsl 0]", Arg{Size: 1, Kind: ArgMem, Reg: "sp", Index: "x3", Scale: 1}, nil},
	{"arm64/mem float", arm64, "16f@[sp, 32]", Arg{Size: 16, Float: true, Kind: ArgMem, Reg: "sp", Offset: 32}, nil},

	// arm64 errors.
	{"arm64/err x31", arm64, "8@x31", Arg{Size: 8}, errInvalid},
	{"arm64/err x01", arm64, "8@x01", Arg{Size: 8}, errInvalid},
	{"arm64/err v32", arm64, "8@v32", Arg{Size: 8}, errInvalid},
	{"arm64/err x86 reg", arm64, "8@%rax", Arg{Size: 8}, errInvalid},
	{"arm64/err w base", arm64, "8@[w0]", Arg{Size: 8}, errInvalid},
	{"arm64/err xzr base", arm64, "8@[xzr]", Arg{Size: 8}, errInvalid},
	{"arm64/err v base", arm64, "8@[v0]", Arg{Size: 8}, errInvalid},
	{"arm64/err sp index", arm64, "8@[x0, sp]", Arg{Size: 8}, errInvalid},
	{"arm64/err empty", arm64, "8@[]", Arg{Size: 8}, errInvalid},
	{"arm64/err unclosed", arm64, "8@[x0", Arg{Size: 8}, errInvalid},
	{"arm64/err nested", arm64, "8@[[x0]]", Arg{Size: 8}, errInvalid},
	{"arm64/err empty offset", arm64, "8@[x0, ]", Arg{Size: 8}, errInvalid},
	{"arm64/err bad imm", arm64, "8@[x0, 1x]", Arg{Size: 8}, errInvalid},
	{"arm64/err bad const", arm64, "8@#", Arg{Size: 8}, errInvalid},
	{"arm64/err lsl 4", arm64, "8@[x0, x1, lsl 4]", Arg{Size: 8}, errInvalid},
	{"arm64/err imm shift", arm64, "8@[x0, 8, lsl 2]", Arg{Size: 8}, errInvalid},
	{"arm64/err bad shift", arm64, "8@[x0, x1, ror 2]", Arg{Size: 8}, errInvalid},
	{"arm64/err too many", arm64, "8@[x0, x1, lsl 2, x3]", Arg{Size: 8}, errInvalid},

	// arm64 well-formed but unsupported operands.
	{"arm64/unsupported extend", arm64, "8@[x0, w1, sxtw 3]", Arg{Size: 8}, ErrUnsupportedOperand},
	{"arm64/unsupported x extend", arm64, "8@[x0, x1, sxtx]", Arg{Size: 8}, ErrUnsupportedOperand},
	{"arm64/unsupported lo12", arm64, "8@[x0, #:lo12:sym]", Arg{Size: 8}, ErrUnsupportedOperand},
	{"arm64/unsupported writeback", arm64, "8@[x0, 8]!", Arg{Size: 8}, ErrUnsupportedOperand},

	// Other machines: the prefix parses, the operand does not.
	{"ppc64/unsupported", elf.EM_PPC64, "-4@-4(1)", Arg{Size: 4, Signed: true}, ErrUnsupportedArch},
	{"386/unsupported", elf.EM_386, "8f@%eax", Arg{Size: 8, Float: true}, ErrUnsupportedArch},
	{"riscv/no prefix", elf.EM_RISCV, "a0", Arg{}, ErrUnsupportedArch},
	{"riscv/bad prefix", elf.EM_RISCV, "0@a0", Arg{}, errInvalid},
}

func TestParseArg(t *testing.T) {
	for _, tt := range parseArgTests {
		t.Run(tt.name, func(t *testing.T) {
			want := tt.want
			want.Spec, want.Machine = tt.have, tt.m

			have, err := ParseArg(tt.m, tt.have)
			if have.Err != err {
				t.Fatalf("ParseArg(%q): Arg.Err %v differs from returned error %v", tt.have, have.Err, err)
			}
			got := have
			got.Err = nil
			if got != want {
				t.Errorf("ParseArg(%q)\nhave %+v\nwant %+v", tt.have, got, want)
			}

			if want.Kind == ArgInvalid {
				var ae *ArgError
				if !errors.As(err, &ae) {
					t.Fatalf("ParseArg(%q): have error %v, want an *ArgError", tt.have, err)
				}
				if ae.Index != -1 || ae.Spec != tt.have || ae.Reason == "" {
					t.Errorf("ParseArg(%q): have %#v, want Index -1, Spec, Reason", tt.have, ae)
				}
				switch tt.wantErr {
				case errInvalid:
					if ae.Err != nil {
						t.Errorf("ParseArg(%q): have sentinel %v, want none", tt.have, ae.Err)
					}
				default:
					if !errors.Is(err, tt.wantErr) {
						t.Errorf("ParseArg(%q): have %v, want it to wrap %v", tt.have, err, tt.wantErr)
					}
				}
				if s := have.String(); s != tt.have {
					t.Errorf("String() of a failed Arg: have %q, want the Spec %q", s, tt.have)
				}
				return
			}

			if err != nil {
				t.Fatalf("ParseArg(%q): %v", tt.have, err)
			}
			checkRoundTrip(t, have)
		})
	}
}

// checkRoundTrip asserts that a.String() parses back to a, apart from Spec.
func checkRoundTrip(t *testing.T, a Arg) {
	t.Helper()
	s := a.String()
	b, err := ParseArg(a.Machine, s)
	if err != nil {
		t.Errorf("ParseArg(String() = %q) of %q: %v", s, a.Spec, err)
		return
	}
	b.Spec = a.Spec
	if b != a {
		t.Errorf("round trip of %q through %q\nhave %+v\nwant %+v", a.Spec, s, b, a)
	}
}

func TestArgString(t *testing.T) {
	tests := []struct {
		m          elf.Machine
		have, want string
	}{
		{x86, "8@%RAX", "8@%rax"},
		{x86, "1@$-56", "1@$200"},
		{x86, "-1@$255", "-1@$-1"},
		{x86, "8@$0xffffffffffffffff", "8@$18446744073709551615"},
		{x86, "8@-0x10(%rbp)", "8@-16(%rbp)"},
		{x86, "-4@0(%rbp,%rbx,4)", "-4@(%rbp,%rbx,4)"},
		{x86, "1@(%rbp,%rax,1)", "1@(%rbp,%rax)"},
		{x86, "-8@24+gs(%rip)", "-8@gs+24(%rip)"},
		{x86, "-4@gs-0x8(%rip)", "-4@gs-8(%rip)"},
		{x86, "-4@earr+12(,%rax,4)", "-4@earr+12(,%rax,4)"},
		{x86, "8@0x1000", "8@4096"},
		{x86, "8@-4(%rbp, %rax, 2)", "8@-4(%rbp,%rax,2)"},
		{x86, "%rax", "%rax"},
		{arm64, "-4@[sp,36]", "-4@[sp, 36]"},
		{arm64, "8@[x0, #-8]", "8@[x0, -8]"},
		{arm64, "8@[x0, x1, lsl #3]", "8@[x0, x1, lsl 3]"},
		{arm64, "1@[x0, x1, lsl 0]", "1@[x0, x1]"},
		{arm64, "-4@#16", "-4@16"},
		{arm64, "1@-56", "1@200"},
		{elf.EM_PPC64, "8@%r1", "8@%r1"},
	}
	for _, tt := range tests {
		a, _ := ParseArg(tt.m, tt.have)
		if got := a.String(); got != tt.want {
			t.Errorf("ParseArg(%v, %q).String(): have %q, want %q", tt.m, tt.have, got, tt.want)
		}
	}
}

func TestSplitArgs(t *testing.T) {
	tests := []struct {
		name string
		have string
		want []string
	}{
		{"empty", "", nil},
		{"blank", " \t ", nil},
		{"one", "8@%rax", []string{"8@%rax"}},
		{"libbpf example", "-4@%esi -4@-24(%rbp) -4@%ecx 2@%ax 8@%rdx",
			[]string{"-4@%esi", "-4@-24(%rbp)", "-4@%ecx", "2@%ax", "8@%rdx"}},
		{"extra blanks", "  8@%rax \t 8@$1  ", []string{"8@%rax", "8@$1"}},
		{"arm64 blank in brackets", "-4@[sp, 36] 8@x0", []string{"-4@[sp, 36]", "8@x0"}},
		{"arm64 lsl", "8@[x0, x1, lsl 3] 4@5", []string{"8@[x0, x1, lsl 3]", "4@5"}},
		{"jdk arm64", "8@x27 8@[sp, 112] 8@[sp, 120]", []string{"8@x27", "8@[sp, 112]", "8@[sp, 120]"}},
		{"x86 blanks in parens", "-4@(%rbp, %rax, 4) 8@%rax", []string{"-4@(%rbp, %rax, 4)", "8@%rax"}},
		{"float prefix", "4f@%edi 8f@gd(%rip)", []string{"4f@%edi", "8f@gd(%rip)"}},
		{"unclosed bracket", "-4@[sp, 36 8@x0", []string{"-4@[sp, 36", "8@x0"}},
		{"stray close", "] 8@x0", []string{"]", "8@x0"}},
		{"junk kept with previous", "8@%rax junk 4@$1", []string{"8@%rax junk", "4@$1"}},
		{"no prefixes", "%rax -8(%rbp)", []string{"%rax", "-8(%rbp)"}},
		{"no prefixes arm64", "[sp, 8] x0", []string{"[sp, 8]", "x0"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := SplitArgs(tt.have); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("SplitArgs(%q)\nhave %q\nwant %q", tt.have, got, tt.want)
			}
		})
	}
}

func TestParseArgs(t *testing.T) {
	args, err := ParseArgs(x86, "8@%rax -4@%foo 4@$1 8@%fs:(%rax)")
	if len(args) != 4 {
		t.Fatalf("have %d args, want 4", len(args))
	}
	if err == nil {
		t.Fatal("have nil error, want the errors of arguments 1 and 3")
	}
	for i, wantBad := range []bool{false, true, false, true} {
		a := args[i]
		if (a.Err != nil) != wantBad {
			t.Errorf("args[%d].Err = %v, want failure %v", i, a.Err, wantBad)
			continue
		}
		if !wantBad {
			continue
		}
		var ae *ArgError
		if !errors.As(a.Err, &ae) || ae.Index != i {
			t.Errorf("args[%d].Err = %#v, want *ArgError with Index %d", i, a.Err, i)
		}
	}
	if !errors.Is(err, ErrUnsupportedOperand) {
		t.Errorf("joined error %v does not wrap ErrUnsupportedOperand of argument 3", err)
	}
	var ae *ArgError
	if !errors.As(err, &ae) || ae.Index != 1 || ae.Spec != "-4@%foo" {
		t.Errorf("errors.As(joined) = %#v, want argument 1", ae)
	}

	args, err = ParseArgs(arm64, "8@x22 -4@[sp, 36] 4@5")
	if err != nil || len(args) != 3 {
		t.Fatalf("ParseArgs arm64: %d args, %v", len(args), err)
	}
	if args[1].Kind != ArgMem || args[1].Reg != "sp" || args[1].Offset != 36 {
		t.Errorf("args[1] = %+v, want [sp, 36]", args[1])
	}

	args, err = ParseArgs(x86, "")
	if args != nil || err != nil {
		t.Errorf("ParseArgs(\"\") = %v, %v; want nil, nil", args, err)
	}
}

func TestArgErrorError(t *testing.T) {
	tests := []struct {
		have *ArgError
		want string
	}{
		{&ArgError{Index: 2, Spec: "8@%foo", Reason: `unknown register "foo"`},
			`argument 2 "8@%foo": unknown register "foo"`},
		{&ArgError{Index: -1, Spec: "4@8", Reason: "machine EM_PPC64", Err: ErrUnsupportedArch},
			`argument "4@8": machine EM_PPC64: unsupported architecture`},
	}
	for _, tt := range tests {
		if got := tt.have.Error(); got != tt.want {
			t.Errorf("Error(): have %q, want %q", got, tt.want)
		}
	}
}

func TestLookupRegister(t *testing.T) {
	tests := []struct {
		m    elf.Machine
		name string
		want Register
		ok   bool
	}{
		{x86, "rax", Register{"rax", 8, 0}, true},
		{x86, "eax", Register{"rax", 4, 0}, true},
		{x86, "ax", Register{"rax", 2, 0}, true},
		{x86, "al", Register{"rax", 1, 0}, true},
		{x86, "ah", Register{"rax", 1, 8}, true},
		{x86, "bh", Register{"rbx", 1, 8}, true},
		{x86, "ch", Register{"rcx", 1, 8}, true},
		{x86, "dh", Register{"rdx", 1, 8}, true},
		{x86, "sil", Register{"rsi", 1, 0}, true},
		{x86, "di", Register{"rdi", 2, 0}, true},
		{x86, "ebp", Register{"rbp", 4, 0}, true},
		{x86, "spl", Register{"rsp", 1, 0}, true},
		{x86, "r8", Register{"r8", 8, 0}, true},
		{x86, "r9d", Register{"r9", 4, 0}, true},
		{x86, "r10w", Register{"r10", 2, 0}, true},
		{x86, "r15b", Register{"r15", 1, 0}, true},
		{x86, "rip", Register{"rip", 8, 0}, true},
		{x86, "eip", Register{"rip", 4, 0}, true},
		{x86, "xmm7", Register{"xmm7", 16, 0}, true},
		{x86, "r7", Register{}, false},
		{x86, "r08", Register{}, false},
		{x86, "sih", Register{}, false},
		{x86, "%rax", Register{}, false},
		{x86, "RAX", Register{}, false},
		{x86, "", Register{}, false},
		{arm64, "x0", Register{"x0", 8, 0}, true},
		{arm64, "x30", Register{"x30", 8, 0}, true},
		{arm64, "w7", Register{"x7", 4, 0}, true},
		{arm64, "sp", Register{"sp", 8, 0}, true},
		{arm64, "wsp", Register{"sp", 4, 0}, true},
		{arm64, "xzr", Register{"xzr", 8, 0}, true},
		{arm64, "wzr", Register{"xzr", 4, 0}, true},
		{arm64, "v31", Register{"v31", 16, 0}, true},
		{arm64, "q1", Register{"v1", 16, 0}, true},
		{arm64, "d2", Register{"v2", 8, 0}, true},
		{arm64, "s3", Register{"v3", 4, 0}, true},
		{arm64, "h4", Register{"v4", 2, 0}, true},
		{arm64, "b5", Register{"v5", 1, 0}, true},
		{arm64, "x31", Register{}, false},
		{arm64, "rax", Register{}, false},
		{arm64, "", Register{}, false},
		{elf.EM_PPC64, "r1", Register{}, false},
	}
	for _, tt := range tests {
		got, ok := LookupRegister(tt.m, tt.name)
		if got != tt.want || ok != tt.ok {
			t.Errorf("LookupRegister(%v, %q): have %+v, %v; want %+v, %v", tt.m, tt.name, got, ok, tt.want, tt.ok)
		}
	}
}

func TestArgRegisters(t *testing.T) {
	tests := []struct {
		m               elf.Machine
		spec            string
		base, index     Register
		hasBase, hasIdx bool
	}{
		{x86, "1@%ah", Register{"rax", 1, 8}, Register{}, true, false},
		{x86, "-8@8(%rdx,%rax,8)", Register{"rdx", 8, 0}, Register{"rax", 8, 0}, true, true},
		{x86, "4@(,%eax,4)", Register{}, Register{"rax", 4, 0}, false, true},
		{x86, "-8@gs+24(%rip)", Register{"rip", 8, 0}, Register{}, true, false},
		{x86, "8@$1", Register{}, Register{}, false, false},
		{x86, "8@4096", Register{}, Register{}, false, false},
		{x86, "8@%bogus", Register{}, Register{}, false, false},
		{arm64, "-4@w3", Register{"x3", 4, 0}, Register{}, true, false},
		{arm64, "8@[x0, x1, lsl 3]", Register{"x0", 8, 0}, Register{"x1", 8, 0}, true, true},
		{arm64, "-4@[sp, 36]", Register{"sp", 8, 0}, Register{}, true, false},
	}
	for _, tt := range tests {
		a, _ := ParseArg(tt.m, tt.spec)
		base, ok := a.BaseRegister()
		if base != tt.base || ok != tt.hasBase {
			t.Errorf("%q BaseRegister(): have %+v, %v; want %+v, %v", tt.spec, base, ok, tt.base, tt.hasBase)
		}
		index, ok := a.IndexRegister()
		if index != tt.index || ok != tt.hasIdx {
			t.Errorf("%q IndexRegister(): have %+v, %v; want %+v, %v", tt.spec, index, ok, tt.index, tt.hasIdx)
		}
	}
}

func TestArgKindString(t *testing.T) {
	for k, want := range map[ArgKind]string{
		ArgInvalid: "invalid", ArgReg: "reg", ArgMem: "mem", ArgConst: "const", 9: "ArgKind(9)",
	} {
		if got := k.String(); got != want {
			t.Errorf("ArgKind(%d).String(): have %q, want %q", uint8(k), got, want)
		}
	}
}

func TestTruncate(t *testing.T) {
	tests := []struct {
		v      uint64
		size   int
		signed bool
		want   int64
	}{
		{255, 1, false, 255},
		{255, 1, true, -1},
		{0x1ff, 1, false, 0xff},
		{0x17f, 1, true, 127},
		{0x8000, 2, true, -32768},
		{0xffffff, 3, true, -1},
		{0xffffff, 3, false, 0xffffff},
		{1<<64 - 1, 4, false, 0xffffffff},
		{1<<64 - 1, 8, false, -1},
		{1<<64 - 1, 16, true, -1},
		{42, 0, false, 42},
	}
	for _, tt := range tests {
		if got := truncate(tt.v, tt.size, tt.signed); got != tt.want {
			t.Errorf("truncate(%#x, %d, %v): have %d, want %d", tt.v, tt.size, tt.signed, got, tt.want)
		}
	}
}
