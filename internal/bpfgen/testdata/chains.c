/*
 * chains: USDT probes shaped like Go function tracing, for the end-to-end
 * tests of pointer chains, byte strings and latency keyed by an argument
 * (e2e_chains_test.go). The tests build it at test time:
 *
 *	gcc -O0 -g -o chains chains.c
 *	gcc -O2 -g -o chains chains.c
 *
 * It reads commands from stdin, one per line, and answers each with "done"
 * after the lines below:
 *
 *	chain   fire probe "chain" (s: struct node *) for a list whose counts
 *	        are 1 -> 2 -> -3, and once for a node whose next is NULL;
 *	        print "chain C1 C2 C3" with s->count, s->next->count and
 *	        s->next->next->count of the first
 *	bytes   fire probe "bytes" (p, n) for the (pointer, length) pairs of
 *	        Go strings: "ab\0cd" (5), 40 bytes "0123456789" repeated (40),
 *	        the same pointer with length -1, (NULL, 0), (NULL, 5)
 *	lat     fire "enter" (id 1), sleep 2 ms, "enter" (id 2), "leave" (id
 *	        2), "leave" (id 1): two interleaved calls on one thread, as
 *	        two goroutines on one M
 *	quit    exit
 */
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <sys/sdt.h>

struct node {
	long pad;
	struct node *next;
	int count;
};

static __attribute__((noinline)) void chain(struct node *s)
{
	STAP_PROBE1(chains, chain, s);
	__asm__ __volatile__("" ::: "memory");
}

static __attribute__((noinline)) void bytes(const char *p, long n)
{
	STAP_PROBE2(chains, bytes, p, n);
	__asm__ __volatile__("" ::: "memory");
}

static __attribute__((noinline)) void enter(long id)
{
	STAP_PROBE1(chains, enter, id);
	__asm__ __volatile__("" ::: "memory");
}

static __attribute__((noinline)) void leave(long id)
{
	STAP_PROBE1(chains, leave, id);
	__asm__ __volatile__("" ::: "memory");
}

int main(void)
{
	static struct node n3 = {0, NULL, -3}, n2 = {0, &n3, 2}, n1 = {0, &n2, 1};
	static struct node lone = {0, NULL, 9};
	/* On the stack: a page of .rodata the process never touched is not
	 * mapped in yet, and bpf_probe_read_user cannot fault it in. */
	char nul[] = "ab\0cd";
	char big[41];
	char line[64];

	for (int i = 0; i < 40; i++)
		big[i] = '0' + i % 10;
	big[40] = 0;
	setvbuf(stdout, NULL, _IOLBF, 0);
	while (fgets(line, sizeof line, stdin)) {
		if (strncmp(line, "chain", 5) == 0) {
			chain(&n1);
			chain(&lone);
			printf("chain %d %d %d\n", n1.count, n1.next->count, n1.next->next->count);
		} else if (strncmp(line, "bytes", 5) == 0) {
			bytes(nul, 5);
			bytes(big, 40);
			bytes(big, -1);
			bytes(NULL, 0);
			bytes(NULL, 5);
		} else if (strncmp(line, "lat", 3) == 0) {
			struct timespec ms2 = {0, 2000000};
			enter(1);
			nanosleep(&ms2, NULL);
			enter(2);
			leave(2);
			leave(1);
		} else if (strncmp(line, "quit", 4) == 0) {
			break;
		}
		printf("done\n");
	}
	return 0;
}
