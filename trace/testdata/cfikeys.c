// cfikeys.c: a call chain through the C library for the stack key tests
// (TestStacksUnwindCFI), built at test time without frame pointers:
//   gcc -O2 -fomit-frame-pointer -o cfikeys cfikeys.c
// It reads commands on stdin and prints "done" after each:
//   sort  main → a → b → qsort (libc) → cmp; prints "calls N", the
//         number of times cmp ran
// noipa keeps every function a real, separate call; each call's result
// is used after it, so no call becomes a tail jump.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

volatile int sink;
static long calls;

__attribute__((noipa)) int cmp(const void *x, const void *y) {
	int p = *(const int *)x, q = *(const int *)y;
	calls++;
	return (p > q) - (p < q);
}

__attribute__((noipa)) int b(int n) {
	int v[32];
	for (int i = 0; i < n; i++)
		v[i] = (i * 7919) % n;
	qsort(v, n, sizeof *v, cmp);
	return v[0] + 1;
}

__attribute__((noipa)) int a(int n) { return b(n) + 1; }

int main(void) {
	char line[64];
	setvbuf(stdout, NULL, _IOLBF, 0);
	while (fgets(line, sizeof line, stdin)) {
		if (!strncmp(line, "sort", 4)) {
			calls = 0;
			sink += a(32);
			printf("calls %ld\n", calls);
		}
		printf("done\n");
	}
	return 0;
}
