// Probes whose argument specs cover the x86-64 operand forms GCC emits under
// sys/sdt.h's default "nor" constraint. TestArgsGCC compiles this file with
//
//	gcc -O0 -c argspec_gcc.c
//	gcc -O2 -c argspec_gcc.c
//	gcc -O2 -fno-pie -c argspec_gcc.c
//	gcc -O2 -fPIC -c argspec_gcc.c
//
// and parses every argument of every note (readelf -n). The strings that
// GCC 12.2 (Debian 12) produced are in argspec-x86_64.txt.
#include <sys/sdt.h>

struct s {
	int a;
	long b[8];
	char c;
} gs;
static int garr[32];
extern int earr[32];
long double gld = 1.5;
__int128 gi128 = 7;
volatile float gf = 2.5f;
double gd = 3.0;
__thread int tv;
extern __thread long etv;

int probes(int *p, long i, long j, struct s *s, unsigned char uc, short sh, float fl, double d)
{
	/* SIB: -4@(%r9,%rax,4) -8@8(%rdx,%rax,8) */
	DTRACE_PROBE4(t, sib, p[i], s->b[i], garr[i], garr[3]);
	/* %rip-relative with symbols: -8@24+gs(%rip), 16f@gld(%rip) */
	DTRACE_PROBE5(t, rip, gs.b[2], gs.c, gs.a, gld, gi128);
	/* constants printed before truncation: 1@$-56 is 200 */
	DTRACE_PROBE5(t, consts, 255, -1, (unsigned char)200, (signed char)-3, 0xffffffffffffffffULL);
	/* narrow registers and floats in general registers: 4f@%edi */
	DTRACE_PROBE5(t, small, uc, sh, fl, d, gf);
	DTRACE_PROBE3(t, floats, gd, (float)i, (long double)i);
	/* arrays decay to pointers: 8@%rsi */
	DTRACE_PROBE2(t, arr, garr, s->b);
	/* absolute addresses without -fpie: -4@earr(,%rdi,4) -8@-8 */
	DTRACE_PROBE4(t, abs, earr[i], earr[i + j], earr[2], earr[i + 3]);
	DTRACE_PROBE2(t, absnum, ((long *)0x1000)[0], ((long *)-8)[0]);
	/* thread-local storage: -4@%fs:tv@tpoff, not supported */
	DTRACE_PROBE2(t, tls, tv, etv);
	return garr[i + 1];
}
