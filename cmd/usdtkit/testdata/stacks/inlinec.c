// inlinec: a known C call chain with two inlined calls, for the stack
// tests. Built with -O2 -g; each line on stdin runs
//   main → outer → mid (always_inline) → inner (static inline) → leaf
// and prints "done". mid and inner have no code of their own: their code
// is in outer, and DWARF records them as inlined calls there. leaf and
// outer stay real calls (noipa), and each call's result is used after it,
// so that no call becomes a tail jump.
#include <stdio.h>
#include <string.h>

volatile int sink;

__attribute__((noipa)) int leaf(int x) {
	sink += x;
	return sink & 1;
}

static inline int inner(int x) { return leaf(x + 1) + 1; }

static inline __attribute__((always_inline)) int mid(int x) { return inner(x * 3) * 2; }

__attribute__((noipa)) int outer(int x) { return mid(x) + 5; }

int main(void) {
	char line[64];
	setvbuf(stdout, NULL, _IOLBF, 0);
	while (fgets(line, sizeof line, stdin)) {
		sink += outer((int)strlen(line));
		printf("done\n");
	}
	return 0;
}
