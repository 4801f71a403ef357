/*
 * agtarget: the target process of the agent's tests. Built at test time:
 *
 *	gcc -O1 -o agtarget agtarget.c
 *
 * "agtarget N" waits until a tracer raises the semaphore of its probe
 * agentt:hit (polling it), fires the probe N times with arguments 0..N-1,
 * prints "fired", then waits for stdin to close and exits.
 *
 * "agtarget N wait" prints "ready" once the semaphore is raised and fires
 * only after a line on stdin: the kernel raises a semaphore just before it
 * writes the probe's breakpoint, so a hit right after it may be missed;
 * the test says "go" once the tracer has finished attaching.
 */
#define _SDT_HAS_SEMAPHORES 1
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <sys/sdt.h>

__extension__ unsigned short agentt_hit_semaphore
	__attribute__((unused)) __attribute__((section(".probes")));

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 1;
	char buf[64];
	while (!*(volatile unsigned short *)&agentt_hit_semaphore)
		usleep(1000);
	if (argc > 2) {
		printf("ready\n");
		fflush(stdout);
		if (read(0, buf, sizeof buf) <= 0)
			return 1;
	}
	for (int i = 0; i < n; i++)
		STAP_PROBE1(agentt, hit, i);
	printf("fired\n");
	fflush(stdout);
	while (read(0, buf, sizeof buf) > 0)
		;
	return 0;
}
