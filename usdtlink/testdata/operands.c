// USDT probes whose argument specs cover every operand kind usdtlink
// encodes, for TestOperands. Most probes are written with STAP_PROBE_ASM
// inside an asm statement that first loads known values into registers, so
// each spec is exactly the operand named (GCC's own choice varies with its
// version and flags); t:natural lets gcc -O2 choose, and prints the values
// it passed. Protocol: each "fire" line on stdin fires
// every probe once, prints "natural V..." and "done".
#include <stdio.h>
#include <string.h>
#include <sys/sdt.h>

long gvals[4] = {0x0102030405060708L, -42, 0x7fff0000ffff0001L, -1};
int gint = -123456;
unsigned char gbytes[8] = {1, 2, 3, 0xfe, 5, 6, 7, 8};

struct s {
	int a;
	long b[8];
	unsigned char c;
} gs = {7, {10, 11, 12, 13, 14, 15, 16, 17}, 200};

__attribute__((noinline)) void fire_regs(void)
{
	__asm__ __volatile__(
		"movabs $0x1122334455667788, %%rax\n\t"
		"mov $-5, %%rcx\n\t"
		"mov $0x12345, %%edx\n\t"
		"mov $0x180, %%esi\n\t"
		"movabs $0x0123456789abcdef, %%r8\n\t"
		"mov $-7, %%r9d\n\t"
		STAP_PROBE_ASM(t, regs, 8@%%rax -4@%%ecx 2@%%dx -1@%%sil 8@%%r8 -4@%%r9d 4@%%r9d)
		::: "rax", "rcx", "rdx", "rsi", "r8", "r9", "memory");
}

__attribute__((noinline)) void fire_high(void)
{
	__asm__ __volatile__(
		"movabs $0x112233445566f788, %%rax\n\t"
		"movabs $0x8877665544332211, %%rbx\n\t"
		"mov $0x4321, %%ecx\n\t"
		"mov $0xa5b6, %%edx\n\t"
		STAP_PROBE_ASM(t, high, -1@%%ah 1@%%bh 1@%%ch 1@%%dh -1@%%dh 1@%%al)
		::: "rax", "rbx", "rcx", "rdx", "memory");
}

__attribute__((noinline)) void fire_mem(void)
{
	__asm__ __volatile__(
		"lea gvals(%%rip), %%rdx\n\t"
		STAP_PROBE_ASM(t, mem, -8@8(%%rdx) 4@(%%rdx) -2@16(%%rdx) 1@19(%%rdx) -8@24(%%rdx))
		::: "rdx", "memory");
}

__attribute__((noinline)) void fire_sib(void)
{
	__asm__ __volatile__(
		"lea gvals(%%rip), %%rdx\n\t"
		"mov $2, %%ecx\n\t"
		STAP_PROBE_ASM(t, sib, -8@(%%rdx,%%rcx,8) -8@-8(%%rdx,%%rcx,8) 4@4(%%rdx,%%rcx,4) 2@1(%%rdx,%%rcx) -8@8(%%rdx,%%rcx,8))
		::: "rcx", "rdx", "memory");
}

__attribute__((noinline)) void fire_rip(void)
{
	__asm__ __volatile__(
		STAP_PROBE_ASM(t, rip, -8@gvals+8(%%rip) 8@gvals(%%rip) -4@gint(%%rip) 1@gbytes+3(%%rip) -1@3+gbytes(%%rip))
		::: "memory");
}

__attribute__((noinline)) void fire_consts(void)
{
	__asm__ __volatile__(
		STAP_PROBE_ASM(t, consts, 4@$42 -8@$-1 1@$-56 -2@$-300 8@$78187493520)
		::: "memory");
}

__attribute__((noinline)) void fire_natural(long *p, long i, struct s *s, unsigned char uc, short sh)
{
	DTRACE_PROBE8(t, natural, p[i], s->b[i], gs.b[2], gs.c, uc, sh, gint, gvals[i + 1]);
	printf("natural %ld %ld %ld %u %u %d %d %ld\n", p[i], s->b[i], gs.b[2], (unsigned)gs.c, (unsigned)uc, (int)sh, gint, gvals[i + 1]);
}

int main(void)
{
	char line[64];
	setvbuf(stdout, NULL, _IOLBF, 0);
	while (fgets(line, sizeof line, stdin)) {
		if (strncmp(line, "fire", 4) != 0)
			continue;
		fire_regs();
		fire_high();
		fire_mem();
		fire_sib();
		fire_rip();
		fire_consts();
		volatile long i = 1;
		fire_natural(gvals, i, &gs, (unsigned char)(gs.c + 1), (short)-999);
		printf("done\n");
	}
	return 0;
}
