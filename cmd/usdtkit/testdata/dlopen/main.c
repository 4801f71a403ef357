/* A program that maps its library only after it runs: it dlopens
 * libdlo.so, found through its own DT_RUNPATH, and calls dlo_work 3
 * times. TestTraceCommandLibrary builds it at test time:
 *   gcc -O2 -o DIR/bin/dlmain main.c -Wl,--enable-new-dtags -Wl,-rpath,'$ORIGIN/../lib' -ldl */
#include <dlfcn.h>
#include <stdio.h>

int main(void) {
	void *h = dlopen("libdlo.so", RTLD_NOW);
	if (h == NULL) {
		fprintf(stderr, "dlopen: %s\n", dlerror());
		return 1;
	}
	int (*work)(int) = (int (*)(int))dlsym(h, "dlo_work");
	if (work == NULL) {
		fprintf(stderr, "dlsym: %s\n", dlerror());
		return 1;
	}
	int sum = 0;
	for (int i = 0; i < 3; i++)
		sum += work(i);
	return sum == 12 ? 0 : 1;
}
