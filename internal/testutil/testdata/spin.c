/* spin.c: a deterministic target for CPU profiles (profile:hz:N).
 *
 *   spin spin N   main -> outer -> hot spins N iterations, then
 *                 main -> outer -> half spins N/2 of the same loop: hot
 *                 does twice half's work.
 *   spin sys N    main -> outer_sys -> reader calls pread(2) of /dev/zero
 *                 N times: its time is mostly in the kernel.
 *
 * Built by BuildSpin: gcc -O1 -fno-omit-frame-pointer -g -no-pie (-no-pie
 * so that addresses bpftrace prints are the symbols' own). hot and half
 * are the same code at the same alignment, so an iteration costs both
 * the same time; their counter is a stack variable, so they keep a frame
 * (with its frame pointer) as outer and main do.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

volatile unsigned long sink;

#define SPIN(name)                                                       \
	__attribute__((noinline, aligned(64))) void name(unsigned long n) \
	{                                                                \
		volatile unsigned long i;                                \
		for (i = 0; i < n; i++)                                  \
			sink += i;                                       \
	}
SPIN(hot)
SPIN(half)

__attribute__((noinline)) void outer(unsigned long n)
{
	hot(n);
	half(n / 2);
}

__attribute__((noinline)) void reader(int fd, unsigned long n)
{
	char buf[4096];
	for (unsigned long i = 0; i < n; i++)
		if (pread(fd, buf, sizeof buf, 0) < 0)
			exit(1);
}

__attribute__((noinline)) void outer_sys(int fd, unsigned long n)
{
	reader(fd, n);
	sink++;
}

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: spin spin|sys N\n");
		return 2;
	}
	unsigned long n = strtoul(argv[2], NULL, 0);
	if (strcmp(argv[1], "spin") == 0) {
		outer(n);
		return 0;
	}
	int fd = open("/dev/zero", O_RDONLY);
	if (fd < 0)
		return 1;
	outer_sys(fd, n);
	return 0;
}
