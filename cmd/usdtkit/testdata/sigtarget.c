/* sigtarget.c: counts the SIGUSR1 it gets while it calls work(i) for i
 * from 0 to 9, then writes "got N sum S" to the file argv[1] (its stdout
 * is the tracer's). Built by trace_signal_test.go: gcc -O1 -o sigtarget. */
#include <signal.h>
#include <stdio.h>

static volatile sig_atomic_t got;

static void on(int s)
{
	(void)s;
	got++;
}

__attribute__((noinline)) long work(long i)
{
	__asm__ volatile("" ::: "memory");
	return i * 2;
}

int main(int argc, char **argv)
{
	if (argc != 2)
		return 2;
	signal(SIGUSR1, on);
	long s = 0;
	for (long i = 0; i < 10; i++)
		s += work(i);
	FILE *f = fopen(argv[1], "w");
	if (!f)
		return 1;
	fprintf(f, "got %d sum %ld\n", (int)got, s);
	return fclose(f) != 0;
}
