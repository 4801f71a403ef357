/*
 * agdlopen: "agdlopen LIB N" prints "started", waits for a line on stdin,
 * loads LIB (aglib.so) with dlopen, waits until a tracer raises its
 * probe's semaphore (polling it), prints "ready", waits for a line (see
 * agtarget.c), fires aglib:hit N times with 0..N-1, prints "fired" and
 * exits when stdin closes. Built at test time:
 *
 *	gcc -O1 -o agdlopen agdlopen.c -ldl
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	char buf[64];
	if (argc < 3)
		return 2;
	printf("started\n");
	fflush(stdout);
	if (read(0, buf, sizeof buf) <= 0)
		return 1;
	void *h = dlopen(argv[1], RTLD_NOW);
	if (!h) {
		fprintf(stderr, "%s\n", dlerror());
		return 1;
	}
	int (*enabled)(void) = (int (*)(void))dlsym(h, "aglib_enabled");
	void (*fire)(int) = (void (*)(int))dlsym(h, "aglib_fire");
	if (!enabled || !fire)
		return 1;
	while (!enabled())
		usleep(1000);
	printf("ready\n");
	fflush(stdout);
	if (read(0, buf, sizeof buf) <= 0)
		return 1;
	for (int i = 0, n = atoi(argv[2]); i < n; i++)
		fire(i);
	printf("fired\n");
	fflush(stdout);
	while (read(0, buf, sizeof buf) > 0)
		;
	return 0;
}
