package sdt

import (
	"debug/elf"
	"errors"
	"strconv"
	"strings"
)

// Argument specs
//
// Every NT_STAPSDT note ends in an argument string such as
//
//	-4@%esi 8@-1148(%rbp) 8@$123 -4@[sp, 36]
//
// holding one spec per probe argument, separated by single spaces (sys/sdt.h
// _SDT_ASM_TEMPLATE_n puts one blank between _SDT_ARGFMT outputs). Each spec
// is [-]N[f]@OPERAND:
//
//   - N is sizeof the argument in bytes (_SDT_ARGSIZE; arrays and functions
//     decay to a pointer). 1, 2, 4 and 8 are the common sizes; long double and
//     __int128 give 16 on x86-64, and a struct passed by value could give any
//     size. We accept 1..maxArgSize. A spec without "N@" (notes written before
//     sys/sdt.h recorded sizes) parses with Size 0, meaning "unknown, read a
//     machine word".
//   - "-" marks a signed type (_SDT_ARGSIGNED); floating-point values are never
//     signed by sys/sdt.h, but "-" with "f" is accepted.
//   - "f" marks a floating-point type: systemtap 4.6+ sys/sdt.h emits it when
//     __builtin_classify_type is real_type_class (8). The value is still the
//     raw bytes; on x86-64 GCC usually puts floats in a general register
//     ("4f@%edi") or memory ("8f@gd(%rip)", "16f@-24(%rsp)").
//   - OPERAND is the compiler's assembler operand for the value, chosen by the
//     constraint STAP_SDT_ARG_CONSTRAINT, "nor" by default: an integer
//     constant (n), an offsettable memory reference (o) or a register (r). It
//     is printed in the target's assembler syntax, so its grammar depends on
//     the ELF machine, chosen at run time (argspec_x86.go, argspec_aarch64.go).
//
// Operand forms on x86-64 (AT&T syntax, GCC/GAS):
//
//	%rax %eax %ax %al %ah %r8d %r8w %r8b %sil %rip %xmm0   register (ArgReg)
//	$123 $-1 $0x10                                         constant (ArgConst)
//	-20(%rbp) 0x10(%rsp) (%rax)                            base + displacement
//	8(%rdx,%rax,8) (%rbp,%rax) (,%rax,4)                   SIB (Index, Scale)
//	24+gs(%rip) gs+24(%rip) gs-8(%rip) gs(%rip)            %rip-relative (Symbol)
//	garr(,%rdi,4) garr+12(,%rdi,4) -8 4096 sym             absolute, no base
//
// Operand forms on arm64 (GCC aarch64_print_operand/_address: no "#" before
// immediates, ", " between address parts):
//
//	x0..x30 w0..w30 sp v0..v31 (and b/h/s/d/q aliases)     register
//	4 -1 (and "#4")                                        constant
//	[x0] [sp, 36] [x0, -8]                                 base + offset
//	[x0, x1] [x0, x1, lsl 3]                               base + index << shift
//
// Not supported (the spec parses to an *ArgError wrapping
// ErrUnsupportedOperand, with Size/Signed/Float filled in): x86 segment
// overrides used for TLS ("%fs:tv@tpoff", "%fs:(%rax)"), relocation
// operators ("sym@GOTPCREL", arm64 "#:lo12:sym"), symbolic constants
// ("$sym"), arm64 extended 32-bit index registers ("[x0, w1, sxtw]") and
// writeback ("[x0, 8]!"). Machines other than EM_X86_64 and EM_AARCH64 give
// an *ArgError wrapping ErrUnsupportedArch, again with the "N@" prefix
// parsed when possible: list the raw spec, parse what we can.
//
// Value semantics: a tracer reads Size bytes from the register (its low
// bytes, or bits Shift.. for %ah-style aliases) or from memory at
// base + index*scale + offset (+ symbol address for %rip-relative and
// absolute forms), then sign-extends (Signed) or zero-extends to 64 bits.
// sys/sdt.h's note on gdb PR24541 says the size before "@" governs when it
// disagrees with the register alias width. Constants are reported the same
// way: the literal as written is truncated to Size bytes and extended, so
// GCC's "1@$-56" for (unsigned char)200 reports 200, and "8@$-1" for
// ULLONG_MAX reports the pattern 0xffffffffffffffff. Arg.Value holds that
// 64-bit pattern.
//
// Splitting: an operand may contain blanks ("-4@[sp, 36]"), so SplitArgs
// splits at blanks outside [] and (), and starts a new spec only at a word
// that looks like "[-]N[f]@" (unless no word in the string does, as in the
// size-less old format).
//
// Sources: sourceware.org/systemtap/wiki/UserSpaceProbeImplementation;
// systemtap includes/sys/sdt.h (_SDT_ARGFMT, _SDT_ARG, _SDT_DEF_MACROS, the
// PR24541 note); libbpf src/usdt.c parse_usdt_arg (x86-64 SIB support in
// libbpf 1.7, arm64 "[sp, 96]" and "4@5" forms); bcc src/cc/usdt/usdt_args.cc
// (arm64 "8@[sp, 112]" from OpenJDK, bcc PR 2790); libbpf issue 796 (arm64
// "-8@v0"). The x86-64 corpus in testdata/argspec-x86_64.txt comes from real
// binaries and GCC 12 output; testdata/argspec-aarch64.txt documents the
// origin of each arm64 form.

// maxArgSize bounds N in "N@": sizes come from sizeof and are small; the bound
// keeps a hostile note from claiming a 4 GiB read.
const maxArgSize = 1 << 16

// ErrUnsupportedArch is wrapped by the *ArgError of a spec whose ELF machine
// has no operand parser (only EM_X86_64 and EM_AARCH64 have one).
var ErrUnsupportedArch = errors.New("unsupported architecture")

// ErrUnsupportedOperand is wrapped by the *ArgError of a spec whose operand is
// well-formed assembler but cannot be described by Arg, such as a TLS access
// through %fs or a relocation operator like "@tpoff".
var ErrUnsupportedOperand = errors.New("unsupported operand")

// ArgKind says where an argument's value is.
type ArgKind uint8

const (
	// ArgInvalid is the kind of an argument that did not parse.
	ArgInvalid ArgKind = iota
	// ArgReg: the value is in register Reg.
	ArgReg
	// ArgMem: the value is in memory at Reg + Index*Scale + Offset (+ Symbol).
	ArgMem
	// ArgConst: the value is the constant Value.
	ArgConst
)

func (k ArgKind) String() string {
	switch k {
	case ArgInvalid:
		return "invalid"
	case ArgReg:
		return "reg"
	case ArgMem:
		return "mem"
	case ArgConst:
		return "const"
	}
	return "ArgKind(" + strconv.Itoa(int(k)) + ")"
}

// Register is a resolved register operand, for code generation (BPF reads
// pt_regs). Registers that pt_regs does not hold (x86 %xmm, arm64 v0..v31,
// xzr) resolve too; code generators must reject what they cannot read. It is
// plain data, safe to copy and to use concurrently.
type Register struct {
	// Name is the canonical full-width register: "rax", "r8", "rip", "rsp",
	// "xmm0"; arm64: "x0".."x30", "sp", "xzr", "v0".."v31".
	Name string
	// Width is the number of bytes the alias covers: %eax 4, %ah 1, w0 4,
	// xmm0 16.
	Width int
	// Shift is the bit position of the alias within Name: 8 for %ah, %bh,
	// %ch and %dh, otherwise 0.
	Shift int
}

// Arg is one parsed argument spec. It is plain data, safe to copy and to use
// concurrently.
type Arg struct {
	// Spec is the argument as written, e.g. "-4@-20(%rbp)".
	Spec    string
	Machine elf.Machine
	// Size is the number of bytes read and reported: 1, 2, 4, 8, sometimes
	// 16; 0 when the spec has no "N@" prefix.
	Size   int
	Signed bool
	Float  bool
	Kind   ArgKind
	// Reg is, for ArgReg, the register as written, lower case, without "%".
	// For ArgMem it is the base register as written: "rip" for
	// %rip-relative operands, "" for an absolute address.
	Reg string
	// Offset is the ArgMem displacement; for symbolic operands only its
	// numeric part ("gs+24(%rip)" has Offset 24 and Symbol "gs").
	Offset int64
	// Index is the ArgMem index register as written (x86 SIB, arm64
	// register offset), "" if none.
	Index string
	// Scale multiplies Index: 1, 2, 4 or 8; 0 when there is no index.
	Scale int
	// Symbol is the ArgMem symbol of a %rip-relative or absolute operand,
	// "" if none. Its address is added to the effective address.
	Symbol string
	// Value is, for ArgConst, the 64-bit pattern a tracer reports: the
	// literal truncated to Size bytes, then sign-extended if Signed, else
	// zero-extended. Interpret it as uint64 when !Signed.
	Value int64
	// Err is non-nil (an *ArgError) when Spec did not parse. Then only
	// Spec, Machine and, if the "N@" prefix parsed, Size, Signed and Float
	// are meaningful.
	Err error
}

// ArgError describes an argument spec that did not parse.
type ArgError struct {
	// Index is the position of the spec in its argument string, from 0
	// (bpftrace's arg0); -1 when the error comes from ParseArg.
	Index int
	// Spec is the spec as written.
	Spec string
	// Reason says what is wrong, quoting the offending part.
	Reason string
	// Err is a sentinel the error refines (ErrUnsupportedArch,
	// ErrUnsupportedOperand), or nil.
	Err error
}

func (e *ArgError) Error() string {
	var b strings.Builder
	b.WriteString("argument ")
	if e.Index >= 0 {
		b.WriteString(strconv.Itoa(e.Index))
		b.WriteByte(' ')
	}
	b.WriteString(strconv.Quote(e.Spec))
	if e.Reason != "" {
		b.WriteString(": ")
		b.WriteString(e.Reason)
	}
	if e.Err != nil {
		b.WriteString(": ")
		b.WriteString(e.Err.Error())
	}
	return b.String()
}

// Unwrap returns the sentinel the error refines, or nil.
func (e *ArgError) Unwrap() error { return e.Err }

// operandError is what the per-machine operand parsers return.
type operandError struct {
	reason   string
	sentinel error
}

func invalid(reason string) *operandError { return &operandError{reason: reason} }

func unsupported(reason string) *operandError {
	return &operandError{reason: reason, sentinel: ErrUnsupportedOperand}
}

// ParseArg parses one argument spec of a probe in an object file for machine
// m. On failure it returns the partly filled Arg (Err set) and the same
// *ArgError, with Index -1. Surrounding blanks are ignored. It never panics.
func ParseArg(m elf.Machine, spec string) (Arg, error) {
	a := Arg{Spec: spec, Machine: m}
	fail := func(reason string, sentinel error) (Arg, error) {
		e := &ArgError{Index: -1, Spec: spec, Reason: reason, Err: sentinel}
		a = Arg{Spec: spec, Machine: m, Size: a.Size, Signed: a.Signed, Float: a.Float, Err: e}
		return a, e
	}

	s := strings.Trim(spec, " \t\n\r\v\f")
	if s == "" {
		return fail("empty argument", nil)
	}
	op, reason := parsePrefix(&a, s)
	if reason != "" {
		return fail(reason, nil)
	}
	if op == "" {
		return fail("missing operand after \"@\"", nil)
	}

	var oe *operandError
	switch m {
	case elf.EM_X86_64:
		oe = parseOperandX86(&a, op)
	case elf.EM_AARCH64:
		oe = parseOperandAArch64(&a, op)
	default:
		return fail("machine "+m.String(), ErrUnsupportedArch)
	}
	if oe != nil {
		return fail(oe.reason, oe.sentinel)
	}
	if a.Kind == ArgConst {
		a.Value = truncate(uint64(a.Value), a.Size, a.Signed)
	}
	return a, nil
}

// ParseArgs splits s with SplitArgs and parses each spec. It returns one Arg
// per spec, always, in order; the error is the errors.Join of the *ArgError
// of each spec that failed (Index set, and the same error is in that Arg's
// Err), nil if all parsed.
func ParseArgs(m elf.Machine, s string) ([]Arg, error) {
	specs := SplitArgs(s)
	if len(specs) == 0 {
		return nil, nil
	}
	args := make([]Arg, len(specs))
	var errs []error
	for i, spec := range specs {
		a, err := ParseArg(m, spec)
		if err != nil {
			var ae *ArgError
			if errors.As(err, &ae) {
				ae.Index = i
			}
			errs = append(errs, err)
		}
		args[i] = a
	}
	return args, errors.Join(errs...)
}

// parsePrefix fills a.Size, a.Signed and a.Float from the "[-]N[f]@" prefix of
// s and returns the operand after it. A spec whose text before the first "@"
// is not made of "-", digits and "f" has no prefix (the old size-less format,
// or an operand containing "@"): the whole of s is the operand.
func parsePrefix(a *Arg, s string) (operand, reason string) {
	at := strings.IndexByte(s, '@')
	if at < 0 {
		return s, ""
	}
	p := s[:at]
	for i := 0; i < len(p); i++ {
		if c := p[i]; c != '-' && c != 'f' && !isDigit(c) {
			return s, ""
		}
	}
	q := p
	if strings.HasPrefix(q, "-") {
		a.Signed = true
		q = q[1:]
	}
	if strings.HasSuffix(q, "f") {
		a.Float = true
		q = q[:len(q)-1]
	}
	if q == "" {
		return "", "missing size before \"@\""
	}
	n := 0
	for i := 0; i < len(q); i++ {
		if !isDigit(q[i]) {
			return "", "malformed size " + strconv.Quote(p)
		}
		n = n*10 + int(q[i]-'0')
		if n > maxArgSize {
			return "", "size " + strconv.Quote(q) + " exceeds " + strconv.Itoa(maxArgSize)
		}
	}
	if n == 0 {
		return "", "size 0"
	}
	a.Size = n
	return strings.Trim(s[at+1:], " \t"), ""
}

// truncate returns the 64-bit pattern a tracer reports for constant v of
// size bytes: v cut to size bytes, then sign- or zero-extended.
func truncate(v uint64, size int, signed bool) int64 {
	if size <= 0 || size >= 8 {
		return int64(v)
	}
	bits := uint(size) * 8
	v &= 1<<bits - 1
	if signed && v>>(bits-1)&1 == 1 {
		v |= ^uint64(0) << bits
	}
	return int64(v)
}

// String returns the spec in canonical form: ParseArg(a.Machine, a.String())
// gives an Arg equal to a apart from Spec. It returns Spec when a did not
// parse.
func (a Arg) String() string {
	if a.Err != nil || a.Kind == ArgInvalid {
		return a.Spec
	}
	var b strings.Builder
	if a.Size > 0 {
		if a.Signed {
			b.WriteByte('-')
		}
		b.WriteString(strconv.Itoa(a.Size))
		if a.Float {
			b.WriteByte('f')
		}
		b.WriteByte('@')
	}
	switch a.Machine {
	case elf.EM_X86_64:
		formatOperandX86(&b, a)
	case elf.EM_AARCH64:
		formatOperandAArch64(&b, a)
	default:
		return a.Spec
	}
	return b.String()
}

// constString formats a constant the way ParseArg reads it back.
func (a Arg) constString() string {
	if a.Signed || a.Size == 0 || a.Size > 8 {
		return strconv.FormatInt(a.Value, 10)
	}
	return strconv.FormatUint(uint64(a.Value), 10)
}

// BaseRegister resolves Reg for ArgReg and ArgMem arguments. It reports false
// for constants, absolute addresses and arguments that did not parse.
func (a Arg) BaseRegister() (Register, bool) {
	if a.Err != nil || (a.Kind != ArgReg && a.Kind != ArgMem) || a.Reg == "" {
		return Register{}, false
	}
	return LookupRegister(a.Machine, a.Reg)
}

// IndexRegister resolves Index of an ArgMem argument; it reports false when
// there is no index register.
func (a Arg) IndexRegister() (Register, bool) {
	if a.Err != nil || a.Kind != ArgMem || a.Index == "" {
		return Register{}, false
	}
	return LookupRegister(a.Machine, a.Index)
}

// LookupRegister resolves a register name as it appears in Arg.Reg (lower
// case, without "%") for machine m.
func LookupRegister(m elf.Machine, name string) (Register, bool) {
	switch m {
	case elf.EM_X86_64:
		return lookupX86(name)
	case elf.EM_AARCH64:
		return lookupAArch64(name)
	}
	return Register{}, false
}

// SplitArgs splits an argument string into specs. It splits at blanks, but
// not inside [] or () groups, and when any word of s starts like "[-]N[f]@"
// it starts a new spec only at such a word, so "-4@[sp, 36] 8@x0" gives
// "-4@[sp, 36]" and "8@x0". An unclosed group ends at the next word that
// starts like a spec. The specs are substrings of s.
func SplitArgs(s string) []string {
	type span struct{ start, end int }

	// Bracket groups: words joined while a [ or ( is open.
	var groups []span
	depth := 0
	for i := 0; i < len(s); {
		for i < len(s) && isBlank(s[i]) {
			i++
		}
		if i == len(s) {
			break
		}
		start := i
		for i < len(s) && !isBlank(s[i]) {
			i++
		}
		word := s[start:i]
		if len(groups) > 0 && depth > 0 && !looksLikeSpecStart(word) {
			groups[len(groups)-1].end = i
		} else {
			groups = append(groups, span{start, i})
			depth = 0
		}
		for j := 0; j < len(word); j++ {
			switch word[j] {
			case '[', '(':
				depth++
			case ']', ')':
				if depth > 0 {
					depth--
				}
			}
		}
	}
	if len(groups) == 0 {
		return nil
	}

	anyStart := false
	for _, g := range groups {
		if looksLikeSpecStart(s[g.start:g.end]) {
			anyStart = true
			break
		}
	}
	specs := make([]span, 0, len(groups))
	for _, g := range groups {
		if anyStart && len(specs) > 0 && !looksLikeSpecStart(s[g.start:g.end]) {
			specs[len(specs)-1].end = g.end
			continue
		}
		specs = append(specs, g)
	}
	out := make([]string, len(specs))
	for i, sp := range specs {
		out[i] = s[sp.start:sp.end]
	}
	return out
}

// looksLikeSpecStart reports whether w starts with "[-]N[f]@".
func looksLikeSpecStart(w string) bool {
	i := 0
	if i < len(w) && w[i] == '-' {
		i++
	}
	d := i
	for i < len(w) && isDigit(w[i]) {
		i++
	}
	if i == d {
		return false
	}
	if i < len(w) && w[i] == 'f' {
		i++
	}
	return i < len(w) && w[i] == '@'
}

func isBlank(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// parseUint parses a decimal or 0x-prefixed hexadecimal number that fits in
// 64 bits.
func parseUint(s string) (uint64, bool) {
	if s == "" {
		return 0, false
	}
	base := uint64(10)
	if len(s) > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X') {
		base = 16
		s = s[2:]
	}
	var v uint64
	for i := 0; i < len(s); i++ {
		var d uint64
		switch c := s[i]; {
		case isDigit(c):
			d = uint64(c - '0')
		case base == 16 && 'a' <= c && c <= 'f':
			d = uint64(c-'a') + 10
		case base == 16 && 'A' <= c && c <= 'F':
			d = uint64(c-'A') + 10
		default:
			return 0, false
		}
		if v > (^uint64(0)-d)/base {
			return 0, false
		}
		v = v*base + d
	}
	return v, true
}

// parseInt parses an optionally negated parseUint number as a 64-bit pattern
// (two's complement, so "-1" and "18446744073709551615" are the same).
func parseInt(s string) (int64, bool) {
	neg := strings.HasPrefix(s, "-")
	if neg {
		s = s[1:]
	}
	v, ok := parseUint(s)
	if !ok {
		return 0, false
	}
	if neg {
		v = -v
	}
	return int64(v), true
}

// parseRegNum parses the decimal register number of names like "r12" or
// "x30": no sign, no leading zero, at most max.
func parseRegNum(s string, max int) (int, bool) {
	if s == "" || len(s) > 2 || (len(s) > 1 && s[0] == '0') {
		return 0, false
	}
	n := 0
	for i := 0; i < len(s); i++ {
		if !isDigit(s[i]) {
			return 0, false
		}
		n = n*10 + int(s[i]-'0')
	}
	return n, n <= max
}
