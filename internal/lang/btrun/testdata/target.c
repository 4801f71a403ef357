/* target.c: a deterministic program that btrun's end-to-end test traces
 * with bpftrace and with btrun at once. Built at test time:
 *   gcc -O1 -g -o target target.c
 * It prints "ready", waits for a line on stdin, fires demo:req 100 times
 * (arguments i, a name from names[], a value from -200 to 799) with a call
 * to work(i, name) after each, and for i < 10 demo:sem(i) if its semaphore
 * is raised (a tracer attached it with its reference counter); then it
 * fires demo:done once, prints "done", and exits at the end of stdin.
 * Every probe has a semaphore (_SDT_HAS_SEMAPHORES applies to the whole
 * file); only sem checks its. */
#define _SDT_HAS_SEMAPHORES 1
#include <stdio.h>
#include <string.h>
#include <sys/sdt.h>

#define SEMAPHORE(name) \
	__extension__ unsigned short demo_##name##_semaphore \
	__attribute__((unused)) __attribute__((section(".probes")))
SEMAPHORE(req);
SEMAPHORE(done);
SEMAPHORE(sem);

static const char *names[] = {"alpha", "beta", "gamma", "delta"};

__attribute__((noinline)) long work(long n, const char *s) {
	__asm__ volatile("" ::: "memory");
	return n * 2 + (long)strlen(s);
}

int main(void) {
	char line[64];
	long sink = 0;
	/* Touch the strings so that the probes' reads do not fault. */
	for (int i = 0; i < 4; i++)
		sink += (long)strlen(names[i]);
	printf("ready %ld\n", sink);
	fflush(stdout);
	if (!fgets(line, sizeof line, stdin))
		return 1;
	for (long i = 0; i < 100; i++) {
		const char *name = names[i % 4];
		long v = i * 37 % 1000 - 200;
		DTRACE_PROBE3(demo, req, i, name, v);
		sink += work(i, name);
		if (i < 10 && *(volatile unsigned short *)&demo_sem_semaphore)
			DTRACE_PROBE1(demo, sem, i);
	}
	DTRACE_PROBE1(demo, done, sink);
	printf("done\n");
	fflush(stdout);
	while (fgets(line, sizeof line, stdin))
		;
	return 0;
}
