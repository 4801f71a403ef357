// Build: gcc -g -O2 -no-pie -o inline inline.c (the tests build it and
// compare the frames of the printed address with addr2line -f -i).
// On each line of stdin it prints "ret ADDRESS", a return address in
// outer where helper and twice are inlined, then "done".
#include <stdio.h>

static void *ret;

__attribute__((noinline)) void sink(int x) {
	ret = __builtin_return_address(0);
	__asm__ volatile("" : : "r"(x) : "memory");
}

static inline __attribute__((always_inline)) void twice(int x) { sink(x * 2); }
static inline __attribute__((always_inline)) void helper(int x) { twice(x + 1); }

__attribute__((noinline)) void outer(int x) {
	helper(x);
	__asm__ volatile("" ::: "memory");
}

int main(void) {
	char line[256];
	setvbuf(stdout, NULL, _IOLBF, 0);
	while (fgets(line, sizeof line, stdin)) {
		outer(line[0]);
		printf("ret %p\n", ret);
		printf("done\n");
	}
	return 0;
}
