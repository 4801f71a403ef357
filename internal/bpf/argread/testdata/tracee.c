/*
 * tracee: a program with USDT probes whose arguments cover what GCC emits,
 * for the end-to-end tests of package bpfgen (e2e_test.go). The tests build
 * it at test time, for example:
 *
 *	gcc -O0 -g -o tracee tracee.c
 *	gcc -O2 -g -o tracee tracee.c
 *	gcc -O2 -g -fno-pie -no-pie -o tracee tracee.c
 *
 * It reads commands from stdin, one per line, and answers each with the
 * lines below and then "done":
 *
 *	run N   fire every probe but "sem" N times; after each hit print
 *	        "PROBE V0 V1 ...", the values it passed (strings as text)
 *	sem     print "sem enabled" and fire probe "sem" if its semaphore is
 *	        non-zero, else print "sem disabled"
 *	loop N  fire probe "bench" N times, with arguments k (0..N-1) and
 *	        seed's value, and print "loop NS", the time taken
 *	floop N as loop, with probe "fbench", which sits in a function of
 *	        its own that the loop calls
 *	quit    exit
 *
 * Every probe has a semaphore (_SDT_HAS_SEMAPHORES applies to the whole
 * file), so each is attached with a reference counter; only "sem" checks
 * its semaphore.
 */
#define _SDT_HAS_SEMAPHORES 1
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/sdt.h>

#define SEMAPHORE(name) \
	__extension__ unsigned short tracee_##name##_semaphore \
	__attribute__((unused)) __attribute__((section(".probes")))
SEMAPHORE(ints);
SEMAPHORE(stack);
SEMAPHORE(consts);
SEMAPHORE(str);
SEMAPHORE(global);
SEMAPHORE(inl);
SEMAPHORE(wide);
SEMAPHORE(sem);
SEMAPHORE(bench);
SEMAPHORE(fbench);

#define ENABLED(name) \
	__builtin_expect(*(volatile unsigned short *)&tracee_##name##_semaphore, 0)

/* Globals, read through %rip (PIE) or absolute addresses (-no-pie). */
long g_long = -123456789012L;
int g_arr[4] = {10, -20, 30, -40};

/* Keeps -O2 from folding the probe arguments into constants. */
volatile int seed = 1;

/* The "bench" probe inside a function that is called, not inlined, as
 * most probes in real code sit: after the int3 the kernel returns into a
 * function that soon returns itself, which costs more per hit on some
 * machines than a site in the loop's own body (see bench/). */
static __attribute__((noinline)) void fbench(int k, int s)
{
	STAP_PROBE2(tracee, fbench, k, s);
	__asm__ __volatile__("" ::: "memory");
}

static __attribute__((noinline)) void fill(long *a, int n, int k)
{
	for (int i = 0; i < n; i++)
		a[i] = (long)seed * 1000 * (i + 1) - k;
}

static inline __attribute__((always_inline)) void inl(int a, long b)
{
	STAP_PROBE2(tracee, inl, a, b);
	printf("inl %d %ld\n", a, b);
}

/* A hand-written probe pinning register aliases: pt_regs slots, %bh's
 * shift, and sizes that disagree with the alias width. bcc's USDT parser
 * (bpftrace 0.17, tplist) rejects "1@%bh" and then refuses the whole
 * binary: build with -DTRACEE_NO_WIDE to compare with those tools. */
#ifndef TRACEE_NO_WIDE
static __attribute__((noinline)) void wide(void)
{
	__asm__ __volatile__(
		"movabs $0xffffffff80000000, %%rax\n\t"
		"mov $0x9234, %%ebx\n\t"
		"mov $0xffff, %%ecx\n\t"
		"movabs $0x80000000000000f1, %%rdx\n\t"
		STAP_PROBE_ASM(tracee, wide, -4@%%eax 1@%%bh -1@%%bh 2@%%cx -2@%%cx -8@%%eax 8@%%rdx -4@%%rdx -1@%%dl 1@%%dl)
		::: "rax", "rbx", "rcx", "rdx", "memory");
	printf("wide -2147483648 146 -110 65535 -1 -2147483648 9223372036854776049 241 -15 241\n");
}
#else
static void wide(void) {}
#endif

static void run(int k)
{
	int s = seed;
	char c = (char)(-5 - k * s);
	short sh = (short)(-1000 * k - 7 * s);
	int i = -100000 * k - 3 * s;
	long l = -(1L << 40) - k * s;
	unsigned char uc = (unsigned char)(200 + k * s);
	unsigned short us = (unsigned short)(60000 + k * s);
	unsigned int ui = 4000000000u + (unsigned)(k * s);
	unsigned long ul = 0xfffffffffffffff0UL + (unsigned long)(k * s);
	STAP_PROBE8(tracee, ints, c, sh, i, l, uc, us, ui, ul);
	printf("ints %d %d %d %ld %u %u %u %lu\n", c, sh, i, l, uc, us, ui, ul);

	long arr[4];
	fill(arr, 4, k);
	STAP_PROBE3(tracee, stack, arr[k & 3], arr[(k + 1) & 3], arr[1]);
	printf("stack %ld %ld %ld\n", arr[k & 3], arr[(k + 1) & 3], arr[1]);

	STAP_PROBE4(tracee, consts, 42, -7, (unsigned char)200, -1L);
	printf("consts 42 -7 200 -1\n");

	char msg[32];
	snprintf(msg, sizeof msg, "hello-%d", k);
	STAP_PROBE2(tracee, str, msg, k);
	printf("str %s %d\n", msg, k);

	g_long += k;
	STAP_PROBE3(tracee, global, g_long, g_arr[k & 3], g_arr[2]);
	printf("global %ld %d %d\n", g_long, g_arr[k & 3], g_arr[2]);

	inl(k * s, g_long);
	inl(-k * s, arr[0]);
	inl(3 * k, 7);

	wide();
}

int main(void)
{
	char line[64];
	setvbuf(stdout, NULL, _IOLBF, 0);
	while (fgets(line, sizeof line, stdin)) {
		int n = 0;
		if (sscanf(line, "run %d", &n) == 1) {
			for (int k = 0; k < n; k++)
				run(k);
		} else if (strncmp(line, "sem", 3) == 0) {
			if (ENABLED(sem)) {
				printf("sem enabled\n");
				STAP_PROBE1(tracee, sem, 7 * seed);
				printf("sem %d\n", 7 * seed);
			} else {
				printf("sem disabled\n");
			}
		} else if (sscanf(line, "loop %d", &n) == 1) {
			/* A local copy of seed keeps both arguments in
			 * registers at -O2 ("-4@%ebx -4@%ebp" or similar), so
			 * the benchmarks compare 16 bytes of register arguments
			 * with a bare 16-byte ring buffer write, not a
			 * bpf_probe_read_user of seed(%rip). */
			int s = seed;
			struct timespec a, b;
			clock_gettime(CLOCK_MONOTONIC, &a);
			for (int k = 0; k < n; k++)
				STAP_PROBE2(tracee, bench, k, s);
			clock_gettime(CLOCK_MONOTONIC, &b);
			printf("loop %lld\n", (b.tv_sec - a.tv_sec) * 1000000000LL + (b.tv_nsec - a.tv_nsec));
		} else if (sscanf(line, "floop %d", &n) == 1) {
			int s = seed;
			struct timespec a, b;
			clock_gettime(CLOCK_MONOTONIC, &a);
			for (int k = 0; k < n; k++)
				fbench(k, s);
			clock_gettime(CLOCK_MONOTONIC, &b);
			printf("loop %lld\n", (b.tv_sec - a.tv_sec) * 1000000000LL + (b.tv_nsec - a.tv_nsec));
		} else if (strncmp(line, "quit", 4) == 0) {
			break;
		}
		printf("done\n");
	}
	return 0;
}
