package gen

import (
	"bytes"
	"fmt"
	"regexp"
	"strings"
	"sync"

	"github.com/usdtkit/usdtkit/dynsdt"
)

// argC is the C parameter type of each ArgType in a generated header.
var argC = [...]string{
	dynsdt.Int8: "int8_t", dynsdt.Int16: "int16_t", dynsdt.Int32: "int32_t", dynsdt.Int64: "int64_t",
	dynsdt.Uint8: "uint8_t", dynsdt.Uint16: "uint16_t", dynsdt.Uint32: "uint32_t", dynsdt.Uint64: "uint64_t",
	dynsdt.Bool: "bool", dynsdt.Pointer: "void *", dynsdt.String: "const char *", dynsdt.Bytes: "const void *",
}

// macroName returns the name dtrace -h gives a probe's macros:
// PROVIDER_PROBE with each "__" of the probe made "_" (myapp,
// request__start → MYAPP_REQUEST_START), so C code written against a
// dtrace-generated header compiles against ours.
func macroName(provider, probe string) string {
	return strings.ToUpper(provider + "_" + strings.ReplaceAll(probe, "__", "_"))
}

// cUnsafe are names a header must not declare as functions: keywords of
// C (up to C23) and C++ (up to C++20), names <stdbool.h>, <stdint.h> and
// <stddef.h> define, macros GCC predefines in its GNU modes, and names of
// the C library and runtime that a program including the header is likely
// to use too. Built on first use: usdtkit links dynsdt, and every command
// would otherwise build it at start.
var cUnsafe = sync.OnceValue(func() map[string]bool {
	return wordSet(
		// C
		`auto break case char const continue default do double else enum extern float for goto if inline int long
	register restrict return short signed sizeof static struct switch typedef union unsigned void volatile while
	_Alignas _Alignof _Atomic _BitInt _Bool _Complex _Decimal128 _Decimal32 _Decimal64 _Generic _Imaginary
	_Noreturn _Static_assert _Thread_local alignas alignof bool constexpr false nullptr static_assert
	thread_local true typeof typeof_unqual`,
		// C++ (besides C's)
		`and and_eq asm bitand bitor catch char8_t char16_t char32_t class co_await co_return co_yield compl concept
	consteval constinit const_cast decltype delete dynamic_cast explicit export friend mutable namespace new
	noexcept not not_eq operator or or_eq private protected public reinterpret_cast requires static_cast
	template this throw try typeid typename using virtual wchar_t xor xor_eq`,
		// <stdbool.h>, <stdint.h>, <stddef.h>
		`int8_t int16_t int32_t int64_t uint8_t uint16_t uint32_t uint64_t intptr_t uintptr_t intmax_t uintmax_t
	int_least8_t int_least16_t int_least32_t int_least64_t uint_least8_t uint_least16_t uint_least32_t
	uint_least64_t int_fast8_t int_fast16_t int_fast32_t int_fast64_t uint_fast8_t uint_fast16_t uint_fast32_t
	uint_fast64_t size_t ptrdiff_t max_align_t offsetof NULL`,
		// GCC's predefined macros in -std=gnu* modes
		`linux unix i386`,
		// the C runtime and library
		`main stdin stdout stderr errno environ assert EOF FILE`,
	)
})

func wordSet(lists ...string) map[string]bool {
	m := make(map[string]bool)
	for _, l := range lists {
		for _, w := range strings.Fields(l) {
			m[w] = true
		}
	}
	return m
}

// stdintMacro matches the object-like and function-like macros of
// <stdint.h> (limits, widths and constant macros): a probe's macro must
// not redefine them (provider int8, probe max → INT8_MAX). Compiled on
// first use, as cUnsafe is built.
var stdintMacro = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^(U?INT(_LEAST|_FAST)?(8|16|32|64)|U?INTPTR|U?INTMAX|PTRDIFF|SIG_ATOMIC|SIZE|WCHAR|WINT)_(MIN|MAX|WIDTH|C)$`)
})

// headerProbe is what the header declares for one probe.
type headerProbe struct {
	// macro is the name of the probe's macros; "" for none, with why.
	macro, noMacro string
}

// headerProbes decides, per probe of p, which names the header declares,
// so that no declaration collides with a keyword, a name of the standard
// headers or a macro of the header itself.
func headerProbes(p *dynsdt.ProviderSpec) []headerProbe {
	guard := headerGuard(p)
	own := map[string]bool{guard: true, "USDTKIT_SEMAPHORE": true, "USDTKIT_UNLIKELY": true}
	macros := make(map[string]string) // macro name → probe that has it
	hs := make([]headerProbe, len(p.Probes))
	for i, pr := range p.Probes {
		m := macroName(p.Name, pr.Name)
		other, dup := macros[m]
		if !dup {
			other, dup = macros[m+"_ENABLED"]
		}
		switch {
		case dup:
			hs[i].noMacro = "probe " + other + " has macros of these names"
		case own[m] || own[m+"_ENABLED"] || stdintMacro().MatchString(m) || cUnsafe()[m]:
			hs[i].noMacro = "the name is taken by a standard header or this header"
		default:
			hs[i].macro = m
			macros[m] = pr.Name
			macros[m+"_ENABLED"] = pr.Name
		}
	}
	return hs
}

func headerGuard(p *dynsdt.ProviderSpec) string { return "USDTKIT_" + strings.ToUpper(p.Name) + "_H" }

// Header returns a C header for the shared object dynsdt.Build writes
// for p (dynsdt.SOName), to be used from C or any FFI. Per probe it declares its
// stub by its fire symbol (dynsdt.FireSymbol), "void
// myapp_request__start_fire(const char *, int32_t);", which fires the probe
// when called; its semaphore, "extern volatile unsigned short
// myapp_request__start_semaphore;", non-zero while a tracer that uses
// semaphores is attached; as dtrace -h names them,
// MYAPP_REQUEST_START_ENABLED() and MYAPP_REQUEST_START(arg0, arg1). Every
// name it declares starts with the provider's, as every symbol of the
// object does: a probe named write cannot take the place of the C
// library's function in a program. Probes whose macro names coincide (a__b and a_b) get
// macros only for the first, and no probe gets macros named like one of
// <stdint.h> (INT8_MAX). p should be valid (dynsdt.ProviderSpec.Validate); an invalid p gives a
// header that does not compile, never a panic.
func Header(p *dynsdt.ProviderSpec) []byte {
	var b bytes.Buffer
	w := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	guard := headerGuard(p)
	w("/* Code generated by usdtkit gen; DO NOT EDIT. */\n\n")
	w("/*\n * USDT probes of provider %s, defined in %s: link with it or dlopen it.\n", p.Name, dynsdt.SOName(p.Name))
	w(" * Calling a probe's function fires the probe; guard the call and the work\n")
	w(" * that computes its arguments with the probe's _ENABLED() macro.\n */\n\n")
	w("#ifndef %s\n#define %s\n\n", guard, guard)
	w("#include <stdbool.h>\n#include <stdint.h>\n\n")
	w("#ifdef __cplusplus\nextern \"C\" {\n#endif\n\n")
	// A plain extern declaration lets the compiler address the semaphore
	// directly and the linker give the executable a copy of it (a copy
	// relocation): the program would read its own copy while the kernel
	// counts in the shared object's. A weak declaration makes the compiler
	// go through the GOT, to the object's semaphore; its address is NULL
	// when the program does not link the object (with --as-needed, a
	// program that never calls a stub does not), which _ENABLED() checks.
	w("#ifndef USDTKIT_SEMAPHORE\n#if defined(__GNUC__) || defined(__clang__)\n")
	w("#define USDTKIT_SEMAPHORE __attribute__((weak))\n#else\n#define USDTKIT_SEMAPHORE\n#endif\n#endif\n")
	w("#ifndef USDTKIT_UNLIKELY\n#if defined(__GNUC__) || defined(__clang__)\n")
	w("#define USDTKIT_UNLIKELY(x) __builtin_expect(!!(x), 0)\n#else\n#define USDTKIT_UNLIKELY(x) (x)\n#endif\n#endif\n")
	for i, h := range headerProbes(p) {
		pr := p.Probes[i]
		var types, params []string
		for i, a := range pr.Args {
			c := "uint64_t" // invalid types: Validate would have said so
			if int(a) < len(argC) && argC[a] != "" {
				c = argC[a]
			}
			types = append(types, c)
			// The macro's body names only the fire symbol, which ends
			// in "_fire": argN never clashes with it.
			params = append(params, fmt.Sprintf("arg%d", i))
		}
		proto := strings.Join(types, ", ")
		if proto == "" {
			proto = "void"
		}
		sem, fire := dynsdt.SemaphoreSymbol(p.Name, pr.Name), dynsdt.FireSymbol(p.Name, pr.Name)
		w("\n/* %s:%s */\n", p.Name, pr.Name)
		w("void %s(%s);\n", fire, proto)
		w("extern volatile unsigned short %s USDTKIT_SEMAPHORE;\n", sem)
		if h.macro == "" {
			m := macroName(p.Name, pr.Name)
			w("/* no %s_ENABLED() and %s(): %s */\n", m, m, h.noMacro)
			continue
		}
		w("#define %s_ENABLED() USDTKIT_UNLIKELY(&%s != 0 && %s != 0)\n", h.macro, sem, sem)
		w("#define %s(%s) %s(%s)\n", h.macro, strings.Join(params, ", "), fire, strings.Join(params, ", "))
	}
	w("\n#ifdef __cplusplus\n}\n#endif\n\n#endif /* %s */\n", guard)
	return b.Bytes()
}
