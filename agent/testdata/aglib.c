/*
 * aglib: a shared library with a USDT probe that agdlopen.c loads with
 * dlopen after it started. Built at test time:
 *
 *	gcc -O1 -shared -fPIC -o aglib.so aglib.c
 */
#define _SDT_HAS_SEMAPHORES 1
#include <sys/sdt.h>

__extension__ unsigned short aglib_hit_semaphore
	__attribute__((unused)) __attribute__((section(".probes")));

int aglib_enabled(void)
{
	return *(volatile unsigned short *)&aglib_hit_semaphore;
}

void aglib_fire(int i)
{
	STAP_PROBE1(aglib, hit, i);
}
