/*
 * agburst: a target of the agent's tests that fires at once and exits.
 * Built at test time:
 *
 *	gcc -O1 -o agburst agburst.c
 *
 * "agburst N" fires the probe agburst:hit N times with arguments 0..N-1
 * as soon as main runs, with no semaphore to wait for, and exits: what a
 * tracer attached after the exec would miss.
 */
#include <stdlib.h>
#include <sys/sdt.h>

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 1;
	for (int i = 0; i < n; i++)
		STAP_PROBE1(agburst, hit, i);
	return 0;
}
